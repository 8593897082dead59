import FoundationEssentials
import PinpathHTTP

/// Builds an ``SessionRequest`` from a method, a URL and parameters, as AFNetworking's
/// `AFURLRequestSerialization`: ``HTTPRequestSerializer`` (form-urlencoded) and ``JSONRequestSerializer``.
public protocol RequestSerializer: Sendable {
    /// Builds a request; parameters go into the query for GET, HEAD and DELETE and into the body otherwise.
    /// - Parameters:
    ///   - method: The method; ``RequestMethod/encodesParametersInURL`` decides where parameters go.
    ///   - url: An absolute URL, or one relative to `baseURL` (see ``RequestURL/resolve(_:relativeTo:)``).
    ///   - baseURL: The base for relative URLs, or `nil`.
    ///   - parameters: The parameters, or `nil` for none.
    ///   - headers: Header fields to send; a `Content-Type` given here is kept.
    /// - Throws: ``HTTPError`` `invalidURL`, `invalidHeader` (CR or LF in a field) or `invalidBody`.
    func request(
        _ method: RequestMethod, _ url: String, relativeTo baseURL: URL?, parameters: Parameters?, headers: HeaderFields
    ) throws(HTTPError) -> SessionRequest
}

extension RequestSerializer {
    /// Builds a request with no base URL, parameters or extra headers unless given.
    public func request(
        _ method: RequestMethod, _ url: String, relativeTo baseURL: URL? = nil, parameters: Parameters? = nil,
        headers: HeaderFields = HeaderFields()
    ) throws(HTTPError) -> SessionRequest {
        // Every argument given: this calls the conforming type's requirement, not itself.
        try request(method, url, relativeTo: baseURL, parameters: parameters, headers: headers)
    }
}

extension SessionRequest {
    /// A request without a body to the resolved URL, with headers checked for injection.
    init(_ method: RequestMethod, resolving url: String, relativeTo baseURL: URL?, headers: HeaderFields) throws(HTTPError) {
        try headers.validate()
        self.init(method: method, url: try RequestURL.resolve(url, relativeTo: baseURL), headers: headers)
    }

    /// Sets the body with its `Content-Length`, and `contentType` unless the caller chose one.
    mutating func setBody(_ body: RequestBody, contentType: String) {
        if headers["Content-Type"] == nil { headers["Content-Type"] = contentType }
        // Always ours: a length that disagrees with the body would corrupt the connection.
        headers["Content-Length"] = String(body.count)
        self.body = body
    }

    /// `METHOD url`, for error messages.
    var summary: String { "\(method) \(url.absoluteString)" }
}
