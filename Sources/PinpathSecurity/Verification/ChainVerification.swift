import COpenSSL
import CShims
import FoundationEssentials
import Glibc

/// One run of `X509_verify_cert` over a served chain: the verdict and the chain OpenSSL built, cut at the first
/// certificate whose signature does not verify.
struct ChainVerification {
    /// Which of OpenSSL's verification errors a run lets pass.
    enum Leniency: Sendable {
        /// None: the chain must end at an anchor of the store, with every signature, constraint and date right.
        case strict
        /// Allow invalid certificates: only the anchor may be missing or untrusted, and dates may be out of
        /// range (``isExcusedWhenAllowingInvalid(_:)``). Every signature of the built chain is still checked.
        case untrustedAnchor
        /// Every chain error, so that the host check alone decides: for reports that judge the host on its
        /// own (the audit), never for a trust decision.
        case hostOnly
    }

    /// Whether OpenSSL accepted the chain (and the host, when one was set), with the errors the leniency
    /// excuses, and every signature link of ``chain`` verified.
    let verified: Bool
    /// `X509_V_OK` or the first error OpenSSL reported (or `X509_V_ERR_CERT_SIGNATURE_FAILURE` for a link
    /// that OpenSSL let pass or never reached).
    let error: Int32
    /// The depth of that error.
    let depth: Int
    /// The chain OpenSSL built from the leaf (`X509_STORE_CTX_get0_chain`), possibly partial when verification
    /// failed, and cut after the first certificate whose signature does not verify: each certificate but the
    /// last is signed by the next one's key, so each one's key is proven by the link below it (the leaf's by
    /// the handshake). Never the served extras as such: this is what pins are matched against.
    let chain: [Certificate]
    /// The profile rule the verified path breaks, when OpenSSL accepted it but the profile did not.
    let violation: ProfileViolation?

    /// The security level of chain checks (key sizes, signature digests): Debian's default for TLS, so that
    /// RSA-1024 and SHA-1 signatures fail here as they fail in a handshake.
    static let authenticationLevel: Int32 = 2

    /// Verifies `served` (leaf first) against `store`.
    /// - Parameters:
    ///   - host: the name or IP address to check (`X509_VERIFY_PARAM_set1_host` without partial wildcards, or
    ///     `set1_ip_asc`), or `nil` for no check.
    ///   - partialChain: accept a chain ending at any certificate of the store, not only a self-signed root.
    ///   - leniency: which errors may pass; host errors never do.
    ///   - crls: when not empty, check every certificate of the chain below the anchor against them
    ///     (`X509_V_FLAG_CRL_CHECK | X509_V_FLAG_CRL_CHECK_ALL`, the lists in the context by
    ///     `X509_STORE_CTX_set0_crls`): a certificate whose issuer has no current CRL among them fails.
    /// - Throws: ``SecurityError`` when OpenSSL cannot run the verification at all, or the host is unusable.
    init(
        served: [Certificate], store: OpaquePointer, host: String?, time: Date?, partialChain: Bool,
        leniency: Leniency, profile: VerificationProfile = .webpki, maximumDepth: Int? = nil,
        crls: [CertificateRevocationList] = []
    ) throws {
        guard let leaf = served.first else {
            throw SecurityError(.invalidInput, "no certificate to verify")
        }
        guard let context = X509_STORE_CTX_new() else {
            throw SecurityError.openSSL(.openSSLFailure, "cannot allocate an X509_STORE_CTX")
        }
        defer { X509_STORE_CTX_free(context) }
        guard let untrusted = pinpath_sk_X509_new_null() else {
            throw SecurityError.openSSL(.openSSLFailure, "cannot allocate a certificate stack")
        }
        defer { pinpath_sk_X509_free(untrusted) }
        for certificate in served.dropFirst() where pinpath_sk_X509_push(untrusted, certificate.x509) <= 0 {
            throw SecurityError.openSSL(.openSSLFailure, "cannot build the served chain")
        }
        guard X509_STORE_CTX_init(context, store, leaf.x509, untrusted) == 1,
            X509_STORE_CTX_set_default(context, "ssl_server") == 1,
            let parameters = X509_STORE_CTX_get0_param(context)
        else {
            throw SecurityError.openSSL(.openSSLFailure, "cannot set up certificate verification")
        }
        X509_VERIFY_PARAM_set_auth_level(parameters, Self.authenticationLevel)
        if let time {
            X509_VERIFY_PARAM_set_time(parameters, time_t(time.timeIntervalSince1970.rounded(.down)))
        }
        // RFC 5280's structure checks (critical basic constraints and key usage on CAs, no keyCertSign on a
        // leaf, key identifiers present, no explicit curve parameters…), in every profile.
        var flags = UInt(X509_V_FLAG_X509_STRICT | X509_V_FLAG_POLICY_CHECK)
        if partialChain { flags |= UInt(X509_V_FLAG_PARTIAL_CHAIN) }
        _ = X509_VERIFY_PARAM_set_flags(parameters, flags)
        // The policy check (X509_V_FLAG_POLICY_CHECK) with anyPolicy as the initial set: what certificates'
        // policy constraints require (requireExplicitPolicy, inhibitPolicyMapping, inhibitAnyPolicy) is
        // enforced, nothing more. add0 takes ownership; a built-in NID's object is static, freeing it a no-op.
        guard X509_VERIFY_PARAM_add0_policy(parameters, OBJ_nid2obj(NID_any_policy)) == 1 else {
            throw SecurityError.openSSL(.openSSLFailure, "cannot set up the certificate policy check")
        }
        if let host {
            try Self.setHost(host, on: parameters, profile: profile)
        }
        // The context only borrows the stack: it is freed after the verification (the CRLs are the caller's).
        var revocationLists: OpaquePointer?
        defer { if let revocationLists { pinpath_sk_X509_CRL_free(revocationLists) } }
        if !crls.isEmpty {
            guard let stack = pinpath_sk_X509_CRL_new_null() else {
                throw SecurityError.openSSL(.openSSLFailure, "cannot allocate a CRL stack")
            }
            revocationLists = stack
            for crl in crls where pinpath_sk_X509_CRL_push(stack, crl.crl) <= 0 {
                throw SecurityError.openSSL(.openSSLFailure, "cannot build the CRL list")
            }
            X509_STORE_CTX_set0_crls(context, stack)
            _ = X509_VERIFY_PARAM_set_flags(parameters, UInt(X509_V_FLAG_CRL_CHECK | X509_V_FLAG_CRL_CHECK_ALL))
        }
        switch leniency {
        case .strict:
            X509_STORE_CTX_set_verify_cb(context) { ok, context in
                guard ok == 0, let context else { return 1 }
                return ChainVerification.isAnchorWithoutCRL(context)
                    || ChainVerification.isStrictRefusalOfVersion1Root(context) ? 1 : 0
            }
        case .untrustedAnchor:
            X509_STORE_CTX_set_verify_cb(context) { ok, context in
                guard ok == 0, let context else { return 1 }
                return ChainVerification.isExcusedWhenAllowingInvalid(X509_STORE_CTX_get_error(context))
                    || ChainVerification.isAnchorWithoutCRL(context)
                    || ChainVerification.isStrictRefusalOfVersion1Root(context) ? 1 : 0
            }
        case .hostOnly:
            X509_STORE_CTX_set_verify_cb(context) { ok, context in
                guard ok == 0, let context else { return 1 }
                return ChainVerification.isHostError(X509_STORE_CTX_get_error(context)) ? 0 : 1
            }
        }
        let result = X509_verify_cert(context)
        guard result >= 0 else {
            throw SecurityError.openSSL(.openSSLFailure, "certificate verification could not run")
        }
        _ = drainOpenSSLErrors()  // decoding problems met on the way are reported through the context's error
        var verified = result == 1
        var error = X509_STORE_CTX_get_error(context)
        var depth = Int(X509_STORE_CTX_get_error_depth(context))
        var chain: [Certificate] = []
        if let built = X509_STORE_CTX_get0_chain(context) {
            for index in 0..<pinpath_sk_X509_num(built) {
                guard let x509 = pinpath_sk_X509_value(built, index), let certificate = Certificate(referencing: x509)
                else { continue }
                chain.append(certificate)
            }
        }
        // OpenSSL reaches the signatures only after building the chain and checking names, constraints and the
        // anchor, and stops at the first error it is not told to excuse: check every link here as well, so that
        // the chain pins are matched against is linked by signatures whatever OpenSSL got to.
        if leniency != .hostOnly,
            let broken = Self.firstBrokenLink(chain, servedCount: Int(X509_STORE_CTX_get_num_untrusted(context)))
        {
            chain = Array(chain[...broken.depth])
            // A link that does not verify (a forgery) is the error to report, unless the host is wrong: the
            // strict flag's structure checks run before signatures and would otherwise hide it.
            if !Self.isHostError(error) {
                verified = false
                error = broken.error
                depth = broken.depth
            }
        }
        // The profile's rules run on a path OpenSSL accepted (with what the leniency excuses), never instead
        // of OpenSSL: they only add rejections.
        var violation: ProfileViolation?
        if verified && leniency != .hostOnly {
            let servedCount = Int(X509_STORE_CTX_get_num_untrusted(context))
            let path = VerifiedPath(
                chain: chain, servedCount: servedCount, endsAtAnchor: chain.count > servedCount,
                host: host.map(Self.bareHost), maximumDepth: maximumDepth)
            violation = profile.firstViolation(on: path)
            if let violation {
                verified = false
                error = X509_V_ERR_APPLICATION_VERIFICATION
                depth = violation.depth
            }
        }
        // Under `webpki` a leaf without a SAN fails the host check even when its commonName is the host: say
        // which rule refuses it rather than only "not for this host".
        if !verified && leniency != .hostOnly && Self.isHostError(error), let leaf = chain.first, let host,
            let refused = Self.commonNameFallbackRefused(leaf: leaf, host: Self.bareHost(host), profile: profile)
        {
            violation = refused
            depth = 0
        }
        self.verified = verified
        self.error = error
        self.depth = depth
        self.chain = chain
        self.violation = violation
    }

    /// The violation of `webpki.san_required` when that alone made the host check fail: the leaf has no SAN and
    /// OpenSSL's commonName fallback, which the `webpki` profile turns off, would have matched `host`. Wraps
    /// `X509_check_host`.
    private static func commonNameFallbackRefused(
        leaf: Certificate, host: String, profile: VerificationProfile
    ) -> ProfileViolation? {
        let rule = SubjectAlternativeNameRequired()
        guard profile.rules.contains(where: { $0.name == rule.name }), !isIPAddress(host),
            X509_check_host(leaf.x509, host, 0, UInt32(X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS), nil) == 1,
            var violation = rule.check(
                VerifiedPath(chain: [leaf], servedCount: 1, endsAtAnchor: false, host: host, maximumDepth: nil))
        else { return nil }
        violation.acceptedByRFC5280 = true
        return violation
    }

    /// A host as certificates name it: no IPv6 brackets, no root's dot.
    static func bareHost(_ host: String) -> String {
        var name = host
        if name.hasPrefix("[") && name.hasSuffix("]") { name = String(name.dropFirst().dropLast()) }
        if name.hasSuffix(".") { name.removeLast() }
        return name
    }

    /// The first certificate of `chain` (leaf first) whose signature does not verify, and why: one not signed
    /// by the next certificate's key, or a self-signed certificate at the top, sent by the server (it is among
    /// the first `servedCount`), that is not signed by its own key. A certificate at the top that is not
    /// self-signed has no issuer here to check it with: its key is proven by the link below it. Wraps
    /// `X509_verify` and `X509_self_signed`.
    private static func firstBrokenLink(_ chain: [Certificate], servedCount: Int) -> (depth: Int, error: Int32)? {
        defer { _ = drainOpenSSLErrors() }  // a failed X509_verify queues the reason, already said by the code
        for (depth, certificate) in chain.enumerated() {
            let issuer: Certificate
            if depth + 1 < chain.count {
                issuer = chain[depth + 1]
            } else if depth < servedCount && X509_self_signed(certificate.x509, 0) == 1 {
                issuer = certificate
            } else {
                break
            }
            guard let key = X509_get0_pubkey(issuer.x509) else {
                return (depth, X509_V_ERR_UNABLE_TO_DECODE_ISSUER_PUBLIC_KEY)
            }
            if X509_verify(certificate.x509, key) != 1 { return (depth, X509_V_ERR_CERT_SIGNATURE_FAILURE) }
        }
        return nil
    }

    /// OpenSSL's text for the error (`certificate has expired`).
    var errorMessage: String { String(cString: X509_verify_cert_error_string(Int(error))) }

    /// The failure to report for `host`, or `nil` when the verification passed (with chain errors ignored if
    /// that was asked for): a host mismatch or an invalid chain, with the pins of the chain built.
    func failure(host: String, expectedPins: [SPKIPin]) -> TrustFailure? {
        guard !verified else { return nil }
        if let violation {
            return TrustFailure(
                reason: .chainInvalid, verifyError: nil, depth: violation.depth,
                message: "\(host): certificate rejected: \(violation)", expectedPins: expectedPins,
                seenPins: chain.map(\.spkiPin), violation: violation)
        }
        if let reason = TrustFailure.Reason.revocation(verifyError: error) {
            let subject = depth < chain.count ? " (\(chain[depth].subject))" : ""
            let what = reason == .revoked ? "certificate revoked" : "revocation check failed"
            return TrustFailure(
                reason: reason, verifyError: error, depth: depth,
                message: "\(host): \(what) at depth \(depth)\(subject): \(errorMessage) (X509_V_ERR \(error))",
                expectedPins: expectedPins, seenPins: chain.map(\.spkiPin))
        }
        let hostError = Self.isHostError(error)
        let message = hostError
            ? "\(host): the certificate is not for this host (\(errorMessage))"
            : "\(host): certificate verify failed at depth \(depth): \(errorMessage) (X509_V_ERR \(error))"
        return TrustFailure(
            reason: hostError ? .hostMismatch : .chainInvalid, verifyError: error, depth: depth, message: message,
            expectedPins: expectedPins, seenPins: chain.map(\.spkiPin))
    }

    /// Whether the context reports a missing CRL for the top of the chain: the trust anchor (or the
    /// self-signed certificate allowed in its place), which RFC 5280 §6.1 leaves out of the path it checks, and
    /// whose revocation no issuer above it could state. OpenSSL's `CRL_CHECK_ALL` asks a CRL for it too.
    static func isAnchorWithoutCRL(_ context: OpaquePointer) -> Bool {
        guard X509_STORE_CTX_get_error(context) == X509_V_ERR_UNABLE_TO_GET_CRL,
            let chain = X509_STORE_CTX_get0_chain(context)
        else { return false }
        return Int(X509_STORE_CTX_get_error_depth(context)) == Int(pinpath_sk_X509_num(chain)) - 1
    }

    static func isHostError(_ error: Int32) -> Bool {
        error == X509_V_ERR_HOSTNAME_MISMATCH || error == X509_V_ERR_IP_ADDRESS_MISMATCH
            || error == X509_V_ERR_EMAIL_MISMATCH
    }

    /// Whether the error means no certificate of the store anchors the chain (in certificate mode: nothing
    /// pinned is in it), rather than something wrong with the certificates.
    static func isMissingAnchorError(_ error: Int32) -> Bool {
        [
            X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT, X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY,
            X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT, X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN,
            X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE, X509_V_ERR_CERT_UNTRUSTED,
        ].contains(error)
    }

    /// What allowing invalid certificates excuses (AFNetworking's "invalid or expired"): a missing or untrusted
    /// anchor (``isMissingAnchorError(_:)``: self-signed, an unknown root, an issuer nobody sent) and validity
    /// dates. Never a signature (`X509_V_ERR_CERT_SIGNATURE_FAILURE`, `UNABLE_TO_DECRYPT_CERT_SIGNATURE`,
    /// `UNABLE_TO_DECODE_ISSUER_PUBLIC_KEY`: the chain would be linked by names only, and a pin in it worthless),
    /// nor a CA or key-usage constraint (`INVALID_CA`: a customer's leaf signing another host's leaf), a weak key
    /// or digest (security level), a malformed date field or the host.
    static func isExcusedWhenAllowingInvalid(_ error: Int32) -> Bool {
        isMissingAnchorError(error) || error == X509_V_ERR_CERT_HAS_EXPIRED || error == X509_V_ERR_CERT_NOT_YET_VALID
    }

    /// Whether the error is `X509_V_FLAG_X509_STRICT` refusing a v1 self-signed certificate at the top of the
    /// chain as a CA (it has no basic constraints to say so). Without the flag OpenSSL takes such a root for a
    /// CA, as RFC 5280 lets a trust anchor be any form; only the strict flag's structure checks should apply.
    static func isStrictRefusalOfVersion1Root(_ context: OpaquePointer) -> Bool {
        guard X509_STORE_CTX_get_error(context) == X509_V_ERR_INVALID_CA,
            let certificate = X509_STORE_CTX_get_current_cert(context),
            X509_get_version(certificate) == X509_VERSION_1,
            X509_get_extension_flags(certificate) & UInt32(EXFLAG_SS) != 0,
            let chain = X509_STORE_CTX_get0_chain(context)
        else { return false }
        return X509_STORE_CTX_get_error_depth(context) == pinpath_sk_X509_num(chain) - 1
    }

    /// Under `webpki` the subject's commonName is never taken for a host name
    /// (`X509_CHECK_FLAG_NEVER_CHECK_SUBJECT`); `rfc5280` keeps OpenSSL's fallback to it for a leaf without
    /// a DNS SAN (RFC 6125 §6.4.4).
    private static func setHost(_ host: String, on parameters: OpaquePointer, profile: VerificationProfile) throws {
        var name = host
        if name.hasPrefix("[") && name.hasSuffix("]") { name = String(name.dropFirst().dropLast()) }
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

    /// Whether `text` is an IPv4 or IPv6 address (no brackets). Wraps `inet_pton`.
    static func isIPAddress(_ text: String) -> Bool {
        var buffer = [UInt8](repeating: 0, count: 16)
        return inet_pton(AF_INET, text, &buffer) == 1 || inet_pton(AF_INET6, text, &buffer) == 1
    }
}
