import PinpathSecurity

/// PEM and DER loading (``KeyMaterial``, ``Certificate``) on the fuzz bytes, as `pinpath pins`, pinned
/// certificate files and `ca_file` read them.
///
/// Promises checked: a refusal is a ``SecurityError`` that names the source; everything found has a 32-byte
/// pin; each certificate's DER and PEM encodings parse back to an equal certificate with the same pin.
enum CertificateCheck {
    static let source = "fuzz-input.pem"

    static func check(_ bytes: [UInt8]) throws(InvariantViolation) {
        let found: [KeyMaterial]
        do {
            found = try KeyMaterial.load(bytes: bytes, source: source)
        } catch {
            try requireRefusal(error, naming: source)
            found = []
        }
        for material in found {
            try require(
                material.spkiPin.digest.count == 32,
                "\(material.kind) \(excerpt(material.label)) has a pin of \(material.spkiPin.digest.count) bytes")
            if let certificate = material.certificate { try checkEncodings(certificate) }
        }
        // The DER initializer on its own: the same bytes as one certificate, or a refusal.
        do {
            try checkEncodings(try Certificate(derBytes: bytes))
        } catch let violation as InvariantViolation {
            throw violation
        } catch {
            try requireRefusal(error, naming: "\(bytes.count) bytes")
        }
    }

    private static func checkEncodings(_ certificate: Certificate) throws(InvariantViolation) {
        let name = "certificate \(excerpt(certificate.subject)) (issuer \(excerpt(certificate.issuer)))"
        let der = certificate.derBytes
        guard let fromDER = try? Certificate(derBytes: der) else {
            throw InvariantViolation("\(name): its own DER encoding (\(der.count) bytes) does not parse")
        }
        try require(
            fromDER == certificate && fromDER.spkiPin == certificate.spkiPin, "\(name): its DER encoding parses to another certificate")
        guard let fromPEM = try? Certificate.certificates(pem: certificate.pem), fromPEM.count == 1 else {
            throw InvariantViolation("\(name): its own PEM encoding does not parse to one certificate")
        }
        try require(
            fromPEM[0] == certificate && fromPEM[0].spkiPin == certificate.spkiPin,
            "\(name): its PEM encoding parses to another certificate")
    }

    private static func requireRefusal(_ error: any Error, naming source: String) throws(InvariantViolation) {
        guard let error = error as? SecurityError else {
            throw InvariantViolation("refused with \(type(of: error)), not SecurityError: \(error)")
        }
        try require(error.code == .invalidInput, "refused as \(error.code), not invalid_input: \(error.message)")
        try require(containsBytes(error.message, source), "the refusal does not name \(source): \(excerpt(error.message))")
    }
}
