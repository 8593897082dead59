import PinpathSecurity
import PinpathTestSupport

@testable import PinpathHTTP

extension TestPKI {
    /// A session trusting this PKI's store; with `pins`, a policy for 127.0.0.1 pinning those certificates
    /// (public_key, no backup pin required).
    func loopbackSession(pins: [String] = []) throws -> Session {
        var configuration = Session.Configuration(trustStore: try trustStore())
        if !pins.isEmpty {
            let policy = try SecurityPolicy(mode: .publicKey, pins: try chain(pins).map(\.spkiPin), requiresBackupPin: false)
            configuration.policies = HostPolicySet([HostPolicy(patterns: [try HostPattern(parsing: "127.0.0.1")], policy: policy)])
        }
        return try Session(configuration)
    }
}
