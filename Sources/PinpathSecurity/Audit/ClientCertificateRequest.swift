/// A server's request for a client certificate (mutual TLS), as a TLS audit saw it.
public struct ClientCertificateRequest: Sendable, Equatable {
    /// The distinguished names of the certificate authorities the server named (RFC 2253, `CN=Corp Client CA`);
    /// empty when it named none (any certificate may be offered).
    public let authorities: [String]
    /// A client certificate was configured and sent in answer.
    public let certificateSent: Bool

    public init(authorities: [String], certificateSent: Bool) {
        self.authorities = authorities
        self.certificateSent = certificateSent
    }
}
