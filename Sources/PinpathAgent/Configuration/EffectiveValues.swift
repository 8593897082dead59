import FoundationEssentials
import PinpathHTTP
import PinpathSupport

extension EndpointConfiguration {
    /// Every key of the endpoint with the value a probe uses, after `defaults:` and the built-in defaults, as
    /// `pinpath check-config --effective` shows them; in the order of the configuration reference.
    ///
    /// Secrets stay out: a secret header value (from `${NAME}`, or a credential header) reads `[redacted]` with the
    /// variables it came from, the client key's password is only said to be set, and URLs lose their credentials.
    public var effectiveValues: [(key: String, value: JSONValue)] {
        var values: [(key: String, value: JSONValue)] = [
            ("name", .string(name)), ("url", .string(DisplayURL.redacting(url.absoluteString))), ("kind", .string(kind.rawValue)),
        ]
        if kind.isHTTP {
            values.append(("method", .string(method.rawValue)))
            values.append(("headers", .object(headers.map { ($0.name, JSONValue.string(Self.shown($0.value))) })))
            values.append(("body", body.map { JSONValue.string("\($0.count) bytes") } ?? .null))
            values.append(("follow_redirects", .bool(followRedirects)))
        }
        var expectation: [(String, JSONValue)] = []
        if kind.isHTTP {
            expectation.append(("status", .string(expect.statusDescription)))
            if let text = expect.bodyContains { expectation.append(("body_contains", .string(text))) }
            if let pattern = expect.bodyMatches { expectation.append(("body_matches", .string(pattern.source))) }
            for header in expect.headers { expectation.append(("headers.\(header.name)", .string(header.requirement))) }
        }
        if let banner = expect.banner { expectation.append(("banner", .string(banner))) }
        if let limit = expect.maxDuration { expectation.append(("max_duration", .string(DurationSyntax.format(limit)))) }
        values.append(("expect", .object(expectation)))
        if let serverName { values.append(("servername", .string(serverName))) }
        if let address { values.append(("address", .string(address.description))) }
        if let send { values.append(("send", .string(send))) }
        if let clientCertificate {
            values.append(("client_certificate", .string(clientCertificate.certificate)))
            values.append(("client_key", .string(clientCertificate.key)))
            values.append(("client_key_password", clientCertificate.password == nil ? .null : .string("[redacted]")))
        }
        values += [
            ("interval", .string(DurationSyntax.format(interval))), ("timeout", .string(DurationSyntax.format(timeout))),
            ("policy", .string(policyName)), ("policies", .array((security?.names ?? []).map(JSONValue.string))),
            ("ip_family", .string(ipFamily.rawValue)), ("failure_threshold", .int(failureThreshold)),
            ("success_threshold", .int(successThreshold)),
            ("cert_expiry_warning", .array(certExpiryWarnings.map { .string(DurationSyntax.format($0)) })),
            ("proxy", .string(proxy.summary(for: url))),
        ]
        if !withheldDefaults.isEmpty { values.append(("withheld_defaults", .array(withheldDefaults.map(JSONValue.string)))) }
        return values
    }

    /// A header value as it may be shown: secret ones redacted, naming the variables they came from.
    private static func shown(_ value: RedactableValue) -> String {
        guard value.isSecret, !value.variables.isEmpty else { return value.description }
        return "\(value.description) (from ${\(value.variables.joined(separator: "}, ${"))})"
    }
}
