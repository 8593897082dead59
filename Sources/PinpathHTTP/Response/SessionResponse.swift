import FoundationEssentials

/// What the server answered, with where and how: the address connected to, TLS details and phase timings.
public struct SessionResponse: Sendable {
    /// The URL of the final response (after redirects).
    public var url: URL {
        get { storage.url }
        _modify { yield &writableStorage.url }
    }
    /// The status code.
    public var statusCode: Int {
        get { storage.statusCode }
        _modify { yield &writableStorage.statusCode }
    }
    /// The header fields of the final response.
    public var headers: HeaderFields {
        get { storage.headers }
        _modify { yield &writableStorage.headers }
    }
    /// The body, decompressed when the server compressed it.
    public var body: [UInt8] {
        get { storage.body }
        _modify { yield &writableStorage.body }
    }
    /// `HTTP/1.1`, `HTTP/2`.
    public var httpVersion: String {
        get { storage.httpVersion }
        _modify { yield &writableStorage.httpVersion }
    }
    /// The address and port connected to (`127.0.0.1:8443`, `[::1]:443`).
    public var remoteAddress: String? {
        get { storage.remoteAddress }
        _modify { yield &writableStorage.remoteAddress }
    }
    /// The TLS session, for https.
    public var tls: TLSDetails? {
        get { storage.tls }
        _modify { yield &writableStorage.tls }
    }
    /// Where the time went, with blackbox_exporter's boundaries.
    public var timings: PhaseTimings {
        get { storage.timings }
        _modify { yield &writableStorage.timings }
    }
    /// How many redirects were followed.
    public var redirectCount: Int {
        get { storage.redirectCount }
        _modify { yield &writableStorage.redirectCount }
    }
    /// For the kinds other than HTTP (whose ``statusCode`` is 0): what the server said, up to 4 KiB: the
    /// greeting and the other response lines of the connect phase (SMTP, IMAP, POP3, FTP), or the bytes a
    /// `tcp://` exchange read (``TCPExchange``). `nil` when nothing was read.
    public var banner: String? {
        get { storage.banner }
        _modify { yield &writableStorage.banner }
    }

    /// The fields, in one box: a response passes through several hands (the engine's completion, the task's
    /// continuation, the redirect loop, the serializers), and a copy then costs one retain instead of one per
    /// field. `@unchecked Sendable`: a box is written only while one response holds it (copy on write).
    /// Its variables are `@exclusivity(unchecked)`: each is reached only through the accessors above, which never
    /// overlap, and the run-time check cost more than most reads.
    private final class Storage: @unchecked Sendable {
        @exclusivity(unchecked) var url: URL
        @exclusivity(unchecked) var statusCode: Int
        @exclusivity(unchecked) var headers: HeaderFields
        @exclusivity(unchecked) var body: [UInt8]
        @exclusivity(unchecked) var httpVersion: String
        @exclusivity(unchecked) var remoteAddress: String?
        @exclusivity(unchecked) var tls: TLSDetails?
        @exclusivity(unchecked) var timings: PhaseTimings
        @exclusivity(unchecked) var redirectCount: Int
        @exclusivity(unchecked) var banner: String?

        init(
            url: URL, statusCode: Int, headers: HeaderFields, body: [UInt8], httpVersion: String, remoteAddress: String?,
            tls: TLSDetails?, timings: PhaseTimings, redirectCount: Int, banner: String?
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
            self.banner = banner
        }

        func copy() -> Storage {
            Storage(
                url: url, statusCode: statusCode, headers: headers, body: body, httpVersion: httpVersion, remoteAddress: remoteAddress,
                tls: tls, timings: timings, redirectCount: redirectCount, banner: banner)
        }
    }

    private var storage: Storage

    private var writableStorage: Storage {
        mutating get {
            if !isKnownUniquelyReferenced(&storage) { storage = storage.copy() }
            return storage
        }
    }

    /// The `Content-Type` without parameters, lowercased (`application/json`).
    public var mimeType: String? {
        guard let value = headers["Content-Type"] else { return nil }
        let type = value.prefix { $0 != ";" }.filter { $0 != " " && $0 != "\t" }
        return type.isEmpty ? nil : type.lowercased()
    }

    public init(
        url: URL, statusCode: Int, headers: HeaderFields, body: [UInt8], httpVersion: String = "HTTP/1.1",
        remoteAddress: String? = nil, tls: TLSDetails? = nil, timings: PhaseTimings = PhaseTimings(), redirectCount: Int = 0
    ) {
        storage = Storage(
            url: url, statusCode: statusCode, headers: headers, body: body, httpVersion: httpVersion, remoteAddress: remoteAddress,
            tls: tls, timings: timings, redirectCount: redirectCount, banner: nil)
    }
}
