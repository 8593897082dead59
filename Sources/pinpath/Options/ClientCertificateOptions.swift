import ArgumentParser
import PinpathSecurity

/// `--cert` and `--key`: a client certificate for mutual TLS, shared by `request` and `audit`.
struct ClientCertificateOptions: ParsableArguments {
    @Option(help: "A client certificate (PEM, its chain after it) to send when the server asks for one (mutual TLS).")
    var cert: String?

    @Option(help: "The client certificate's private key (PEM, not encrypted); default: read from the --cert file.")
    var key: String?

    /// The certificate and key, checked (readable, the key the certificate's and not encrypted); `nil` without `--cert`.
    /// - Throws: ``CommandFailure/usage(_:)`` naming the option and what is wrong.
    func checked() throws(CommandFailure) -> (certificate: String, key: String?)? {
        guard let cert else {
            if key != nil { throw CommandFailure.usage("--key is given without --cert") }
            return nil
        }
        do throws(SecurityError) {
            try ClientIdentity.check(certificatePath: cert, keyPath: key, password: nil)
        } catch {
            throw CommandFailure.usage("\(key != nil && error.code == .unusableClientKey ? "--key" : "--cert"): \(error.message)")
        }
        return (cert, key)
    }
}
