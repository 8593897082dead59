import FoundationEssentials

/// What the server answered, with where and how: the address connected to, TLS details and phase timings.
public struct HTTPResponse: Sendable {
    /// The URL of the final response (after redirects).
    public var url: URL
    /// The status code.
    public var statusCode: Int
    /// The header fields of the final response.
    public var headers: HTTPHeaders
    /// The body, decompressed when the server compressed it.
    public var body: [UInt8]
    /// `HTTP/1.1`, `HTTP/2`.
    public var httpVersion: String
    /// The address and port connected to (`127.0.0.1:8443`, `[::1]:443`).
    public var remoteAddress: String?
    /// The TLS session, for https.
    public var tls: TLSDetails?
    /// Where the time went, with blackbox_exporter's boundaries.
    public var timings: PhaseTimings
    /// How many redirects were followed.
    public var redirectCount: Int
    /// For the kinds other than HTTP (whose ``statusCode`` is 0): what the server said, up to 4 KiB: the
    /// greeting and the other response lines of the connect phase (SMTP, IMAP, POP3, FTP), or the bytes a
    /// `tcp://` exchange read (``TCPExchange``). `nil` when nothing was read.
    public var banner: String?

    /// The `Content-Type` without parameters, lowercased (`application/json`).
    public var mimeType: String? {
        guard let value = headers["Content-Type"] else { return nil }
        let type = value.prefix { $0 != ";" }.filter { $0 != " " && $0 != "\t" }
        return type.isEmpty ? nil : type.lowercased()
    }

    public init(
        url: URL, statusCode: Int, headers: HTTPHeaders, body: [UInt8], httpVersion: String = "HTTP/1.1",
        remoteAddress: String? = nil, tls: TLSDetails? = nil, timings: PhaseTimings = PhaseTimings(), redirectCount: Int = 0
    ) {
        self.url = url
        self.statusCode = statusCode
        self.headers = headers
        self.body = body
        self.httpVersion = httpVersion
        self.remoteAddress = remoteAddress
        self.tls = tls
        self.timings = timings
        self.redirectCount = redirectCount
        self.banner = nil
    }
}
