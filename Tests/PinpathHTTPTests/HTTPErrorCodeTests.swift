import PinpathHTTP
import PinpathReachability
import PinpathSecurity
import PinpathSupport
import Testing

/// `HTTPError.Code` is an `ErrorCode` like every layer's code, so a caller that handles any layer's errors
/// branches on codes and writes their names the same way.
@Suite("HTTPError codes")
struct HTTPErrorCodeTests {
    @Test("HTTPError.Code is an ErrorCode: its name is the one events, metrics and JSON write, and its description")
    func httpCodeIsAnErrorCode() {
        let codes: [any ErrorCode] = [HTTPError.Code.tlsInvalid, SecurityError.Code.invalidPolicy, ReachabilityError.Code.notRunning]
        #expect(codes.map(\.name) == ["tls_invalid", "invalid_policy", "not_running"])
        for code in HTTPError.Code.allCases {
            #expect(code.name == code.rawValue && code.description == code.rawValue)
        }
    }
}
