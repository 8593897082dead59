import FoundationEssentials
import PinpathHTTP
import PinpathYAML

/// `connectivity:`: the check that tells a working internet from a captive portal or a dead upstream
/// (NetworkManager's `[connectivity]`). Off unless a `url` is given: the check needs a server whose answer
/// is known, and pinpath ships none.
package struct ConnectivityConfiguration: Sendable, Equatable {
    /// What is sent and what answer is `full`.
    package let check: ConnectivityCheck
    /// How often it is checked besides every path change. Default 300 s, as NetworkManager.
    package let interval: Duration

    static let keys = ["url", "expect", "interval", "timeout"]
    static let expectKeys = ["status", "body"]
    static let defaultInterval = Duration.seconds(300)
    static let defaultTimeout = Duration.seconds(10)

}

extension ConnectivityConfiguration: ConfigurationReadable {
    /// Reads the block; `nil` (with the problems recorded) when it cannot be used. An https check is held to the
    /// configured policies whose `hosts` match its host, as a request there would be (a report collector is too).
    init?(reading node: Node, at keyPath: String, in policies: [PolicyConfiguration], _ decoder: ConfigurationDecoder) {
        guard let fields = decoder.mapping(node, keyPath, known: Self.keys) else { return nil }
        guard let urlNode = decoder.required(fields, "url", "a http:// or https:// URL whose answer is known (a 204)") else {
            return nil
        }
        let url = decoder.url(urlNode, fields.path("url"))
        if let url, !(ServiceKind(scheme: url.scheme)?.isHTTP ?? false) {
            decoder.report(
                .invalidValue, at: urlNode, fields.path("url"),
                "\(ConfigurationProblem.quoted(DisplayURL.redacting(url.absoluteString))) is not http:// or https://; the check is an HTTP request"
            )
        }
        var status = 204
        var body: String?
        if let expect = fields["expect"], let expectFields = decoder.mapping(expect, fields.path("expect"), known: Self.expectKeys) {
            if let node = expectFields["status"] {
                let keyPath = expectFields.path("status")
                if let code = decoder.integer(node, keyPath, in: 100...599) {
                    if (300...399).contains(code) {
                        decoder.report(
                            .invalidValue, at: node, keyPath,
                            "\(code) is a redirect, which is what a captive portal answers; expect 204 or a 200 with a body")
                    }
                    status = code
                }
            }
            body = expectFields["body"].flatMap { decoder.string($0, expectFields.path("body"), "text the body contains") }
        }
        let interval = fields["interval"].flatMap { decoder.duration($0, fields.path("interval"), atLeast: .seconds(1)) }
        let timeout = fields["timeout"].flatMap { decoder.duration($0, fields.path("timeout"), atLeast: .milliseconds(1)) }
        let effectiveInterval = interval ?? Self.defaultInterval
        let effectiveTimeout = timeout ?? Self.defaultTimeout
        if effectiveTimeout >= effectiveInterval, fields["interval"] != nil || fields["timeout"] != nil {
            decoder.report(
                .invalidValue, at: fields["timeout"] ?? fields["interval"], fields.path(fields["timeout"] != nil ? "timeout" : "interval"),
                "timeout \(DurationSyntax.format(effectiveTimeout)) must be shorter than interval \(DurationSyntax.format(effectiveInterval))"
            )
        }
        guard let url else { return nil }
        var security: AppliedPolicy?
        if url.scheme?.lowercased() == "https", let host = url.host {
            do throws(AppliedPolicy.Conflict) {
                security = try AppliedPolicy(host: host, named: nil, among: policies)
            } catch {
                // Two host-matched policies that cannot combine: reported once, at the policies themselves.
                return nil
            }
        }
        self.init(
            check: ConnectivityCheck(
                url: url, expectedStatus: status, expectedBody: body, timeout: effectiveTimeout, securityPolicy: security?.policy,
                trustStore: security?.trustStore),
            interval: effectiveInterval)
    }
}
