import FoundationEssentials
import PinpathHTTP
import PinpathReachability
import PinpathSecurity
import PinpathSupport

/// The plain-text log of one target probe (`&debug=true`): the module and target, the timeout, the addresses
/// resolved and the one connected to, the admission's and the reachability gate's decisions, the chains served
/// and verified (subject, issuer, notAfter, SPKI pin), each rule's verdict (chain, host, profile, pins, OCSP,
/// revocation, the client certificate) in `pinpath verify`'s words, the policy's verdict, and the failure's
/// category and message. Every text from outside (names, subjects, messages) is escaped (``UntrustedText``); the target is
/// shown as events show URLs (no credentials, no query), and no header value is written.
struct TargetProbeLog {
    let enabled: Bool
    private(set) var lines: [String]?

    init(enabled: Bool) {
        self.enabled = enabled
        lines = enabled ? [] : nil
    }

    private mutating func add(_ line: String) {
        if enabled { lines?.append(line) }
    }

    mutating func started(_ module: ModuleConfiguration, _ endpoint: EndpointConfiguration, moduleTimeout: Duration, deadline: Duration?) {
        guard enabled else { return }
        add("module \(escaped(module.name)): kind \(endpoint.kind.rawValue)\(module.kind == nil ? " (from the target's scheme)" : "")")
        add("target \(escaped(DisplayURL.redacting(endpoint.url.absoluteString)))")
        let deadlineText = deadline.map { ", the scraper's deadline \(DurationSyntax.format($0))" } ?? ", no scraper deadline"
        add("timeout \(DurationSyntax.format(endpoint.timeout)) (the module's \(DurationSyntax.format(moduleTimeout))\(deadlineText))")
        add("proxy \(escaped(endpoint.proxy.summary(for: endpoint.url)))")
        add("policy \(endpoint.security.map { $0.names.map(escaped).joined(separator: " + ") } ?? "none (chain and host name verified)")")
    }

    mutating func admission(_ decision: TargetAdmission.Decision, took: Duration) {
        guard enabled else { return }
        switch decision {
        case .admitted(let address, let resolved):
            if !resolved.isEmpty {
                add("resolved \(resolved.map(\.description).joined(separator: ", ")) in \(milliseconds(took)) ms")
            }
            add(
                address.map { "admitted: connecting to \($0) only (later DNS answers are not used)" }
                    ?? "admitted: through the proxy, which connects")
        case .refused(let reason):
            add("refused: \(escaped(reason)); nothing was connected to")
        case .unresolved(let reason):
            add("not resolved: \(escaped(reason)); nothing was connected to")
        }
    }

    mutating func finished(_ result: ProbeResult, _ endpoint: EndpointConfiguration) {
        guard enabled else { return }
        if let reachability = result.reachability {
            add(
                "reachability gate: refused (\(reachability.reason?.rawValue ?? reachability.status.rawValue)); no connection was attempted"
            )
        } else if result.errorCategory != .resolveFailed {
            add("reachability gate: admitted")
        }
        if let remote = result.remoteAddress { add("connected to \(escaped(remote))") }
        if let timings = result.timings {
            add(
                "phases (ms) \(timings.phasesMillisecondsJSON(of: result.kind).encoded()), total \(timings.totalMillisecondsJSON.encoded())"
            )
        }
        if let version = result.tlsVersion { add("tls \(escaped(version))") }
        if let evaluation = result.evaluation {
            chain("served chain", evaluation.servedChain)
            chain("verified chain", evaluation.verifiedChain)
            rules(evaluation, endpoint)
            if let failure = evaluation.failure {
                // The whole account (OkHttp's shape for pins: each pin and subject, then the pins expected) is the
                // failing rule's, above; the decision names its first line.
                let summary = failure.message.split(separator: "\n").first.map(String.init) ?? ""
                add("policy: \(evaluation.allowsConnection ? "report-only failure" : "rejected"): \(escaped(summary))")
            } else {
                add("policy: trusted")
            }
        }
        add("outcome \(result.outcome.rawValue)\(result.errorCategory.map { ", category \($0.rawValue)" } ?? "")")
        if let message = result.message { add("message \(escaped(message))") }
    }

    /// One line per rule of the evaluation with its verdict, in `pinpath verify`'s words (``TrustEvaluation``'s
    /// summaries). The handshake's evaluation stops at its first failure: the chain and the host are judged in
    /// one OpenSSL verification, so when one of them failed the other reads "not checked" (verify, which runs
    /// each alone, can say more).
    private mutating func rules(_ evaluation: TrustEvaluation, _ endpoint: EndpointConfiguration) {
        let host = evaluation.host
        let chain: TrustEvaluation.Verdict?
        let hostName: TrustEvaluation.Verdict?
        switch evaluation.failure {
        case .none: (chain, hostName) = (.trusted, .trusted)
        case .some(let failure) where failure.reason == .hostMismatch: (chain, hostName) = (nil, .rejected(failure))
        case .some: (chain, hostName) = evaluation.chainValidated ? (.trusted, .trusted) : (evaluation.verdict, nil)
        }
        let anchors = evaluation.policy.mode == .certificate ? "valid (to a pinned certificate)" : "valid"
        rule("chain", [chain?.summary(passed: anchors) ?? "not checked"])
        rule("host", [hostName?.summary(passed: "valid for \(host)") ?? "not checked"])
        rule("profile", [evaluation.profileSummary])
        if !evaluation.pinsSummary.isEmpty { rule("pins", evaluation.pinsSummary) }
        rule("ocsp", [evaluation.stapleSummary])
        if let check = evaluation.ocspCheck { rule("revocation", [check.summary]) }
        if let client = endpoint.clientCertificate {
            add("client certificate: \(escaped(client.certificate)) (sent when the server asks for one)")
        }
    }

    /// `rule NAME: ` and the verdict's first line; its other lines (a message of several lines) indented below.
    private mutating func rule(_ name: String, _ verdict: [String]) {
        let lines = verdict.flatMap { $0.split(separator: "\n", omittingEmptySubsequences: false) }.map { escaped(String($0)) }
        add("rule \(name): \(lines.first ?? "")")
        for line in lines.dropFirst() { add("  \(line)") }
    }

    private mutating func chain(_ title: String, _ certificates: [Certificate]) {
        add("\(title): \(certificates.isEmpty ? "none" : "\(certificates.count) certificates")")
        for (depth, certificate) in certificates.prefix(AgentEvents.servedChainLimit).enumerated() {
            add(
                """
                  \(depth) subject \(escaped(certificate.subject)); issuer \(escaped(certificate.issuer)); notAfter \
                \(certificate.notAfter.formatted(.iso8601)); \(certificate.spkiPin)
                """)
        }
    }

    private func escaped(_ text: String) -> String { UntrustedText.escaped(text) }

    private func milliseconds(_ duration: Duration) -> String {
        "\((duration / .microseconds(100)).rounded() / 10)"
    }
}
