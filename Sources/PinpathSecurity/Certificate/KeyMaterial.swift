import COpenSSL
import COpenSSLShims
import Glibc

/// One certificate, public key, private key or CSR found in a file, with the pin of its public key.
public struct KeyMaterial: Sendable {
    /// What kind of object was found.
    public struct Kind: Hashable, Sendable, CustomStringConvertible {
        let name: String
        /// The name, as written in logs and JSON.
        public var description: String { name }
        /// An X.509 certificate.
        public static let certificate = Kind(name: "certificate")
        /// A public key (SubjectPublicKeyInfo or PKCS#1 RSA).
        public static let publicKey = Kind(name: "public key")
        /// A private key (PKCS#8, PKCS#1 RSA, SEC1 EC); only its public half is used.
        public static let privateKey = Kind(name: "private key")
        /// A PKCS#10 certificate signing request.
        public static let certificateRequest = Kind(name: "CSR")
    }

    /// What was found.
    public let kind: Kind
    /// The certificate, when ``kind`` is `certificate`.
    public let certificate: Certificate?
    /// The pin of the object's public key.
    public let spkiPin: SPKIPin
    /// The certificate's subject, or the key's description (`RSA 2048-bit private key`, `CSR CN=…`).
    public let label: String

    /// Loads everything in a PEM file (bundles included, in order) or one DER object.
    /// - Throws: ``SecurityError`` naming `path`: `unreadableFile`, or `invalidInput` for a damaged block,
    ///   an encrypted private key, or a file with nothing usable.
    public static func load(contentsOf path: String) throws -> [KeyMaterial] {
        try load(bytes: readInputFile(path), source: path)
    }

    /// Loads from bytes already in memory; `source` names them in errors. `package` for the fuzz entry points
    /// (Tests/PinpathFuzzing), which feed it bytes without a file.
    package static func load(bytes: [UInt8], source: String) throws -> [KeyMaterial] {
        let found =
            bytes.starts(with: Array("-----BEGIN ".utf8)) || containsPEMHeader(bytes)
            ? try loadPEM(bytes, source: source)
            : try loadDER(bytes, source: source)
        guard !found.isEmpty else {
            throw SecurityError(.invalidInput, "\(source): no certificate, public key, private key or CSR found")
        }
        return found
    }

    private static func containsPEMHeader(_ bytes: [UInt8]) -> Bool {
        let marker = Array("-----BEGIN ".utf8)
        guard bytes.count >= marker.count else { return false }
        return (0...(bytes.count - marker.count)).contains { bytes[$0..<$0 + marker.count].elementsEqual(marker) }
    }

    /// Decodes every block OpenSSL's PEM reader finds (``forEachPEMBlock(in:_:damaged:)``); a damaged block
    /// is an error.
    private static func loadPEM(_ bytes: [UInt8], source: String) throws -> [KeyMaterial] {
        var found: [KeyMaterial] = []
        try forEachPEMBlock(in: bytes) { block, number in
            let place = "\(source): PEM block \(number) (\(block.label))"
            if block.label == "ENCRYPTED PRIVATE KEY" || block.headers.contains("ENCRYPTED") {
                throw SecurityError(.invalidInput, "\(place) is encrypted; pin its certificate or public key instead")
            }
            guard let kind = kind(ofPEMLabel: block.label) else { return }  // parameters, CRLs: nothing to pin
            guard let material = decode(block.der, as: kind, pemLabel: block.label) else {
                throw SecurityError.openSSL(.invalidInput, "\(place) cannot be parsed")
            }
            found.append(material)
        } damaged: { number in
            throw SecurityError.openSSL(.invalidInput, "\(source): PEM block \(number) is damaged")
        }
        return found
    }

    private static func kind(ofPEMLabel label: String) -> Kind? {
        switch label {
        case "CERTIFICATE", "X509 CERTIFICATE", "TRUSTED CERTIFICATE": return .certificate
        case "PUBLIC KEY", "RSA PUBLIC KEY": return .publicKey
        case "PRIVATE KEY", "RSA PRIVATE KEY", "EC PRIVATE KEY", "DSA PRIVATE KEY": return .privateKey
        case "CERTIFICATE REQUEST", "NEW CERTIFICATE REQUEST": return .certificateRequest
        default: return nil
        }
    }

    /// A DER file carries no label: try each kind, most common first.
    private static func loadDER(_ bytes: [UInt8], source: String) throws -> [KeyMaterial] {
        for kind in [Kind.certificate, .publicKey, .certificateRequest, .privateKey] {
            let material = decode(bytes, as: kind, pemLabel: nil)
            // Each wrong guess queues ASN.1 reasons that would only confuse the message: drop them.
            _ = drainOpenSSLErrors()
            if let material { return [material] }
        }
        throw SecurityError(
            .invalidInput, "\(source): not a PEM file, nor a DER certificate, public key, private key or CSR")
    }

    private static func decode(_ der: [UInt8], as kind: Kind, pemLabel: String?) -> KeyMaterial? {
        switch kind {
        case .certificate:
            // A TRUSTED CERTIFICATE block carries trust settings after the certificate: d2i_X509_AUX reads both.
            let decoded =
                pemLabel == "TRUSTED CERTIFICATE"
                ? derDecoding(der, { d2i_X509_AUX(nil, $0, $1) }, free: { X509_free($0) })
                : derDecoding(der, { d2i_X509(nil, $0, $1) }, free: { X509_free($0) })
            guard let x509 = decoded else { return nil }
            let certificate = Certificate(owning: x509)
            return KeyMaterial(kind: kind, certificate: certificate, spkiPin: certificate.spkiPin, label: certificate.subject)
        case .publicKey:
            let decoded =
                pemLabel == "RSA PUBLIC KEY"
                ? derDecoding(der, { d2i_PublicKey(EVP_PKEY_RSA, nil, $0, $1) }, free: { EVP_PKEY_free($0) })
                : derDecoding(der, { d2i_PUBKEY(nil, $0, $1) }, free: { EVP_PKEY_free($0) })
            guard let key = decoded else { return nil }
            return keyMaterial(kind, PublicKey(owning: key), suffix: "public key")
        case .privateKey:
            guard let key = derDecoding(der, { d2i_AutoPrivateKey(nil, $0, $1) }, free: { EVP_PKEY_free($0) }) else {
                return nil
            }
            return keyMaterial(kind, PublicKey(owning: key), suffix: "private key")
        case .certificateRequest:
            guard let request = derDecoding(der, { d2i_X509_REQ(nil, $0, $1) }, free: { X509_REQ_free($0) }) else {
                return nil
            }
            defer { X509_REQ_free(request) }
            guard let key = X509_REQ_get_pubkey(request) else { return nil }
            let subject =
                writingToMemoryBIO {
                    X509_NAME_print_ex($0, X509_REQ_get_subject_name(request), 0, pinpath_XN_FLAG_RFC2253()) >= 0
                } ?? ""
            let publicKey = PublicKey(owning: key)
            return KeyMaterial(kind: kind, certificate: nil, spkiPin: publicKey.spkiPin, label: "CSR \(subject) (\(publicKey))")
        default:
            return nil
        }
    }

    private static func keyMaterial(_ kind: Kind, _ key: PublicKey, suffix: String) -> KeyMaterial {
        KeyMaterial(kind: kind, certificate: nil, spkiPin: key.spkiPin, label: "\(key) \(suffix)")
    }
}
