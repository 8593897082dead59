import ArgumentParser
import PinpathSecurity

/// `--crl` and `--revocation`, shared by the commands that judge chains.
struct RevocationOptions: ParsableArguments {
    @Option(
        name: .customLong("crl"),
        help:
            """
            Check revocation against the CRLs in this file (PEM or DER; repeatable): every certificate of the chain below the \
            anchor then needs a current CRL from its issuer.
            """
    )
    var crlFiles: [String] = []

    @Option(
        help:
            """
            What a stapled OCSP response must be: none (not checked unless the leaf is must-staple), stapled (checked when sent), \
            require_stapled (required).
            """
    )
    var revocation: RevocationMode = .none

    /// The CRLs of every `--crl` file, in order.
    /// - Throws: ``CommandFailure/usage(_:)`` naming the file that cannot be read or holds no CRL.
    func crls() throws(CommandFailure) -> [CertificateRevocationList] {
        do {
            return try crlFiles.flatMap { try CertificateRevocationList.lists(contentsOf: $0) }
        } catch {
            throw CommandFailure.usage("--crl \(error)")
        }
    }

    /// Whether a policy beyond the default one is needed for these options.
    var isSet: Bool { !crlFiles.isEmpty || revocation != .none }
}
