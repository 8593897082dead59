import ArgumentParser
import PinpathSecurity

/// `--crl`, `--revocation`, `--ocsp` and `--ocsp-soft-fail`, shared by the commands that judge chains.
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
            require_stapled (required), ocsp (checked when sent, else the leaf's OCSP responder is asked).
            """
    )
    var revocation: RevocationMode = .none

    @Flag(
        help:
            """
            Ask the OCSP responder the leaf names when the server staples no answer (--revocation ocsp): revoked or unknown \
            refuses the connection before any request byte, and so does a responder that gives no usable answer unless \
            --ocsp-soft-fail.
            """
    )
    var ocsp = false

    @Flag(
        name: .customLong("ocsp-soft-fail"),
        help:
            """
            With --ocsp: go on, with a warning, when the responder cannot be asked or its answer cannot be relied on \
            (unreachable, forged, stale, too large, too slow). Off by default: a blocked responder must not hide a revoked \
            certificate.
            """
    )
    var ocspSoftFail = false

    /// The revocation mode `--revocation` and `--ocsp` ask for.
    /// - Throws: ``CommandFailure/usage(_:)`` when `--ocsp` contradicts `--revocation`, or `--ocsp-soft-fail`
    ///   comes without OCSP.
    func mode() throws(CommandFailure) -> RevocationMode {
        if ocsp && revocation != .none && revocation != .ocsp {
            throw CommandFailure.usage("--ocsp contradicts --revocation \(revocation.rawValue): give one of them")
        }
        let mode = ocsp ? .ocsp : revocation
        if ocspSoftFail && mode != .ocsp {
            throw CommandFailure.usage("--ocsp-soft-fail needs --ocsp (or --revocation ocsp)")
        }
        return mode
    }

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
    var isSet: Bool { !crlFiles.isEmpty || revocation != .none || ocsp || ocspSoftFail }
}
