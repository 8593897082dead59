import COpenSSL
import COpenSSLShims

/// What an audit's completed handshake showed (``TLSClientHandshake/init(auditing:socket:serverName:label:)``):
/// read from the connection before close_notify, for ``TLSAudit`` to judge afterwards.
package struct AuditedHandshake: Sendable {
    /// The negotiated protocol (`TLSv1.3`). From `SSL_get_version`.
    package let protocolVersion: String
    /// The negotiated cipher suite by OpenSSL's name (`TLS_AES_256_GCM_SHA384`). From `SSL_CIPHER_get_name`.
    package let cipher: String
    /// The certificates the server sent, leaf first, as sent. From `SSL_get_peer_cert_chain`.
    package let servedChain: [Certificate]
    /// The OCSP response the server stapled, or `nil`. From `SSL_get_tlsext_status_ocsp_resp`.
    package let stapledOCSPResponse: [UInt8]?
    /// The server's request for a client certificate, or `nil` when it asked for none.
    package let clientCertificateRequest: ClientCertificateRequest?

    /// Reads a connection whose handshake has just completed.
    /// - Parameter certificateRequested: the server sent a CertificateRequest (OpenSSL ran the certificate callback).
    init(_ ssl: OpaquePointer, certificateRequested: Bool) {
        var chain: [Certificate] = []
        if let stack = SSL_get_peer_cert_chain(ssl) {  // on a client, the leaf is included
            for index in 0..<pinpath_sk_X509_num(stack) {
                if let x509 = pinpath_sk_X509_value(stack, index), let certificate = Certificate(referencing: x509) {
                    chain.append(certificate)
                }
            }
        }
        protocolVersion = SSL_get_version(ssl).map { String(cString: $0) } ?? "unknown"
        cipher = SSL_get_current_cipher(ssl).flatMap { SSL_CIPHER_get_name($0) }.map { String(cString: $0) } ?? "unknown"
        servedChain = chain
        stapledOCSPResponse = Self.stapledOCSPResponse(ssl)
        clientCertificateRequest =
            certificateRequested
            ? ClientCertificateRequest(authorities: Self.clientAuthorities(ssl), certificateSent: SSL_get_certificate(ssl) != nil)
            : nil
    }

    /// The CA names the server's CertificateRequest carried. On a client, `SSL_get_client_CA_list` returns them.
    private static func clientAuthorities(_ ssl: OpaquePointer) -> [String] {
        guard let names = SSL_get_client_CA_list(ssl) else { return [] }
        return (0..<pinpath_sk_X509_NAME_num(names)).compactMap { index in
            pinpath_sk_X509_NAME_value(names, index).map { Certificate.name($0) }
        }
    }

    private static func stapledOCSPResponse(_ ssl: OpaquePointer) -> [UInt8]? {
        var bytes: UnsafePointer<UInt8>?
        let length = pinpath_SSL_get_tlsext_status_ocsp_resp(ssl, &bytes)
        guard length > 0, let bytes else { return nil }
        return Array(UnsafeBufferPointer(start: bytes, count: length))
    }
}

extension TLSClientHandshake {
    /// An audit's handshake that has finished (``advance()`` said ``Step/finished``): what the server showed, or
    /// why there was no handshake in an audit's words (``TLSConnectionError/handshakeFailure(_:label:)``).
    /// - Parameter label: how messages name the target (`valid.test:443`).
    package func auditResult(label: String) -> Result<AuditedHandshake, TLSConnectionError> {
        switch outcome {
        case .success?:
            guard let audited else {
                return .failure(TLSConnectionError(.handshakeFailed, "\(label): the TLS handshake completed without a record of it"))
            }
            return .success(audited)
        case .failure(let failure)?: return .failure(TLSConnectionError.handshakeFailure(failure, label: label))
        case nil: return .failure(TLSConnectionError(.handshakeFailed, "\(label): the TLS handshake ended without an outcome"))
        }
    }
}
