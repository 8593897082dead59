import COpenSSL
import Glibc
import PinpathSupport

/// The host-name part of a verification: what OpenSSL is told to match, and which profile rule explains a
/// refusal. It is not a separate pass: OpenSSL checks the host inside the chain's own run, and the order of
/// its checks (the host before dates and signatures) is the order failures are reported in.
enum HostNameCheck {
    /// Sets the host OpenSSL checks in the same `X509_verify_cert` run as the chain, so that a wrong host is
    /// reported before the dates and signatures OpenSSL checks later. Wraps `X509_VERIFY_PARAM_set1_host` (no
    /// partial wildcards) and `X509_VERIFY_PARAM_set1_ip_asc`. Under `webpki` the subject's commonName is never
    /// taken for a host name (`X509_CHECK_FLAG_NEVER_CHECK_SUBJECT`); `rfc5280` keeps OpenSSL's fallback to it
    /// for a leaf without a DNS SAN (RFC 6125 §6.4.4).
    static func configure(_ host: String, on parameters: OpaquePointer, profile: VerificationProfile) throws {
        var name = URLHost.withoutBrackets(host)
        if isIPAddress(name) {
            guard X509_VERIFY_PARAM_set1_ip_asc(parameters, name) == 1 else {
                throw SecurityError.openSSL(.invalidInput, "\"\(host)\" is not an IP address OpenSSL accepts")
            }
            return
        }
        if name.hasSuffix(".") { name.removeLast() }  // certificates name hosts without the root's dot
        let neverSubject = profile == .webpki ? UInt32(X509_CHECK_FLAG_NEVER_CHECK_SUBJECT) : 0
        X509_VERIFY_PARAM_set_hostflags(parameters, UInt32(X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS) | neverSubject)
        guard !name.isEmpty, X509_VERIFY_PARAM_set1_host(parameters, name, 0) == 1 else {
            throw SecurityError.openSSL(.invalidInput, "\"\(host)\" is not a host name OpenSSL accepts")
        }
    }

    /// The violation of `webpki.san_required` when that alone made the host check fail: the leaf has no SAN and
    /// OpenSSL's commonName fallback, which the `webpki` profile turns off, would have matched `host`. Wraps
    /// `X509_check_host`.
    static func commonNameFallbackRefused(
        leaf: Certificate, host: String, profile: VerificationProfile
    ) -> ProfileViolation? {
        let rule = SubjectAlternativeNameRequired()
        guard profile.rules.contains(where: { $0.name == rule.name }), !isIPAddress(host),
            X509_check_host(leaf.x509, host, 0, UInt32(X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS), nil) == 1,
            case .failsToMeetRule(var violation) = Self.evaluate(rule, onLeafAlone: leaf, host: host)
        else { return nil }
        violation.acceptedByRFC5280 = true
        return violation
    }

    /// Whether `leaf` is for `host` as ``configure(_:on:profile:)`` has OpenSSL check it, on its own: for a run
    /// that stopped before OpenSSL got to the host. Wraps `X509_check_host` and `X509_check_ip_asc`.
    static func matches(_ leaf: Certificate, host: String, profile: VerificationProfile) -> Bool {
        let name = bare(host)
        if isIPAddress(name) { return X509_check_ip_asc(leaf.x509, name, 0) == 1 }
        let neverSubject = profile == .webpki ? UInt32(X509_CHECK_FLAG_NEVER_CHECK_SUBJECT) : 0
        return !name.isEmpty
            && X509_check_host(leaf.x509, name, 0, UInt32(X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS) | neverSubject, nil) == 1
    }

    private static func evaluate(
        _ rule: SubjectAlternativeNameRequired, onLeafAlone leaf: Certificate, host: String
    ) -> RuleResult<ProfileViolation> {
        var path = VerifiedPath(chain: [leaf], servedCount: 1, endsAtAnchor: false, host: host, maximumDepth: nil)
        return rule.evaluate(&path)
    }

    /// A host as certificates name it: no IPv6 brackets, no root's dot.
    static func bare(_ host: String) -> String {
        var name = URLHost.withoutBrackets(host)
        if name.hasSuffix(".") { name.removeLast() }
        return name
    }

    /// Whether `text` is an IPv4 or IPv6 address (no brackets). Wraps `inet_pton`.
    static func isIPAddress(_ text: String) -> Bool {
        var buffer = [UInt8](repeating: 0, count: 16)
        return inet_pton(AF_INET, text, &buffer) == 1 || inet_pton(AF_INET6, text, &buffer) == 1
    }
}
