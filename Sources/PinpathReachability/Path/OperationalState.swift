/// RFC 2863 operational state (IFLA_OPERSTATE), as `ip link` prints it.
public enum OperationalState: String, Sendable, Equatable {
    case unknown = "UNKNOWN"
    case notPresent = "NOTPRESENT"
    case down = "DOWN"
    case lowerLayerDown = "LOWERLAYERDOWN"
    case testing = "TESTING"
    case dormant = "DORMANT"
    case up = "UP"

    /// Maps the kernel's IF_OPER_* value; values newer than this code read as `unknown`.
    init(kernelValue: UInt8) {
        switch kernelValue {
        case 1: self = .notPresent
        case 2: self = .down
        case 3: self = .lowerLayerDown
        case 4: self = .testing
        case 5: self = .dormant
        case 6: self = .up
        default: self = .unknown
        }
    }
}
