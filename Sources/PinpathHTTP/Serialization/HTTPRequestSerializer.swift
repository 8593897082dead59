import FoundationEssentials

/// AFNetworking's `AFHTTPRequestSerializer`: parameters as a query string, in the URL for GET, HEAD and
/// DELETE and as an `application/x-www-form-urlencoded` body otherwise.
public struct HTTPRequestSerializer: RequestSerializer {
    /// Creates a serializer.
    public init() {}

    /// Builds a request with ``QueryString`` parameters. A URL that already has a query gets `&`; no
    /// parameters add no `?`; a POST without parameters still gets an empty form body.
    /// - Throws: ``HTTPError`` `invalidURL` or `invalidHeader`.
    public func request(
        _ method: HTTPMethod, _ url: String, relativeTo baseURL: URL?, parameters: Parameters?, headers: HTTPHeaders
    ) throws(HTTPError) -> HTTPRequest {
        var request = try HTTPRequest(method, resolving: url, relativeTo: baseURL, headers: headers)
        let query = QueryString.encode(parameters ?? [:])
        if method.encodesParametersInURL {
            request.url = RequestURL.appendingQuery(query, to: request.url)
        } else {
            // An empty string is a valid form body (AFNetworking #2864).
            request.setBody(.bytes(Array(query.utf8)), contentType: "application/x-www-form-urlencoded")
        }
        return request
    }

}
