import COpenSSL
import FoundationEssentials

/// A public-key pin: the SHA-256 of a DER SubjectPublicKeyInfo, written `sha256/<base64>` (OkHttp, TrustKit),
/// `sha256//<base64>` (curl) or `pin-sha256="<base64>"` (RFC 7469).
public struct SPKIPin: Hashable, Sendable, CustomStringConvertible {
    /// The 32 bytes of the SHA-256 digest.
    public let digest: [UInt8]

    /// The spellings a pin is read in: pinpath's and OkHttp's, curl's `--pinnedpubkey`, and HPKP's.
    static let spellings: [(prefix: String, suffix: String)] = [("sha256//", ""), ("sha256/", ""), ("pin-sha256=\"", "\"")]

    /// Parses a pin in any of its three spellings: `sha256/<base64>` (OkHttp, TrustKit, `pinpath pins`),
    /// `sha256//<base64>` (curl's `--pinnedpubkey`) and `pin-sha256="<base64>"` (HPKP, RFC 7469), refusing
    /// anything whose base64 is not exactly 32 bytes. It is written back as `sha256/<base64>`.
    /// - Throws: ``SecurityError`` with code `invalidPin`, naming the text and what was wrong.
    public init(parsing text: String) throws {
        // `sha256//…` is also `sha256/` followed by base64 that starts with `/`: each spelling the text fits is
        // tried, and the first that gives 32 bytes wins.
        let fitting = Self.spellings.filter {
            text.hasPrefix($0.prefix) && text.hasSuffix($0.suffix) && text.count >= $0.prefix.count + $0.suffix.count
        }
        guard !fitting.isEmpty else {
            throw SecurityError(
                .invalidPin,
                """
                pin "\(text)" is not sha256/<base64>, sha256//<base64> or pin-sha256="<base64>" (the base64 of the \
                SHA-256 of the SubjectPublicKeyInfo)
                """)
        }
        var firstProblem: String?
        for spelling in fitting {
            let encoded = String(text.dropFirst(spelling.prefix.count).dropLast(spelling.suffix.count))
            guard let data = Data(base64Encoded: encoded) else {
                firstProblem = firstProblem ?? "is not valid base64 after \"\(spelling.prefix)\""
                continue
            }
            guard data.count == 32 else {
                firstProblem = firstProblem ?? "decodes to \(data.count) bytes, a SHA-256 pin has 32"
                continue
            }
            digest = Array(data)
            return
        }
        throw SecurityError(.invalidPin, "pin \"\(text)\" \(firstProblem ?? "is not a pin")")
    }

    /// Whether `text` starts like a pin in one of the spellings ``init(parsing:)`` reads.
    static func looksLikePin(_ text: some StringProtocol) -> Bool {
        spellings.contains { text.hasPrefix($0.prefix) }
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

    /// `sha256/<base64>`, the spelling pinpath writes.
    public var description: String { "sha256/\(base64)" }

    /// `pin-sha256="<base64>"`, the form of HPKP headers and RFC 7469 reports.
    public var hpkp: String { "pin-sha256=\"\(base64)\"" }
}
