import COpenSSL

/// A SHA-256 computed over bytes fed piece by piece (a download's body as it arrives): OpenSSL's `EVP_Digest*`
/// on one `EVP_MD_CTX`, which this class owns and frees.
///
/// Used from one task at a time.
final class SHA256Digest {
    private let context: OpaquePointer

    /// Starts a digest. Wraps `EVP_MD_CTX_new` and `EVP_DigestInit_ex`; OpenSSL fails these only when out of
    /// memory, which is fatal here as for any allocation.
    init() {
        guard let context = EVP_MD_CTX_new(), EVP_DigestInit_ex(context, EVP_sha256(), nil) == 1 else {
            fatalError("OpenSSL could not start a SHA-256 digest")
        }
        self.context = context
    }

    deinit { EVP_MD_CTX_free(context) }

    /// Adds bytes. Wraps `EVP_DigestUpdate`.
    func update(_ bytes: UnsafeRawBufferPointer) {
        guard bytes.count > 0 else { return }
        _ = EVP_DigestUpdate(context, bytes.baseAddress, bytes.count)
    }

    /// The digest of everything added, as 64 lowercase hexadecimal digits; the digest cannot be used after.
    /// Wraps `EVP_DigestFinal_ex`.
    func finish() -> String {
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        _ = EVP_DigestFinal_ex(context, &digest, &length)
        return Self.hex(digest.prefix(Int(length)))
    }

    /// Lowercase hexadecimal digits.
    static func hex(_ bytes: some Sequence<UInt8>) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// `text` as a SHA-256 the caller expects, lowercased: exactly 64 hexadecimal digits, or `nil`.
    static func normalized(_ text: String) -> String? {
        let lowered = text.lowercased()
        guard lowered.utf8.count == 64, lowered.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) })
        else { return nil }
        return lowered
    }
}
