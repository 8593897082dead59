import FoundationEssentials
import PinpathSecurity

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
    }
}

/// The negotiated TLS session and what the server presented.
public struct TLSDetails: Sendable {
    /// `TLSv1.3`.
    public var version: String
    /// `TLS_AES_256_GCM_SHA384`.
    public var cipher: String
    /// The security policy's evaluation of this connection's handshake: the served and verified chains, and
    /// a report-only pin failure that let the connection through. `nil` on a reused connection.
    public var evaluation: TrustEvaluation?

    public init(version: String, cipher: String, evaluation: TrustEvaluation? = nil) {
        self.version = version
        self.cipher = cipher
        self.evaluation = evaluation
    }

    /// The SPKI pins of the chain OpenSSL verified, leaf first.
    public var verifiedChainPins: [String] { evaluation?.verifiedChain.map(\.spkiPin.description) ?? [] }
}

/// Time spent in each phase of one request, as blackbox_exporter splits it: resolve, connect (TCP), tls
/// (handshake), processing (request sent → first response byte), transfer (first byte → last). Seconds.
public struct PhaseTimings: Sendable, Equatable {
    public var resolve: Double = 0
    public var connect: Double = 0
    public var tls: Double = 0
    public var processing: Double = 0
    public var transfer: Double = 0
    /// The whole request, redirects included.
    public var total: Double = 0

    public init() {}
}
