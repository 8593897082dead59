import PinpathHTTP

/// The parts of a `multipart/form-data` body (RFC 7578): text fields and files, files read from disk only
/// while the body is sent.
///
/// Build it with ``append(name:value:)`` and ``appendFile(name:path:filename:contentType:)``, then give it to
/// ``HTTPRequestSerializer/multipartRequest(_:_:relativeTo:parameters:form:headers:)``.
public struct MultipartFormData: Sendable {
    enum Part: Sendable {
        case field(name: String, value: String)
        case file(name: String, filename: String, contentType: String, file: UploadFile)
    }

    /// The boundary between parts: `Boundary+` and 16 random hexadecimal digits, as AFNetworking.
    public let boundary: String
    private var parts: [Part] = []

    /// An empty form with a random boundary.
    public init() {
        self.init(boundary: "Boundary+" + (0..<2).map { _ in Self.hex(UInt32.random(in: .min ... .max)) }.joined())
    }

    /// An empty form with the given boundary (tests, and keeping a boundary while adding fields).
    init(boundary: String) { self.boundary = boundary }

    /// The request's `Content-Type`: `multipart/form-data; boundary=…`.
    public var contentType: String { "multipart/form-data; boundary=\(boundary)" }

    /// Adds a text field.
    public mutating func append(name: String, value: String) {
        parts.append(.field(name: name, value: value))
    }

    /// Adds a file part, checking now that the file can be read and taking its size.
    /// - Parameters:
    ///   - name: The field name.
    ///   - path: The file to upload. It is opened again and streamed when the request is sent.
    ///   - filename: The name the server sees; the last path component by default.
    ///   - contentType: The part's type; guessed from the extension by default, else `application/octet-stream`.
    /// - Throws: ``HTTPError`` `unreadableFile` naming the path (missing, no permission, a directory, not a
    ///   regular file); `invalidHeader` when `contentType` contains CR or LF.
    public mutating func appendFile(name: String, path: String, filename: String? = nil, contentType: String? = nil) throws(HTTPError) {
        let filename = filename ?? String(path.split(separator: "/").last ?? Substring(path))
        let type = contentType ?? Self.guessContentType(filename: filename)
        try HeaderFields(dictionaryLiteral: ("Content-Type", type)).validate()
        parts.append(.file(name: name, filename: filename, contentType: type, file: try UploadFile(path: path)))
    }

    /// This form followed by the parts of `other`, with this form's boundary.
    func appending(contentsOf other: MultipartFormData) -> MultipartFormData {
        var combined = self
        combined.parts += other.parts
        return combined
    }

    /// The body: each part's headers as bytes, files by reference. No parts give an empty body.
    func makeBodySource() -> SegmentedBodySource {
        var segments: [SegmentedBodySource.Segment] = []
        for (index, part) in parts.enumerated() {
            // The first delimiter has no CRLF before it; the others end the previous part's content.
            var head = (index == 0 ? "" : "\r\n") + "--\(boundary)\r\n"
            switch part {
            case .field(let name, let value):
                head += "Content-Disposition: form-data; name=\"\(Self.quoted(name))\"\r\n\r\n"
                segments.append(.bytes(Array((head + value).utf8)))
            case .file(let name, let filename, let contentType, let file):
                head += "Content-Disposition: form-data; name=\"\(Self.quoted(name))\"; filename=\"\(Self.quoted(filename))\"\r\n"
                head += "Content-Type: \(contentType)\r\n\r\n"
                segments += [.bytes(Array(head.utf8)), .file(file)]
            }
        }
        if !parts.isEmpty { segments.append(.bytes(Array("\r\n--\(boundary)--\r\n".utf8))) }
        return SegmentedBodySource(segments: segments)
    }

    /// A name or file name inside a quoted header parameter, escaped as browsers do (WHATWG HTML
    /// "multipart/form-data encoding"): a quote or a line break must not end the parameter or the header.
    private static func quoted(_ text: String) -> String {
        // By scalar: "\r\n" is one Character, so replacing Characters would miss it.
        var escaped = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": escaped += "%22".unicodeScalars
            case "\r": escaped += "%0D".unicodeScalars
            case "\n": escaped += "%0A".unicodeScalars
            default: escaped.append(scalar)
            }
        }
        return String(escaped)
    }

    private static let contentTypes: [String: String] = [
        "txt": "text/plain", "text": "text/plain", "log": "text/plain", "html": "text/html", "htm": "text/html",
        "css": "text/css", "csv": "text/csv", "js": "text/javascript", "json": "application/json",
        "xml": "application/xml", "yaml": "application/yaml", "yml": "application/yaml", "pdf": "application/pdf",
        "zip": "application/zip", "gz": "application/gzip", "tar": "application/x-tar", "png": "image/png",
        "jpg": "image/jpeg", "jpeg": "image/jpeg", "gif": "image/gif", "svg": "image/svg+xml", "webp": "image/webp",
        "pem": "application/x-pem-file", "crt": "application/x-x509-ca-cert", "der": "application/x-x509-ca-cert",
    ]

    /// The type for a file name's extension, else `application/octet-stream`.
    static func guessContentType(filename: String) -> String {
        guard let dot = filename.lastIndex(of: "."), dot != filename.startIndex else { return "application/octet-stream" }
        return contentTypes[filename[filename.index(after: dot)...].lowercased()] ?? "application/octet-stream"
    }

    private static func hex(_ value: UInt32) -> String {
        let digits = String(value, radix: 16, uppercase: true)
        return String(repeating: "0", count: 8 - digits.count) + digits
    }
}
