import FoundationEssentials
import Glibc
import PinpathSupport

/// What a partial file was started under, kept beside it (`.<name>.pinpath-partial.json`) so that a later
/// resume asks for the same file: the URL's SHA-256 (not the URL, whose query may hold a token), the validator
/// sent back in `If-Range`, and the whole file's length.
///
/// The record is an input on the next run: read only from a regular file (`O_NOFOLLOW`) of at most 4 KiB, this
/// user's own with one link and mode 0600, decoded strictly; a record that is missing, unreadable, another
/// user's, for another URL or with a validator that could not be sent as a header means the partial file is not
/// resumed (it is discarded and the download starts over).
struct PartialRecord: Codable, Equatable, Sendable {
    /// The format's version, 1.
    var version = 1
    /// SHA-256 of the request URL, hexadecimal.
    var urlSHA256: String
    /// The validator for `If-Range`: a strong `ETag` (as sent, quotes included) or a `Last-Modified` date.
    var validator: String
    /// The whole file's length.
    var length: Int64

    enum CodingKeys: String, CodingKey {
        case version
        case urlSHA256 = "url_sha256"
        case validator
        case length
    }

    /// The longest validator kept: ETags are short; one longer is not trusted to be sent back.
    static let maximumValidatorLength = 512
    /// The largest record file read.
    static let maximumFileSize = 4096

    /// The record for a response, or `nil` when it cannot be resumed: no strong validator (an `ETag` marked
    /// `W/` is weak and `If-Range` must not use it, RFC 9110 §13.1.5), or no known length.
    init?(url: String, headers: HeaderFields, length: Int64?) {
        guard let length, length > 0 else { return nil }
        var candidate = headers["Last-Modified"]
        if let etag = headers["ETag"], !etag.isEmpty, !etag.hasPrefix("W/") { candidate = etag }
        guard let validator = candidate, Self.isSendable(validator) else { return nil }
        self.urlSHA256 = Self.digest(of: url)
        self.validator = validator
        self.length = length
    }

    /// Whether `value` can go back to a server in `If-Range`: short, visible ASCII and spaces only.
    static func isSendable(_ value: String) -> Bool {
        !value.isEmpty && value.utf8.count <= maximumValidatorLength && value.utf8.allSatisfy { (0x20...0x7E).contains($0) }
    }

    static func digest(of url: String) -> String {
        let digest = SHA256Digest()
        Array(url.utf8).withUnsafeBytes { digest.update($0) }
        return digest.finish()
    }

    /// Whether this record was made for `url`.
    func matches(url: String) -> Bool { urlSHA256 == Self.digest(of: url) }

    /// Reads the record at `path`; `nil` when it is absent, not a regular file, not this user's own
    /// (``DownloadDestination/foreignness(of:)``), too large or not a record.
    static func read(_ path: String) -> PartialRecord? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0, status.st_mode & S_IFMT == S_IFREG, status.st_size <= maximumFileSize,
            DownloadDestination.foreignness(of: status) == nil
        else {
            return nil
        }
        var bytes = [UInt8](repeating: 0, count: maximumFileSize + 1)
        let count = bytes.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
        guard count > 0, count <= maximumFileSize,
            let record = try? JSONDecoder().decode(PartialRecord.self, from: Data(bytes[..<count])),
            record.version == 1, record.length > 0, isSendable(record.validator), SHA256Digest.normalized(record.urlSHA256) != nil
        else { return nil }
        return record
    }

    /// Writes the record to `path` (through a new file renamed over it, never through a link), synced.
    func write(to path: String) throws(HTTPError) {
        let temporary = path + ".new"
        unlink(temporary)
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard descriptor >= 0 else { throw DownloadDestination.creationFailure(temporary, errno: errno) }
        let text = JSONValue.object([
            ("version", .int(version)), ("url_sha256", .string(urlSHA256)), ("validator", .string(validator)),
            ("length", .int(Int(length))),
        ]).encoded()
        let bytes = Array(text.utf8)
        let written = bytes.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
        let failure = written != bytes.count ? (written < 0 ? errno : ENOSPC) : (fsync(descriptor) == 0 ? 0 : errno)
        close(descriptor)
        guard failure == 0, rename(temporary, path) == 0 else {
            let error = failure == 0 ? errno : failure
            unlink(temporary)
            throw HTTPError(.output, "cannot write \(UntrustedText.escaped(path)): \(DownloadDestination.reason(error))")
        }
    }
}
