import FoundationEssentials

/// One HTTP request as the transport sends it: serializers build it, the ``Session`` sends it. A URL of
/// another ``ServiceKind`` (`tls://`, `tcp://`, `smtp://`…) is a connection check: method, headers and body
/// are not sent.
public struct SessionRequest: Sendable {
    /// The method.
    public var method: RequestMethod
    /// The absolute URL, query included: http or https, or another ``ServiceKind``'s scheme.
    public var url: URL
    /// The header fields; `Content-Type` and `Content-Length` for the body are set by the serializer.
    public var headers: HeaderFields
    /// The body, if any.
    public var body: RequestBody?

    public init(method: RequestMethod, url: URL, headers: HeaderFields = HeaderFields(), body: RequestBody? = nil) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
    }
}

extension SessionRequest {
    /// The URL as messages and events show it: without credentials, query string or fragment, which may
    /// carry secrets (``DisplayURL/redacting(_:)``).
    public var displayURL: String { DisplayURL.redacting(url.absoluteString) }

    /// What the URL's scheme asks for; `nil` for a scheme the core does not send.
    public var kind: ServiceKind? { ServiceKind(scheme: url.scheme) }
}

extension URL {
    /// The host, percent-decoded (`host(percentEncoded: false)`); `nil` when there is none or it does not decode.
    /// Most hosts have nothing to decode, and decoding costs more than the rest of a request's setup.
    var decodedHost: String? {
        guard var host = host(percentEncoded: true) else { return nil }
        // Searched as contiguous bytes: a search of the UTF-8 view steps through the String one byte at a time.
        return host.withUTF8 { $0.contains(UInt8(ascii: "%")) } ? self.host(percentEncoded: false) : host
    }
}
