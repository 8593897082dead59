import COpenSSL

extension TrustFailure.Reason {
    /// A certificate of the chain is revoked (by a CRL given, or by the stapled OCSP response).
    public static let revoked = Self(name: "revoked")
    /// CRLs were given but none is from the issuer of a certificate of the chain: its status is unknown.
    public static let crlMissing = Self(name: "crl_missing")
    /// The CRL for a certificate of the chain is past its nextUpdate (or not yet valid): its status is unknown.
    public static let crlStale = Self(name: "crl_stale")
    /// The CRL for a certificate of the chain cannot be relied on: its signature does not verify, its issuer
    /// may not sign CRLs (no cRLSign) or cannot be found, or it has a critical extension pinpath does not know.
    public static let crlInvalid = Self(name: "crl_invalid")
    /// A staple was required (``RevocationMode/requireStapled``, or the leaf's must-staple extension) and the
    /// server sent none.
    public static let ocspStapleMissing = Self(name: "ocsp_staple_missing")
    /// The stapled OCSP response cannot be relied on (not the issuer's signature, another certificate's,
    /// expired, unreadable).
    public static let ocspStapleInvalid = Self(name: "ocsp_staple_invalid")
    /// The OCSP response (stapled or from the responder) says the responder does not know the leaf.
    public static let ocspStatusUnknown = Self(name: "ocsp_status_unknown")
    /// Under ``RevocationMode/ocsp`` with hard fail, no usable answer came from the leaf's responder: it names
    /// none, could not be reached, or its answer was refused (forged, for another certificate, stale, a
    /// replayed nonce, too large, too slow).
    public static let ocspUnavailable = Self(name: "ocsp_unavailable")
    /// Under ``RevocationMode/ocsp``, no staple and no cached answer: the handshake stops so that the
    /// responder can be asked before any request byte is sent. A session asks and connects again; this is
    /// what a caller without a responder client sees.
    public static let ocspQueryNeeded = Self(name: "ocsp_query_needed")

    /// The reason for an OpenSSL CRL error, or `nil` for any other error.
    static func revocation(verifyError error: Int32) -> Self? {
        switch error {
        case X509_V_ERR_CERT_REVOKED: .revoked
        case X509_V_ERR_UNABLE_TO_GET_CRL: .crlMissing
        case X509_V_ERR_CRL_HAS_EXPIRED, X509_V_ERR_CRL_NOT_YET_VALID: .crlStale
        case X509_V_ERR_UNABLE_TO_DECRYPT_CRL_SIGNATURE, X509_V_ERR_CRL_SIGNATURE_FAILURE,
            X509_V_ERR_ERROR_IN_CRL_LAST_UPDATE_FIELD, X509_V_ERR_ERROR_IN_CRL_NEXT_UPDATE_FIELD,
            X509_V_ERR_UNABLE_TO_GET_CRL_ISSUER, X509_V_ERR_KEYUSAGE_NO_CRL_SIGN,
            X509_V_ERR_UNHANDLED_CRITICAL_CRL_EXTENSION, X509_V_ERR_DIFFERENT_CRL_SCOPE, X509_V_ERR_CRL_PATH_VALIDATION_ERROR:
            .crlInvalid
        default: nil
        }
    }
}

extension TrustFailure {
    /// Whether the stapled OCSP response caused the failure: missing, unusable, saying unknown, or saying the
    /// leaf is revoked (a CRL's revocation carries OpenSSL's `X509_V_ERR_CERT_REVOKED` instead).
    public var concernsStaple: Bool {
        [Reason.ocspStapleMissing, .ocspStapleInvalid, .ocspStatusUnknown].contains(reason)
            || (reason == .revoked && verifyError == nil)
    }
}
