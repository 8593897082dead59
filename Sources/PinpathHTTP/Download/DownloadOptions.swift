/// How ``Session/download(_:to:options:download:)`` writes a response body to a file.
public struct DownloadOptions: Sendable {
    /// Resume from the partial file an interrupted download of the same URL to the same destination left
    /// (curl's `-C -`): a `Range` request from its length, with `If-Range` set to the validator it was started
    /// under. Without a usable partial file (none, another URL's, no strong validator recorded), the download
    /// starts from the first byte. Off by default: a partial file is then discarded. A GET only (`Range` is
    /// defined for GET alone): set for another method, the download fails with `usage`.
    public var resume = false
    /// The SHA-256 of the whole body, as 64 hexadecimal digits (either case). A body with another digest fails
    /// with ``HTTPError/Code/digestMismatch`` and leaves the destination as it was.
    public var expectedSHA256: String? = nil
    /// Compute the body's SHA-256 for ``DownloadResult/sha256`` even when none is expected. Off by default: it
    /// costs about 0.5 s of CPU per GiB on this kind of machine (OpenSSL with SHA extensions), as much as the
    /// transfer's own work.
    public var computesSHA256 = false
    /// How many times a transfer dropped mid-body reconnects and resumes (`Range` + `If-Range`) before the
    /// download fails. Only when the response carried a strong validator (an `ETag` not marked `W/`, or
    /// `Last-Modified`) and a length. Each reconnection passes the reachability gate and the security policy
    /// in the TLS handshake again, as a first request does. A GET only: another method's request (a PUT with a
    /// file) is never replayed, and its partial file is not kept.
    public var reconnects = 3
    /// The most time the whole download may take, from the call until the file is in place, every transfer
    /// (a reconnection, a redirect) included; past it the download fails with ``HTTPError/Code/timedOut``.
    /// `nil`, the default, sets no total: each transfer's head is then bounded by ``RequestOptions/timeout``
    /// and its body by ``RequestOptions/stallTimeout`` (and ``RequestOptions/bodyTimeout``) only, so a large
    /// file takes what it takes. Given, it also cuts those limits to what is left of it.
    public var timeout: Duration? = nil
    /// Called with the bytes done and expected of the whole file (a resumed part included), at most every
    /// 100 ms and once at the end of each transfer; on the session's libcurl thread: return quickly.
    public var progress: (@Sendable (DownloadProgress) -> Void)? = nil

    /// `text` as ``expectedSHA256`` accepts it, lowercased: exactly 64 hexadecimal digits; `nil` otherwise.
    public static func normalizedSHA256(_ text: String) -> String? { SHA256Digest.normalized(text) }

    /// Options with the defaults: no resume, no digest, 3 reconnections, no total time limit, no progress.
    public init(
        resume: Bool = false, expectedSHA256: String? = nil, computesSHA256: Bool = false, reconnects: Int = 3,
        timeout: Duration? = nil, progress: (@Sendable (DownloadProgress) -> Void)? = nil
    ) {
        self.resume = resume
        self.expectedSHA256 = expectedSHA256
        self.computesSHA256 = computesSHA256
        self.reconnects = reconnects
        self.timeout = timeout
        self.progress = progress
    }
}

/// How far a download has got.
public struct DownloadProgress: Sendable, Equatable {
    /// Bytes of the file done, a resumed part included.
    public var bytes: Int64
    /// The file's length, when the server announced it.
    public var expectedBytes: Int64?

    public init(bytes: Int64, expectedBytes: Int64?) {
        self.bytes = bytes
        self.expectedBytes = expectedBytes
    }
}

/// A download that completed: the file is in place, its length and (when one was given) digest checked.
public struct DownloadResult: Sendable {
    /// The destination, as given.
    public var path: String
    /// The file's length.
    public var bytes: Int64
    /// The file's SHA-256, 64 lowercase hexadecimal digits, when it was computed (``DownloadOptions/expectedSHA256``
    /// or ``DownloadOptions/computesSHA256``).
    public var sha256: String?
    /// The length of the partial file the download resumed from, when it resumed one (by ``DownloadOptions/resume``
    /// or after a reconnection); `nil` when every byte came in one transfer from the start.
    public var resumedFrom: Int64?
    /// Whether a server ignored a range (or its validator no longer matched: the file changed) and the download
    /// started again from the first byte.
    public var restarted: Bool
    /// How many times a dropped transfer was resumed.
    public var reconnections: Int
    /// The last response's head (status, headers, TLS details); its `body` is empty.
    public var response: SessionResponse
}
