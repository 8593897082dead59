import FoundationEssentials
import PinpathHTTP
import PinpathReachability
import Testing

/// The connectivity verdict as pure logic: an answer or an error in, NetworkManager's state out.
@Suite("Connectivity verdict")
struct ConnectivityVerdictTests {
    static let check = ConnectivityCheck(url: URL(string: "http://192.0.2.10/generate_204")!)

    static func response(_ status: Int, body: String = "", headers: HeaderFields = HeaderFields()) -> SessionResponse {
        SessionResponse(url: check.url, statusCode: status, headers: headers, body: Array(body.utf8))
    }

    @Test("204 with an empty body is full; the default expectation refuses a 204 with a body")
    func expectedAnswer() {
        #expect(Self.check.verdict(on: Self.response(204)).state == .full)
        let withBody = Self.check.verdict(on: Self.response(204, body: "<html>login</html>"))
        #expect(withBody.state == .portal)
        #expect(withBody.reason.contains("expected none"))
    }

    @Test("Another status is portal, naming both statuses", arguments: [200, 404, 500, 511])
    func otherStatus(status: Int) {
        let verdict = Self.check.verdict(on: Self.response(status))
        #expect(verdict.state == .portal)
        #expect(verdict.reason == "status \(status), expected 204")
    }

    @Test("A redirect is portal; the reason names the Location's host, never its query", arguments: [301, 302, 303, 307, 308])
    func redirect(status: Int) {
        let headers: HeaderFields = ["Location": "http://portal.example/login?token=s3cret&mac=aa:bb"]
        let verdict = Self.check.verdict(on: Self.response(status, headers: headers))
        #expect(verdict.state == .portal)
        #expect(verdict.reason == "redirected (\(status)) to portal.example")
        #expect(!verdict.reason.contains("s3cret"))
    }

    @Test("A relative Location names the check's own host; none at all says so")
    func relativeRedirect() {
        let relative = Self.check.verdict(on: Self.response(302, headers: ["Location": "/login?t=1"]))
        #expect(relative.reason == "redirected (302) to 192.0.2.10")
        #expect(Self.check.verdict(on: Self.response(302)).reason == "redirected (302) without a Location")
    }

    @Test("With an expected body, a 200 must contain it")
    func expectedBody() {
        let check = ConnectivityCheck(url: Self.check.url, expectedStatus: 200, expectedBody: "NetworkManager is online")
        #expect(check.verdict(on: Self.response(200, body: "NetworkManager is online\n")).state == .full)
        let other = check.verdict(on: Self.response(200, body: "<html>Welcome to the hotel</html>"))
        #expect(other.state == .portal)
        #expect(other.reason == "the body does not contain \"NetworkManager is online\"")
        // With status 200 and no body expectation, any body is fine.
        #expect(ConnectivityCheck(url: Self.check.url, expectedStatus: 200).verdict(on: Self.response(200, body: "x")).state == .full)
    }

    @Test(
        """
        Errors: no answer is limited, a handshake cut off before any certificate (tls_failed) too; a certificate the policy \
        refuses is intercepted (never portal); the gate's refusal none
        """,
        arguments: [
            (HTTPError.Code.connectFailed, ConnectivityState.limited), (.resolveFailed, .limited), (.timedOut, .limited),
            (.protocolError, .limited), (.tlsInvalid, .intercepted), (.tlsExpired, .intercepted), (.tlsFailed, .limited),
            (.policyRejected, .intercepted),
            (.unreachable, .none),
        ])
    func errors(code: HTTPError.Code, state: ConnectivityState) {
        let https = ConnectivityCheck(url: URL(string: "https://192.0.2.10/generate_204")!)
        let verdict = https.verdict(on: HTTPError(code, "GET https://192.0.2.10/generate_204: failed"))
        #expect(verdict.state == state)
        if state != .none { #expect(verdict.reason.hasPrefix("\(code): ")) }
    }

    @Test(
        "Issue 25 (round 2): a reset or an end of stream in the handshake is limited with the TLS error as its reason, not intercepted",
        arguments: [
            "OpenSSL SSL_connect: Connection reset by peer in connection to 127.0.0.1:9601",
            "OpenSSL SSL_connect: SSL_ERROR_SYSCALL in connection to 127.0.0.1:9601",
        ])
    func cutOffHandshake(detail: String) {
        let https = ConnectivityCheck(url: URL(string: "https://127.0.0.1:9601/")!)
        let error = HTTPError(.tlsFailed, "GET https://127.0.0.1:9601/: \(detail)", curlCode: 35)
        let verdict = https.verdict(on: error)
        #expect(verdict == ConnectivityVerdict(state: .limited, reason: "tls_failed: GET https://127.0.0.1:9601/: \(detail)"))
    }

    @Test("The gate's refusal keeps the kernel's reason")
    func notReachableReason() {
        let verdict = TargetReachability(
            target: "192.0.2.10", status: .unreachable, interfaceName: nil, address: nil, reason: .blackholeRoute)
        let error = HTTPError(.unreachable, "not reachable", reachability: verdict)
        #expect(Self.check.verdict(on: error) == ConnectivityVerdict(state: .none, reason: "blackhole_route"))
        #expect(ConnectivityCheck.withoutPath == ConnectivityVerdict(state: .none, reason: "no_route"))
    }
}
