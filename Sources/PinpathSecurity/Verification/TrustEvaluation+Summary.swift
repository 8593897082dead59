import FoundationEssentials

// The words each rule's verdict is written in, for people: `pinpath verify` lays them out as its fields, the
// `/probe` debug log as one line per rule. One wording, so the two never say the same verdict differently.

extension TrustEvaluation.Verdict {
    /// `passed` when trusted (`valid`, `valid for api.example.com`), else `INVALID: ` and the failure's message.
    package func summary(passed: String = "valid") -> String {
        switch self {
        case .trusted: return passed
        case .rejected(let failure): return "INVALID: \(failure.message)"
        }
    }
}

extension TrustEvaluation {
    /// The certificates of the verified chain that satisfy the pins: by public key in `public_key` mode, by
    /// the whole certificate in `certificate` mode. Empty without pins, or when the chain did not verify.
    public var pinMatches: [TLSAudit.PinMatch] {
        guard policy.mode != .none else { return [] }
        return verifiedChain.enumerated().compactMap { depth, certificate in
            let matches =
                policy.mode == .certificate
                ? policy.pinnedCertificates.contains(certificate) : policy.pins.contains(certificate.spkiPin)
            return matches ? TLSAudit.PinMatch(depth: depth, pin: certificate.spkiPin, subject: certificate.subject) : nil
        }
    }

    /// The pins' verdict, one line each: which pin matched at which depth, or OkHttp's failure message (each
    /// certificate's pin and subject, then the pins expected), or why the pins were not checked. Empty without pins.
    package var pinsSummary: [String] {
        guard policy.mode != .none else { return [] }
        switch failure?.reason {
        case .none: return pinMatches.map { "\($0.pin) matched at depth \($0.depth) (\($0.subject))" }
        case .some(.pinMismatch): return failure?.message.split(separator: "\n").map(String.init) ?? []
        default: return ["not checked: the chain or the host failed first"]
        }
    }

    /// The profile the path was held to and why, and the rule it broke when one did (`webpki (…): name rule …`).
    package var profileSummary: String {
        let applied = appliedProfile?.description ?? "none (no chain verified)"
        return applied + (failure?.violation.map { ": \($0)" } ?? "")
    }

    /// The stapled OCSP response: its status, producer and validity, and the policy's refusal when it made one;
    /// `none` without a staple.
    package var stapleSummary: String {
        var text = "none"
        if let staple = ocspStaple {
            let until = staple.nextUpdate.map(Self.rfc3339) ?? "no nextUpdate"
            text = "\(staple.status) from \(staple.responder), valid \(staple.thisUpdate.map(Self.rfc3339) ?? "?") to \(until)"
            if let revokedAt = staple.revokedAt { text += ", revoked at \(Self.rfc3339(revokedAt))" }
            if let problem = staple.problem { text += " (unverified: \(problem))" }
        }
        if let failure, failure.concernsStaple { text += "; REJECTED: \(failure.message)" }
        return text
    }

    static func rfc3339(_ date: Date) -> String { date.formatted(.iso8601) }
}

extension OCSPCheck {
    /// What `revocation: ocsp` found: the status, where it came from, until when it stands, and a soft failure.
    package var summary: String {
        let source = stapled ? "the staple" : responderURL.map { "the responder \($0.absoluteString)" } ?? "no responder"
        var text = "\(status) (OCSP, from \(source)"
        if let nextUpdate { text += ", until \(TrustEvaluation.rfc3339(nextUpdate))" }
        text += ")"
        if softFailed { text += "; WARNING: soft fail let it pass" }
        if status == .unavailable, let detail { text += ": \(detail)" }
        return text
    }
}
