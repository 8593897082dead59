import COpenSSL
import COpenSSLShims
import FoundationEssentials
import Glibc

/// An OCSP response (RFC 6960) a server stapled to its handshake (RFC 6066 §8), or that the leaf's responder
/// sent in answer to an ``OCSPQuery``, read for one leaf and checked against the leaf's issuer: one
/// verification for both.
public struct OCSPStaple: Sendable, Equatable {
    /// The certificate status the response gives (blackbox_exporter's `probe_ssl_ocsp_response_status`).
    public struct Status: Hashable, Sendable, CustomStringConvertible {
        let name: String
        /// The value of the metric: 0 good, 1 revoked, 2 unknown.
        public let metricValue: Int
        /// The name, as written in logs and JSON.
        public var description: String { name }
        /// The responder vouches that the certificate is not revoked.
        public static let good = Status(name: "good", metricValue: 0)
        /// The certificate is revoked.
        public static let revoked = Status(name: "revoked", metricValue: 1)
        /// The responder does not know the certificate.
        public static let unknown = Status(name: "unknown", metricValue: 2)
    }

    /// The status of the leaf.
    public let status: Status
    /// Where the response came from: `nil` for a staple, else the responder's URL it was fetched from.
    public let responderURL: URL?
    /// The responder ID: its name in RFC 2253 form, or `key:` and the SHA-1 hash of its key in hex.
    public let responder: String
    /// When the response was signed.
    public let producedAt: Date?
    /// The start of the status's validity.
    public let thisUpdate: Date?
    /// The end of the status's validity (`nil`: the responder gave none).
    public let nextUpdate: Date?
    /// When the leaf was revoked, for a revoked status.
    public let revokedAt: Date?
    /// Why the response cannot be relied on (its signature does not verify against the leaf's issuer, or it
    /// is outside its validity window), or `nil` when it verified.
    public let problem: String?

    /// How long a response without nextUpdate is believed after its thisUpdate: the Baseline Requirements'
    /// longest validity for OCSP responses about subscriber certificates is 10 days; 4 days is what they ask
    /// responders to refresh within.
    static let maximumAgeWithoutNextUpdate: Int = 4 * 86_400
    /// Clock skew tolerated on thisUpdate and nextUpdate (OpenSSL's `openssl ocsp` default).
    static let allowedSkew: Int = 300

    /// Reads the response `der` about `leaf`, verifying its signature against `issuer` (the issuer itself, or a
    /// responder it delegated with the OCSP-signing purpose) and its validity at `now`; for an answer to
    /// `query`, also its nonce. Wraps `d2i_OCSP_RESPONSE`, `OCSP_basic_verify`, `OCSP_check_nonce` and
    /// `OCSP_single_get0_status`.
    /// - Throws: ``SecurityError`` with code `invalidInput` when the bytes are no successful OCSP response, or
    ///   the response says nothing about `leaf` (a staple or an answer for another certificate).
    init(der: [UInt8], leaf: Certificate, issuer: Certificate?, now: Date, query: OCSPQuery? = nil) throws {
        defer { _ = drainOpenSSLErrors() }
        responderURL = query?.responderURL
        let what = query.map { "the OCSP response from \($0.responderURL.absoluteString)" } ?? "the stapled OCSP response"
        guard let response = derDecoding(der, { d2i_OCSP_RESPONSE(nil, $0, $1) }, free: { OCSP_RESPONSE_free($0) })
        else {
            throw SecurityError(.invalidInput, "\(what) (\(der.count) bytes) is not DER OCSP")
        }
        defer { OCSP_RESPONSE_free(response) }
        let responseStatus = OCSP_response_status(response)
        guard responseStatus == OCSP_RESPONSE_STATUS_SUCCESSFUL else {
            let text = String(cString: OCSP_response_status_str(Int(responseStatus)))
            throw SecurityError(.invalidInput, "\(what) is not successful (\(text))")
        }
        guard let basic = OCSP_response_get1_basic(response) else {
            throw SecurityError(.invalidInput, "\(what) carries no basic response")
        }
        defer { OCSP_BASICRESP_free(basic) }
        responder = Self.responderID(basic)
        producedAt = date(OCSP_resp_get0_produced_at(basic))

        guard let issuer else {
            throw SecurityError(
                .invalidInput, "\(what) cannot be checked: the leaf's issuer is not in the verified chain")
        }
        let (found, refusedDigests) = try Self.singleResponse(in: basic, about: leaf, issuer: issuer)
        guard let single = found else {
            let refused =
                refusedDigests.isEmpty
                ? "" : " (certificate IDs hashed with \(refusedDigests.joined(separator: ", ")) are not accepted: SHA-1 or SHA-2 only)"
            throw SecurityError(
                .invalidInput,
                "\(what) (signed by \(responder)) is not about \(leaf.subject) issued by \(issuer.subject)\(refused)")
        }
        var reason: Int32 = -1
        var revoked: UnsafeMutablePointer<ASN1_GENERALIZEDTIME>?
        var this: UnsafeMutablePointer<ASN1_GENERALIZEDTIME>?
        var next: UnsafeMutablePointer<ASN1_GENERALIZEDTIME>?
        let status = OCSP_single_get0_status(single, &reason, &revoked, &this, &next)
        switch status {
        case V_OCSP_CERTSTATUS_GOOD: self.status = .good
        case V_OCSP_CERTSTATUS_REVOKED: self.status = .revoked
        default: self.status = .unknown
        }
        thisUpdate = date(this)
        nextUpdate = date(next)
        revokedAt = date(revoked)
        problem =
            Self.signatureProblem(basic, issuer: issuer)
            ?? Self.validityProblem(this: this, next: next, now: now)
            ?? query.flatMap { Self.nonceProblem(basic, query: $0) }
    }

    /// The digest of a CertID hashed with `nid`, or `nil` for one that is not accepted: RFC 6960 lets the requester
    /// choose, SHA-1 is its default and SHA-256 what newer clients send; MD5 and unknown digests match nothing.
    private static func certificateIDDigest(_ nid: Int32) -> OpaquePointer? {
        switch nid {
        case NID_sha1: EVP_sha1()
        case NID_sha224: EVP_sha224()
        case NID_sha256: EVP_sha256()
        case NID_sha384: EVP_sha384()
        case NID_sha512: EVP_sha512()
        default: nil
        }
    }

    /// The SingleResponse about `leaf` issued by `issuer`, or `nil`: each one's CertID is compared with the leaf's
    /// CertID hashed with that response's own digest (`OCSP_resp_find_status` hashes with SHA-1 only, so a
    /// genuine staple hashed with SHA-256 was not found). When several are about the leaf, the gravest status
    /// counts: a response cannot make a revoked leaf good by also listing it as good. Also returns the digests
    /// of the CertIDs skipped because they are not accepted, for the message. Wraps `OCSP_resp_get0`,
    /// `OCSP_id_get0_info`, `OCSP_cert_to_id` and `OCSP_id_cmp`.
    /// - Throws: ``SecurityError`` when OpenSSL cannot compute a certificate ID.
    private static func singleResponse(
        in basic: OpaquePointer, about leaf: Certificate, issuer: Certificate
    ) throws -> (single: OpaquePointer?, refusedDigests: [String]) {
        var found: (single: OpaquePointer, gravity: Int)?
        var refusedDigests: [String] = []
        var leafIDs: [Int32: OpaquePointer] = [:]
        defer { for id in leafIDs.values { OCSP_CERTID_free(id) } }
        for index in 0..<OCSP_resp_count(basic) {
            guard let single = OCSP_resp_get0(basic, index), let id = OCSP_SINGLERESP_get0_id(single) else { continue }
            var algorithm: OpaquePointer?
            guard OCSP_id_get0_info(nil, &algorithm, nil, nil, id) == 1 else { continue }
            let nid = OBJ_obj2nid(algorithm)
            guard let digest = certificateIDDigest(nid) else {
                let name = nid == NID_undef ? "an unknown digest" : OBJ_nid2sn(nid).map { String(cString: $0) } ?? "NID \(nid)"
                if !refusedDigests.contains(name) { refusedDigests.append(name) }
                continue
            }
            if leafIDs[nid] == nil {
                guard let leafID = OCSP_cert_to_id(digest, leaf.x509, issuer.x509) else {
                    throw SecurityError.openSSL(.openSSLFailure, "cannot compute the OCSP certificate ID of \(leaf.subject)")
                }
                leafIDs[nid] = leafID
            }
            guard OCSP_id_cmp(leafIDs[nid], id) == 0 else { continue }
            let status = OCSP_single_get0_status(single, nil, nil, nil, nil)
            let gravity = status == V_OCSP_CERTSTATUS_REVOKED ? 2 : status == V_OCSP_CERTSTATUS_GOOD ? 0 : 1
            if found.map({ gravity > $0.gravity }) ?? true { found = (single, gravity) }
        }
        return (found?.single, refusedDigests)
    }

    /// Why the signature does not make the response the issuer's word, or `nil`: the signer must be the issuer
    /// or a certificate the issuer signed with the OCSP-signing purpose (OpenSSL's `ocsp_check_issuer`). The
    /// issuer is the only trusted certificate: it was already verified as the leaf's issuer.
    private static func signatureProblem(_ basic: OpaquePointer, issuer: Certificate) -> String? {
        guard let store = X509_STORE_new(), let issuers = pinpath_sk_X509_new_null() else {
            return "cannot allocate an X509_STORE to check the response's signature"
        }
        defer {
            X509_STORE_free(store)
            pinpath_sk_X509_free(issuers)
        }
        _ = X509_STORE_add_cert(store, issuer.x509)
        _ = X509_STORE_set_flags(store, UInt(X509_V_FLAG_PARTIAL_CHAIN))
        _ = pinpath_sk_X509_push(issuers, issuer.x509)
        _ = drainOpenSSLErrors()
        guard OCSP_basic_verify(basic, issuers, store, 0) == 1 else {
            let reasons = drainOpenSSLErrors()
            return "its signature is not the issuer's (\(issuer.subject)) nor a delegated responder's"
                + (reasons.isEmpty ? "" : " (\(reasons.joined(separator: "; ")))")
        }
        return nil
    }

    private static func validityProblem(
        this: UnsafeMutablePointer<ASN1_GENERALIZEDTIME>?, next: UnsafeMutablePointer<ASN1_GENERALIZEDTIME>?,
        now: Date
    ) -> String? {
        guard let this else { return "it has no thisUpdate" }
        if let next, let end = date(next), now.timeIntervalSince(end) > Double(allowedSkew) {
            return "it expired at \(end.formatted(.iso8601)) (nextUpdate)"
        }
        if let start = date(this), start.timeIntervalSince(now) > Double(allowedSkew) {
            return "it is not valid before \(start.formatted(.iso8601)) (thisUpdate)"
        }
        if next == nil, let start = date(this), now.timeIntervalSince(start) > Double(maximumAgeWithoutNextUpdate) {
            return
                """
                it has no nextUpdate and was made at \(start.formatted(.iso8601)), more than \
                \(maximumAgeWithoutNextUpdate / 86_400) days ago
                """
        }
        return nil
    }

    /// Why the answer's nonce does not prove it answers `query`, or `nil`: a nonce other than the one sent is
    /// a replay, and so is a nonce the request did not carry. An answer without a nonce is accepted (RFC 6960
    /// §4.4.1 lets responders serve pre-signed answers, as the large public ones do): thisUpdate and
    /// nextUpdate then bound its age. Wraps `OCSP_check_nonce`.
    private static func nonceProblem(_ basic: OpaquePointer, query: OCSPQuery) -> String? {
        guard let request = derDecoding(query.requestDER, { d2i_OCSP_REQUEST(nil, $0, $1) }, free: { OCSP_REQUEST_free($0) })
        else { return "pinpath cannot read back its own request to check the nonce" }
        defer { OCSP_REQUEST_free(request) }
        // 1: equal; 2: neither has one; -1: the request's only (pre-signed); 3: the answer's only; 0: unequal.
        switch OCSP_check_nonce(request, basic) {
        case 1, 2, -1: return nil
        case 3: return "it carries a nonce the request did not send (a replayed answer)"
        default: return "its nonce is not the one sent (a replayed answer)"
        }
    }

    private static func responderID(_ basic: OpaquePointer) -> String {
        var keyHash: UnsafePointer<ASN1_OCTET_STRING>?
        var name: OpaquePointer?
        guard OCSP_resp_get0_id(basic, &keyHash, &name) == 1 else { return "?" }
        if let name {
            return writingToMemoryBIO { X509_NAME_print_ex($0, name, 0, pinpath_XN_FLAG_RFC2253()) >= 0 } ?? "?"
        }
        guard let keyHash, let bytes = ASN1_STRING_get0_data(keyHash) else { return "?" }
        let hash = UnsafeBufferPointer(start: bytes, count: Int(ASN1_STRING_length(keyHash)))
        return "key:" + hash.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined()
    }

}
