import COpenSSL
import COpenSSLShims
import FoundationEssentials
import PinpathSupport

/// A question for the OCSP responder a leaf names in its Authority Information Access extension (RFC 6960
/// §4.1, RFC 5280 §4.2.2.1): the request to POST, where to, and what the answer must match. Built in the
/// handshake when ``RevocationMode/ocsp`` finds no staple and no cached answer; the request core sends it
/// (``OCSPResponderClient``) and the answer is judged by ``OCSPStaple``, as a staple is.
public struct OCSPQuery: Sendable {
    /// The responder's URL, as the leaf names it (the first `http` or `https` one).
    public let responderURL: URL
    /// The DER `OCSPRequest` to POST with `Content-Type: application/ocsp-request`: one CertID (SHA-1, what
    /// every responder accepts) and a nonce.
    public let requestDER: [UInt8]
    /// The leaf asked about.
    public let leaf: Certificate
    /// The leaf's issuer: the answer must be its signature or a responder's it delegated.
    public let issuer: Certificate
    /// The leaf's CertID (DER, hex): the key under which the answer is cached.
    let certificateID: String

    /// The largest answer read from a responder: a response about one certificate is 1–4 KB; 64 KiB leaves
    /// room for a responder certificate chain and refuses a flood.
    public static let maximumResponseSize = 64 << 10
    /// The longest URL taken from a certificate.
    static let maximumURLLength = 2048

    /// Builds the query about `leaf` for the responder its AIA extension names. Wraps `X509_get1_ocsp`,
    /// `OCSP_cert_to_id`, `OCSP_request_add0_id`, `OCSP_request_add1_nonce` and `i2d_OCSP_REQUEST`.
    /// - Throws: ``SecurityError`` `invalidInput` when the leaf names no http(s) OCSP responder (or one that is
    ///   not a URL), `openSSLFailure` when OpenSSL cannot build the request.
    init(leaf: Certificate, issuer: Certificate) throws(SecurityError) {
        defer { _ = drainOpenSSLErrors() }
        self.leaf = leaf
        self.issuer = issuer
        responderURL = try Self.responderURL(of: leaf)
        guard let id = OCSP_cert_to_id(EVP_sha1(), leaf.x509, issuer.x509) else {
            throw SecurityError.openSSL(.openSSLFailure, "cannot compute the OCSP certificate ID of \(leaf.subject)")
        }
        guard let key = derEncoding({ i2d_OCSP_CERTID(id, $0) }) else {
            OCSP_CERTID_free(id)
            throw SecurityError.openSSL(.openSSLFailure, "cannot encode the OCSP certificate ID of \(leaf.subject)")
        }
        certificateID = key.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
        guard let request = OCSP_REQUEST_new() else {
            OCSP_CERTID_free(id)
            throw SecurityError.openSSL(.openSSLFailure, "cannot allocate an OCSP request")
        }
        defer { OCSP_REQUEST_free(request) }
        guard OCSP_request_add0_id(request, id) != nil else {
            OCSP_CERTID_free(id)
            throw SecurityError.openSSL(.openSSLFailure, "cannot add the certificate ID to the OCSP request")
        }
        // A nonce binds the answer to this request (RFC 6960 §4.4.1): a replayed answer fails its check.
        guard OCSP_request_add1_nonce(request, nil, -1) == 1,
            let encoded = derEncoding({ i2d_OCSP_REQUEST(request, $0) })
        else {
            throw SecurityError.openSSL(.openSSLFailure, "cannot encode the OCSP request about \(leaf.subject)")
        }
        requestDER = encoded
    }

    /// The first http(s) OCSP URL in `leaf`'s AIA extension.
    private static func responderURL(of leaf: Certificate) throws(SecurityError) -> URL {
        guard let urls = X509_get1_ocsp(leaf.x509) else {
            throw SecurityError(.invalidInput, "\(leaf.subject) names no OCSP responder (no OCSP URL in its AIA extension)")
        }
        defer { X509_email_free(urls) }
        var refused: [String] = []
        for index in 0..<pinpath_sk_OPENSSL_STRING_num(urls) {
            guard let pointer = pinpath_sk_OPENSSL_STRING_value(urls, index) else { continue }
            let text = String(decoding: UnsafeRawBufferPointer(start: pointer, count: strlen(pointer)), as: UTF8.self)
            if text.utf8.count <= maximumURLLength, let url = URL(string: text),
                let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
                let host = url.host(percentEncoded: false), !host.isEmpty
            {
                return url
            }
            refused.append("\"" + UntrustedText.escaped(text, limit: 256) + "\"")
        }
        throw SecurityError(
            .invalidInput,
            "\(leaf.subject) names no http(s) OCSP responder"
                + (refused.isEmpty ? "" : " (refused: \(refused.joined(separator: ", ")))"))
    }

    /// Judges the responder's reply to this query at `now`, the way a staple is judged (``OCSPStaple``) and
    /// with the nonce checked: a usable answer, or why there is none.
    /// - Parameter reply: the response body, or why none came (unreachable, refused by a gate, HTTP error,
    ///   too large, too slow).
    func entry(for reply: Result<[UInt8], OCSPResponderFailure>, now: Date) -> OCSPResponseCache.Entry {
        let body: [UInt8]
        switch reply {
        case .failure(let failure):
            return .unavailable("the OCSP responder \(responderURL.absoluteString) could not be asked: \(failure.message)")
        case .success(let bytes): body = bytes
        }
        do {
            let answer = try OCSPStaple(der: body, leaf: leaf, issuer: issuer, now: now, query: self)
            if let problem = answer.problem {
                return .unavailable("the OCSP response from \(responderURL.absoluteString) cannot be relied on: \(problem)")
            }
            return .answer(answer)
        } catch {
            return .unavailable("\(error)")
        }
    }
}

/// Why an OCSP responder gave no answer: what ``OCSPResponderClient`` reports.
public struct OCSPResponderFailure: Error, Sendable {
    /// What went wrong, naming the responder (shown in messages, events and warnings).
    public let message: String

    /// Creates a failure.
    public init(_ message: String) { self.message = message }
}

/// Sends an ``OCSPQuery`` to its responder: implemented by the request core, so that the question goes
/// through the same gates as any request (reachability, the responder host's own policy, no redirects, a
/// size cap of ``OCSPQuery/maximumResponseSize``, a timeout), while its answer is judged here.
public protocol OCSPResponderClient: Sendable {
    /// POSTs `query.requestDER` to `query.responderURL` and returns the body of a 200 answer.
    func ask(_ query: OCSPQuery) async -> Result<[UInt8], OCSPResponderFailure>
}
