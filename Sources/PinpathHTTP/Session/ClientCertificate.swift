/// A client certificate for mutual TLS: PEM files, and the key's password if it has one.
public struct ClientCertificate: Sendable {
    /// The certificate (PEM), sent when the server asks for one.
    public var certificatePath: String
    /// The private key (PEM); `nil` when it is in the certificate's file.
    public var keyPath: String?
    /// The key's password, if it is encrypted.
    public var password: String?

    public init(certificatePath: String, keyPath: String? = nil, password: String? = nil) {
        self.certificatePath = certificatePath
        self.keyPath = keyPath
        self.password = password
    }
}
