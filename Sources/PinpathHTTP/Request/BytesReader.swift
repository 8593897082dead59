/// Reads an in-memory body.
final class BytesReader: BodyReader {
    private let bytes: [UInt8]
    private var offset = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    func read(into buffer: UnsafeMutableRawBufferPointer) throws(HTTPError) -> Int {
        let count = min(buffer.count, bytes.count - offset)
        bytes.withUnsafeBytes { source in
            buffer.baseAddress!.copyMemory(from: source.baseAddress! + offset, byteCount: count)
        }
        offset += count
        return count
    }
}

extension RequestBody {
    /// A reader at the body's first byte: a new pass each time, so that libcurl can send the body again.
    /// - Throws: ``HTTPError`` `unreadableFile` when a streamed file cannot be opened any more.
    func makeReader() throws(HTTPError) -> any BodyReader {
        switch self {
        case .bytes(let bytes): return BytesReader(bytes)
        case .stream(let source): return try source.makeReader()
        }
    }
}
