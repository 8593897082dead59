import COpenSSL

/// A public key, or the public half of a private key. Owns an OpenSSL `EVP_PKEY` reference.
///
/// `@unchecked Sendable` because the key is only read after loading, and reading an `EVP_PKEY`
/// (encoding, type, size) is thread-safe in OpenSSL 3.
public final class PublicKey: @unchecked Sendable, CustomStringConvertible {
    let key: OpaquePointer

    /// Takes ownership of one reference to `key`.
    init(owning key: OpaquePointer) {
        self.key = key
    }

    deinit { EVP_PKEY_free(key) }

    /// The pin of the DER SubjectPublicKeyInfo. Wraps `i2d_PUBKEY`, which encodes only the public half.
    public var spkiPin: SPKIPin {
        // An encoding failure (allocation only) leaves an empty digest, which matches no pin.
        SPKIPin(subjectPublicKeyInfo: derEncoding { i2d_PUBKEY(key, $0) } ?? [])
    }

    /// The algorithm and size as certificate tools show them: `RSA 2048`, `EC P-256`, `Ed25519`.
    public var keyType: String {
        let (name, bits, curve) = algorithm
        if let curve { return "\(name) \(curve)" }
        return bits.map { "\(name) \($0)" } ?? name
    }

    /// The algorithm and size with the unit, as `pinpath pins` labels keys: `RSA 2048-bit`, `EC P-256`, `Ed25519`.
    public var description: String {
        let (name, bits, curve) = algorithm
        if let curve { return "\(name) \(curve)" }
        return bits.map { "\(name) \($0)-bit" } ?? name
    }

    /// The algorithm's name, its size in bits where the size is the key's strength (RSA, DSA, an EC curve
    /// OpenSSL cannot name), and the curve's name.
    private var algorithm: (name: String, bits: Int32?, curve: String?) {
        let type = EVP_PKEY_get0_type_name(key).map { String(cString: $0) } ?? "unknown"
        switch type {
        case "RSA", "RSA-PSS", "DSA":
            return (type, EVP_PKEY_get_bits(key), nil)
        case "EC":
            var buffer = [CChar](repeating: 0, count: 64)
            var length = 0
            guard EVP_PKEY_get_group_name(key, &buffer, buffer.count, &length) == 1 else {
                _ = drainOpenSSLErrors()
                return ("EC", EVP_PKEY_get_bits(key), nil)
            }
            let group = String(decoding: buffer.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
            // NIST names are what people pin by; OpenSSL reports the SEC/X9.62 names.
            let nist = ["prime256v1": "P-256", "secp384r1": "P-384", "secp521r1": "P-521"]
            return ("EC", nil, nist[group] ?? group)
        case "ED25519": return ("Ed25519", nil, nil)
        case "ED448": return ("Ed448", nil, nil)
        default: return (type, nil, nil)
        }
    }
}
