import PinpathHTTP

/// A body to stream made of stretches: bytes in memory and file contents read while sending. A multipart
/// form is its parts' headers between its files; a whole-file body is one file segment.
struct SegmentedBodySource: BodySource {
    /// One stretch of the body.
    enum Segment: Sendable {
        case bytes([UInt8])
        case file(UploadFile)

        var count: Int {
            switch self {
            case .bytes(let bytes): return bytes.count
            case .file(let file): return file.size
            }
        }
    }

    let segments: [Segment]
    /// Computed once, from the sizes the files had when they were added.
    let count: Int

    init(segments: [Segment]) {
        self.segments = segments
        self.count = segments.reduce(0) { $0 + $1.count }
    }

    /// A reader from the first byte; files are opened only when the reader reaches them.
    func makeReader() throws(HTTPError) -> any BodyReader { SegmentedBodyReader(segments: segments) }
}
