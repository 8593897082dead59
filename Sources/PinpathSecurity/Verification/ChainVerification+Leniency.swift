import COpenSSL
import COpenSSLShims
import Glibc

/// Which of OpenSSL's verification errors a run lets pass, and how those errors are told apart.
extension ChainVerification {
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

        /// Installs the verify callback that excuses what the leniency lets pass. Wraps `X509_STORE_CTX_set_verify_cb`.
        /// What RFC 5280 allows and OpenSSL refuses is excused in every trust decision
        /// (``isExcusedByRFC5280(_:)``); a certificate at the last second of its validity only in strict ones.
        func installCallback(on context: OpaquePointer) {
            switch self {
            case .strict:
                X509_STORE_CTX_set_verify_cb(context) { ok, context in
                    guard ok == 0, let context else { return 1 }
                    return ChainVerification.isExcusedByRFC5280(context)
                        || ChainVerification.isExpiryAtLastValidSecond(context) ? 1 : 0
                }
            case .untrustedAnchor:
                X509_STORE_CTX_set_verify_cb(context) { ok, context in
                    guard ok == 0, let context else { return 1 }
                    return ChainVerification.isExcusedWhenAllowingInvalid(X509_STORE_CTX_get_error(context))
                        || ChainVerification.isExcusedByRFC5280(context) ? 1 : 0
                }
            case .hostOnly:
                X509_STORE_CTX_set_verify_cb(context) { ok, context in
                    guard ok == 0, let context else { return 1 }
                    return ChainVerification.isHostError(X509_STORE_CTX_get_error(context)) ? 0 : 1
                }
            }
        }
    }

    /// Whether the error is one RFC 5280's path validation does not make, raised by OpenSSL's purpose check or
    /// strict flag, or by its CRL check on the anchor: a trust anchor without a CRL, a v1 root or a root without
    /// key usage refused by the strict flag, a CA certificate as the leaf refused by the purpose check. The
    /// profile rules judge what remains (`webpki` refuses a CA leaf by its own rule, naming it).
    static func isExcusedByRFC5280(_ context: OpaquePointer) -> Bool {
        isAnchorWithoutCRL(context) || isStrictRefusalOfVersion1Root(context)
            || isStrictRefusalOfAnchorWithoutKeyUsage(context) || isPurposeRefusalOfCertificateAuthorityLeaf(context)
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

    /// Whether the context reports a certificate expired at the very second its notAfter names: RFC 5280
    /// §4.1.2.5 counts that second in the validity period, OpenSSL (`X509_cmp_time`) does not. The time is the
    /// one OpenSSL checked against (`X509_VERIFY_PARAM_set_time`'s, or now); should the clock tick in between,
    /// the later second only makes the check stricter.
    static func isExpiryAtLastValidSecond(_ context: OpaquePointer) -> Bool {
        guard X509_STORE_CTX_get_error(context) == X509_V_ERR_CERT_HAS_EXPIRED,
            let certificate = X509_STORE_CTX_get_current_cert(context),
            let notAfter = X509_get0_notAfter(certificate),
            let parameters = X509_STORE_CTX_get0_param(context)
        else { return false }
        let checkTime = X509_VERIFY_PARAM_get_flags(parameters) & UInt(X509_V_FLAG_USE_CHECK_TIME) != 0
        return ASN1_TIME_cmp_time_t(notAfter, checkTime ? X509_VERIFY_PARAM_get_time(parameters) : time(nil)) == 0
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

    /// Whether the error is `X509_V_FLAG_X509_STRICT` refusing the top of the chain, a CA, for having no key
    /// usage extension. RFC 5280 §4.2.1.3 asks CAs to include one, but path validation takes a trust anchor as
    /// input without checking its extensions (§6.1.1 (d)), and lets a CA without the extension sign certificates
    /// and CRLs (§6.1.4 (n), §6.3.3 (f): "if a key usage extension is present"). Intermediates still need one.
    static func isStrictRefusalOfAnchorWithoutKeyUsage(_ context: OpaquePointer) -> Bool {
        guard X509_STORE_CTX_get_error(context) == X509_V_ERR_CA_CERT_MISSING_KEY_USAGE,
            let chain = X509_STORE_CTX_get0_chain(context)
        else { return false }
        return X509_STORE_CTX_get_error_depth(context) == pinpath_sk_X509_num(chain) - 1
    }

    /// Whether the error is OpenSSL's TLS server purpose check refusing a CA certificate as the leaf for its key
    /// usage (keyCertSign without digitalSignature or keyEncipherment), its extended key usage allowing serverAuth
    /// (or absent). RFC 5280 makes no stipulation about a CA certificate in leaf position and does not count its
    /// pathLenConstraint (§4.2.1.9: the last certificate is not an intermediate): `rfc5280` accepts it, `webpki`
    /// refuses it by its rule `webpki.leaf_not_ca` (BR 7.1.2.7.8). The other causes of that refusal still
    /// fail: an extended key usage without serverAuth, and any Netscape certificate type (which OpenSSL cannot
    /// be asked about: its refusal stands).
    static func isPurposeRefusalOfCertificateAuthorityLeaf(_ context: OpaquePointer) -> Bool {
        guard X509_STORE_CTX_get_error(context) == X509_V_ERR_INVALID_PURPOSE,
            X509_STORE_CTX_get_error_depth(context) == 0,
            let leaf = X509_STORE_CTX_get_current_cert(context)
        else { return false }
        let flags = X509_get_extension_flags(leaf)
        let allowsServerAuth =
            flags & UInt32(EXFLAG_XKUSAGE) == 0 || X509_get_extended_key_usage(leaf) & UInt32(XKU_SSL_SERVER) != 0
        return flags & UInt32(EXFLAG_CA) != 0 && flags & UInt32(EXFLAG_NSCERT) == 0 && allowsServerAuth
    }
}
