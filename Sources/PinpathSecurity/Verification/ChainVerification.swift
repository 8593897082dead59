import COpenSSL
import COpenSSLShims
import FoundationEssentials
import Glibc

/// One run of `X509_verify_cert` over a served chain: the verdict and the chain OpenSSL built, cut at the first
/// certificate whose signature does not verify.
struct ChainVerification {
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
    /// How many certificates of ``chain``, from the leaf, came from what the server sent (the rest from the
    /// store). Wraps `X509_STORE_CTX_get_num_untrusted`.
    let servedCount: Int
    /// The first certificate of ``chain`` outside its validity period, when a strict run did not verify: what the
    /// failure names first when the chain ``reachesAnchorForHost`` (OpenSSL's strict structure checks run before
    /// the dates, so its own error may be another), and says after the trust failure otherwise.
    let validityLapse: ValidityLapse?
    /// Whether ``chain`` is one the policy vouches for but for its dates or a structure check: it ends at a
    /// certificate of the store (a trust-store anchor, or a pinned certificate in `certificate` mode), OpenSSL
    /// stopped at no path-building or signature error and every link's signature verified, and the leaf is for
    /// the host (when one was checked). Only such a chain's dates are the service's: an expiry is then named
    /// first, and is `tls.certificate_expired`'s; anything else (self-signed, an unknown issuer, a forged link,
    /// another host) is an interception or a wrong server whose dates the attacker chose.
    let reachesAnchorForHost: Bool
    /// The profile applied and why, set by ``ProfileSelection/verify(_:against:_:)``; `nil` for a run no
    /// selection made (the host-only run of an audit).
    var appliedProfile: AppliedProfile?

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
            try HostNameCheck.configure(host, on: parameters, profile: profile)
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
        leniency.installCallback(on: context)
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
        let servedCount = Int(X509_STORE_CTX_get_num_untrusted(context))
        // OpenSSL reaches the signatures only after building the chain and checking names, constraints and the
        // anchor, and stops at the first error it is not told to excuse: check every link here as well, so that
        // the chain pins are matched against is linked by signatures whatever OpenSSL got to. When it accepted
        // the chain it has checked every link (no leniency excuses a signature error) but a self-signed top's
        // own signature, so only that one is left.
        let brokenLink =
            leniency == .hostOnly
            ? nil : Self.firstBrokenLink(chain, servedCount: servedCount, from: result == 1 ? max(chain.count - 1, 0) : 0)
        // Before the cut and whatever the leniency excused: a certificate from the store at the top, reached by
        // verified links, and no error of a path that ended elsewhere.
        let reachesAnchor = brokenLink == nil && chain.count > servedCount && !Self.isPathBuildingError(error)
        if let broken = brokenLink {
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
            let path = VerifiedPath(
                chain: chain, servedCount: servedCount, endsAtAnchor: chain.count > servedCount,
                host: host.map(HostNameCheck.bare), maximumDepth: maximumDepth)
            violation = try profile.firstViolation(on: path)
            if let violation {
                verified = false
                error = X509_V_ERR_APPLICATION_VERIFICATION
                depth = violation.depth
            }
        }
        // Under `webpki` a leaf without a SAN fails the host check even when its commonName is the host: say
        // which rule refuses it rather than only "not for this host".
        if !verified && leniency != .hostOnly && Self.isHostError(error), let leaf = chain.first, let host,
            let refused = HostNameCheck.commonNameFallbackRefused(leaf: leaf, host: HostNameCheck.bare(host), profile: profile)
        {
            violation = refused
            depth = 0
        }
        self.verified = verified
        self.error = error
        self.depth = depth
        self.chain = chain
        self.violation = violation
        self.servedCount = servedCount
        // OpenSSL checked the host when it verified; a run that stopped before its host check is asked again.
        let forHost =
            host.map { host in
                verified
                    || (!Self.isHostError(error) && chain.first.map { HostNameCheck.matches($0, host: host, profile: profile) } == true)
            } ?? true
        reachesAnchorForHost = reachesAnchor && forHost
        // Only where dates decide: allowing invalid certificates excuses them, and the audit's host-only run judges
        // nothing but the name.
        validityLapse = verified || leniency != .strict ? nil : ValidityLapse.first(in: chain, at: time ?? Date())
    }

    /// Whether OpenSSL's error says the path it built ends at no anchor (``isMissingAnchorError(_:)``), the
    /// anchor was refused, the path is too long, or a link's signature does not verify. OpenSSL builds the path
    /// before any other check, so with none of these (in a strict run, which stops at the first error) it
    /// reached an anchor.
    static func isPathBuildingError(_ error: Int32) -> Bool {
        isMissingAnchorError(error)
            || [
                X509_V_ERR_CERT_REJECTED, X509_V_ERR_CERT_CHAIN_TOO_LONG, X509_V_ERR_SUBJECT_ISSUER_MISMATCH,
                X509_V_ERR_CERT_SIGNATURE_FAILURE, X509_V_ERR_UNABLE_TO_DECRYPT_CERT_SIGNATURE,
                X509_V_ERR_UNABLE_TO_DECODE_ISSUER_PUBLIC_KEY,
            ].contains(error)
    }

    /// OpenSSL's text for the error (`certificate has expired`).
    var errorMessage: String { String(cString: X509_verify_cert_error_string(Int(error))) }
}
