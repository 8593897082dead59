/// A request body: bytes in memory, or a stream read while sending (files are never loaded whole).
public enum RequestBody: Sendable {
    /// The bytes to send.
    case bytes([UInt8])
    /// A source read in chunks while sending.
    case stream(any BodySource)

    /// The number of bytes that will be sent.
    public var count: Int {
        switch self {
        case .bytes(let bytes): return bytes.count
        case .stream(let source): return source.count
        }
    }
}

/// A body produced while it is sent: libcurl's read callback pulls from it on the transport's thread.
///
/// Each send calls ``makeReader()`` afresh, so a body can be sent again (a redirect that keeps the method,
/// a retry) from the start.
public protocol BodySource: Sendable {
    /// The exact number of bytes the readers produce (sent as `Content-Length`).
    var count: Int { get }
    /// A reader positioned at the first byte.
    /// - Throws: ``HTTPError`` `unreadableFile` when a file cannot be opened any more.
    func makeReader() throws(HTTPError) -> any BodyReader
}

/// Reads one pass over a ``BodySource``. Used from one thread at a time.
public protocol BodyReader: AnyObject {
    /// Fills up to `buffer.count` bytes and returns how many; 0 at the end.
    /// - Throws: ``HTTPError`` `unreadableFile` when a file fails mid-read (it shrank, an I/O error).
    func read(into buffer: UnsafeMutableRawBufferPointer) throws(HTTPError) -> Int
}
