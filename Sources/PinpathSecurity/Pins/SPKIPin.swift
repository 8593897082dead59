import COpenSSL
import FoundationEssentials

/// A public-key pin: the SHA-256 of a DER SubjectPublicKeyInfo, written `sha256/<base64>` (OkHttp, TrustKit)
/// or `pin-sha256="<base64>"` (RFC 7469).
public struct SPKIPin: Hashable, Sendable, CustomStringConvertible {
    /// The 32 bytes of the SHA-256 digest.
    public let digest: [UInt8]

    /// Parses `sha256/<base64>`, refusing anything whose base64 is not exactly 32 bytes.
    /// - Throws: ``SecurityError`` with code `invalidPin`, naming the text and what was wrong.
    public init(parsing text: String) throws {
        let prefix = "sha256/"
        guard text.hasPrefix(prefix) else {
            throw SecurityError(
                .invalidPin,
                "pin \"\(text)\" does not start with \"sha256/\" (use sha256/<base64 of the SHA-256 of the SubjectPublicKeyInfo>)")
        }
        let encoded = String(text.dropFirst(prefix.count))
        guard let data = Data(base64Encoded: encoded) else {
            throw SecurityError(.invalidPin, "pin \"\(text)\" is not valid base64 after \"sha256/\"")
        }
        guard data.count == 32 else {
            throw SecurityError(.invalidPin, "pin \"\(text)\" decodes to \(data.count) bytes, a SHA-256 pin has 32")
        }
        digest = Array(data)
    }

    /// Hashes DER-encoded SubjectPublicKeyInfo bytes.
    init(subjectPublicKeyInfo der: [UInt8]) {
        var digest = [UInt8](repeating: 0, count: Int(SHA256_DIGEST_LENGTH))
        der.withUnsafeBufferPointer { bytes in
            _ = SHA256(bytes.baseAddress, bytes.count, &digest)
        }
        self.digest = digest
    }

    /// The digest in standard base64 (44 characters).
    public var base64: String { Data(digest).base64EncodedString() }

    /// `sha256/<base64>`, the form ``init(parsing:)`` reads.
    public var description: String { "sha256/\(base64)" }

    /// `pin-sha256="<base64>"`, the form of HPKP headers and RFC 7469 reports.
    public var hpkp: String { "pin-sha256=\"\(base64)\"" }
}
