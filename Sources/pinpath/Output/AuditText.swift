import FoundationEssentials
import PinpathAgent
import PinpathHTTP
import PinpathSecurity
import PinpathSupport

/// Renderings of a ``TLSAudit``: a block of text per host for people, one JSON object per line for machines.
enum AuditText {
    /// The text block; hosts after the first are preceded by a blank line. Every line is escaped for the
    /// terminal: the certificates' names and the errors come from the server.
    static func text(_ audit: TLSAudit, first: Bool) -> String {
        var lines = first ? [] : [""]
        if let file = audit.chainFile {
            lines.append(audit.serverName.isEmpty ? "\(file) (no host checked)" : "\(file) (host \(audit.serverName))")
        } else {
            let via = audit.address.map { $0 == audit.endpoint.description ? "" : " via \($0)" } ?? ""
            let name = audit.serverName == audit.endpoint.host ? "" : " (server name \(audit.serverName))"
            lines.append("\(audit.endpoint)\(via)\(name)")
        }
        if let error = audit.connectionError {
            // No certificate, so nothing that looks like a pin: the trap of the openssl pipeline.
            lines.append(field("error", error.message))
            lines += resultLines(audit)
            return UntrustedText.escapedLines(lines)
        }
        if audit.chainFile == nil {
            lines.append(field("tls", "\(audit.protocolVersion ?? "?"), cipher \(audit.cipher ?? "?")"))
            lines.append(field("client cert", clientCertificateText(audit.clientCertificateRequest)))
        }
        let count = audit.servedChain.count
        lines.append("  served chain (\(count) certificate\(count == 1 ? "" : "s")):")
        for (depth, certificate) in audit.servedChain.enumerated() {
            lines.append("    depth \(depth)")
            lines += certificateLines(certificate, at: audit.verifiedAt).map { "    " + $0 }
        }
        if let evaluation = audit.evaluation {
            lines.append("  verified chain:")
            if evaluation.verifiedChain.isEmpty { lines.append("    (none)") }
            // Certificates the server did not send came from the anchors: pinned ones in certificate mode.
            let anchors = evaluation.policy.mode == .certificate ? "pinned certificates" : "trust store"
            for (depth, certificate) in evaluation.verifiedChain.enumerated() {
                let fromStore = audit.servedChain.contains(certificate) ? "" : " (from the \(anchors))"
                lines.append("    \(depth) \(certificate.spkiPin) \(certificate.subject)\(fromStore)")
            }
        }
        let pinnedAnchors = audit.evaluation?.policy.mode == .certificate
        lines.append(field("chain", verdictText(audit.chainVerdict, passed: pinnedAnchors ? "valid (to a pinned certificate)" : "valid")))
        lines.append(field("host", verdictText(audit.hostVerdict, passed: "valid for \(audit.serverName)")))
        // Which rules the path was held to and why; a rule may reject a path whose chain and host verdicts,
        // each judged alone, passed (a name rule).
        if let evaluation = audit.evaluation {
            lines.append(field("profile", evaluation.profileSummary))
            lines.append(field("ocsp", evaluation.stapleSummary))
        }
        if let check = audit.evaluation?.ocspCheck { lines.append(field("revocation", check.summary)) }
        lines += pinLines(audit)
        if let error = audit.evaluationError { lines.append(field("error", error.message)) }
        lines += resultLines(audit)
        return UntrustedText.escapedLines(lines)
    }

    /// The `category` line (any outcome but trusted: the name `request` and the agent give the same failure),
    /// then the `result` line.
    private static func resultLines(_ audit: TLSAudit) -> [String] {
        let result = field("result", "\(audit.outcome) (exit \(audit.outcome.severity))")
        return audit.outcome == .trusted ? [result] : [field("category", category(of: audit).rawValue), result]
    }

    /// `{"category":…,"message":…,"exit_code":N}` for any outcome but trusted (`null` then): the `error` member
    /// every `--json` failure has, its category in pinpath's one vocabulary, beside audit's own `result`.
    static func errorJSON(_ audit: TLSAudit) -> JSONValue {
        guard audit.outcome != .trusted else { return .null }
        let message =
            audit.connectionError?.message ?? audit.evaluationError?.message ?? audit.evaluation?.failure?.message
            ?? audit.outcome.description
        return .object([
            ("category", .string(category(of: audit).rawValue)), ("message", .string(message)),
            ("exit_code", .int(audit.outcome.severity)),
        ])
    }

    /// The category (``FailureCategory``) of an audit's outcome: the one a request to the same server fails with.
    static func category(of audit: TLSAudit) -> FailureCategory {
        switch audit.outcome {
        case .pinMismatch: return .policyRejected
        case .revoked: return .revoked
        case .noHandshake:
            switch audit.connectionError?.code {
            case .dnsFailure?: return .resolveFailed
            case .unreachable?: return .unreachable
            case .timedOut?: return .timedOut
            case .handshakeFailed?, .openSSLFailure?: return .tlsFailed
            default: return .connectFailed
            }
        default: return audit.evaluation?.failure?.isOutsideValidity == true ? .tlsExpired : .tlsInvalid
        }
    }

    /// The audit as one JSON object.
    static func json(_ audit: TLSAudit) -> JSONValue {
        let evaluation = audit.evaluation
        var pins = JSONValue.null
        if let policy = evaluation?.policy, policy.mode != .none {
            let expected = (policy.mode == .certificate ? policy.pinnedCertificates.map(\.spkiPin) : Array(policy.pins))
                .map(\.description).sorted()
            pins = .object([
                ("mode", .string(policy.mode.rawValue)),
                ("expected", .array(expected.map(JSONValue.string))),
                (
                    "matched",
                    .array(
                        audit.pinMatches.map { match in
                            .object([
                                ("depth", .int(match.depth)), ("pin", .string(match.pin.description)), ("subject", .string(match.subject)),
                            ])
                        })
                ),
            ])
        }
        // Typed apart: the object literal below is at the limit of what the type checker solves in time.
        let staple: JSONValue = evaluation?.ocspStaple.map(stapleJSON) ?? .null
        let ocsp: JSONValue = evaluation?.ocspCheck.map(ocspCheckJSON) ?? .null
        let object: JSONValue = .object([
            ("host", audit.serverName.isEmpty && audit.chainFile != nil ? .null : .string(audit.endpoint.host)),
            ("port", audit.chainFile == nil ? .int(audit.endpoint.port) : .null),
            ("server_name", audit.serverName.isEmpty && audit.chainFile != nil ? .null : .string(audit.serverName)),
            ("file", .string(audit.chainFile)),
            ("profile", .string(evaluation?.appliedProfile?.profile.name)),
            ("profile_reason", .string(evaluation?.appliedProfile?.reason)),
            ("profile_selection", .string(evaluation?.policy.profile.description)),
            ("address", .string(audit.address)),
            ("result", .string(audit.outcome.description)),
            ("exit_code", .int(audit.outcome.severity)),
            ("error", errorJSON(audit)),
            ("verified_at", .string(rfc3339(audit.verifiedAt))),
            ("tls_version", .string(audit.protocolVersion)),
            ("cipher", .string(audit.cipher)),
            (
                "client_certificate",
                audit.protocolVersion == nil
                    ? .null
                    : .object([
                        ("requested", .bool(audit.clientCertificateRequest != nil)),
                        ("authorities", .array((audit.clientCertificateRequest?.authorities ?? []).map(JSONValue.string))),
                        ("sent", .bool(audit.clientCertificateRequest?.certificateSent ?? false)),
                    ])
            ),
            (
                "served_chain",
                .array(
                    audit.servedChain.enumerated().map { depth, certificate in
                        certificateJSON(certificate, depth: depth, at: audit.verifiedAt)
                    })
            ),
            (
                "verified_chain",
                .array(
                    (evaluation?.verifiedChain ?? []).enumerated().map { depth, certificate in
                        .object([
                            ("depth", .int(depth)), ("subject", .string(certificate.subject)),
                            ("pin", .string(certificate.spkiPin.description)),
                            ("from_trust_store", .bool(!audit.servedChain.contains(certificate))),
                        ])
                    })
            ),
            ("chain", verdictJSON(audit.chainVerdict)),
            ("host_check", verdictJSON(audit.hostVerdict)),
            ("pins", pins),
            ("ocsp_staple", staple),
            ("ocsp", ocsp),
            (
                "failure",
                evaluation?.failure.map { failure in
                    .object([
                        ("reason", .string(failure.reason.description)), ("message", .string(failure.message)),
                        ("rule", violationJSON(failure.violation)),
                    ])
                } ?? .null
            ),
        ])
        return object
    }

    // MARK: - Pieces

    private static func certificateLines(_ certificate: Certificate, at time: Date) -> [String] {
        let sans = certificate.subjectAlternativeNames
        return [
            field("subject", certificate.subject),
            field("issuer", certificate.issuer),
            field("SANs", sans.isEmpty ? "none" : sans.joined(separator: ", ")),
            field(
                "validity", "\(rfc3339(certificate.notBefore)) to \(rfc3339(certificate.notAfter)) (\(validityNote(certificate, at: time)))"
            ),
            field("key", certificate.keyType),
            field("signature", certificate.signatureAlgorithm),
            field("pin", certificate.spkiPin.description),
            field("SHA-256", certificate.sha256Fingerprint),
        ]
    }

    private static func certificateJSON(_ certificate: Certificate, depth: Int, at time: Date) -> JSONValue {
        .object([
            ("depth", .int(depth)),
            ("subject", .string(certificate.subject)),
            ("issuer", .string(certificate.issuer)),
            ("sans", .array(certificate.subjectAlternativeNames.map(JSONValue.string))),
            ("not_before", .string(rfc3339(certificate.notBefore))),
            ("not_after", .string(rfc3339(certificate.notAfter))),
            ("days_left", .int(certificate.daysUntilExpiry(from: time))),
            ("key", .string(certificate.keyType)),
            ("signature_algorithm", .string(certificate.signatureAlgorithm)),
            ("pin", .string(certificate.spkiPin.description)),
            ("sha256_fingerprint", .string(certificate.sha256Fingerprint)),
        ])
    }

    private static func validityNote(_ certificate: Certificate, at time: Date) -> String {
        if certificate.notBefore > time { return "not valid yet" }
        let days = certificate.daysUntilExpiry(from: time)
        if days < 0 { return "expired \(-days) day\(-days == 1 ? "" : "s") ago" }
        return "\(days) day\(days == 1 ? "" : "s") left"
    }

    /// `pins` lines: which pin matched at which depth, or OkHttp's failure message, or why pins were not checked.
    private static func pinLines(_ audit: TLSAudit) -> [String] {
        guard let evaluation = audit.evaluation else { return [] }
        let lines = evaluation.pinsSummary
        // OkHttp's message keeps its own indentation under the field; matches line up as the field's values.
        if evaluation.failure?.reason == .pinMismatch {
            return lines.first.map { [field("pins", $0)] + lines.dropFirst().map { "  " + $0 } } ?? [field("pins", "")]
        }
        return lines.enumerated().map { index, line in field(index == 0 ? "pins" : "", line) }
    }

    private static func ocspCheckJSON(_ check: OCSPCheck) -> JSONValue {
        .object([
            ("status", .string(check.status.description)),
            ("source", .string(check.stapled ? "staple" : "responder")),
            ("responder_url", .string(check.responderURL?.absoluteString)),
            ("next_update", .string(check.nextUpdate.map(rfc3339))),
            ("soft_failed", .bool(check.softFailed)),
            ("detail", .string(check.detail)),
        ])
    }

    private static func stapleJSON(_ staple: OCSPStaple) -> JSONValue {
        .object([
            ("status", .string(staple.status.description)),
            ("responder", .string(staple.responder)),
            ("produced_at", .string(staple.producedAt.map(rfc3339))),
            ("this_update", .string(staple.thisUpdate.map(rfc3339))),
            ("next_update", .string(staple.nextUpdate.map(rfc3339))),
            ("revoked_at", .string(staple.revokedAt.map(rfc3339))),
            ("problem", .string(staple.problem)),
        ])
    }

    private static func verdictText(_ verdict: TrustEvaluation.Verdict?, passed: String = "valid") -> String {
        verdict?.summary(passed: passed) ?? "not checked"
    }

    private static func verdictJSON(_ verdict: TrustEvaluation.Verdict?) -> JSONValue {
        switch verdict {
        case .none: return .null
        case .some(.trusted):
            return .object([("valid", true), ("verify_error", .null), ("depth", .null), ("message", .null), ("rule", .null)])
        case .some(.rejected(let failure)):
            return .object([
                ("valid", false), ("verify_error", failure.verifyError.map { .int(Int($0)) } ?? .null),
                ("depth", failure.depth.map(JSONValue.int) ?? .null), ("message", .string(failure.message)),
                ("rule", violationJSON(failure.violation)),
            ])
        }
    }

    /// The profile rule a path broke and the certificate that broke it, or `null`.
    private static func violationJSON(_ violation: ProfileViolation?) -> JSONValue {
        guard let violation else { return .null }
        return .object([
            ("name", .string(violation.rule)), ("depth", .int(violation.depth)), ("subject", .string(violation.subject)),
            ("message", .string(violation.message)), ("accepted_by_rfc5280", .bool(violation.acceptedByRFC5280)),
        ])
    }

    /// Whether the server asked for a client certificate, the authorities it named, and whether one was sent.
    private static func clientCertificateText(_ request: ClientCertificateRequest?) -> String {
        guard let request else { return "not requested" }
        let authorities =
            request.authorities.isEmpty ? "naming no CA" : "naming \(request.authorities.map { "\"\($0)\"" }.joined(separator: ", "))"
        return "requested, \(authorities); \(request.certificateSent ? "sent" : "none sent (give --cert and --key)")"
    }

    private static func field(_ name: String, _ value: String) -> String {
        "  " + name + String(repeating: " ", count: max(1, 11 - name.count)) + value
    }

    private static func rfc3339(_ date: Date) -> String { date.formatted(.iso8601) }
}
