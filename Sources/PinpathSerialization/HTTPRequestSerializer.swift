import FoundationEssentials
import PinpathHTTP

/// AFNetworking's `AFHTTPRequestSerializer`: parameters as a query string, in the URL for GET, HEAD and
/// DELETE and as an `application/x-www-form-urlencoded` body otherwise; multipart/form-data uploads; and a
/// file's bytes as the body.
public struct HTTPRequestSerializer: RequestSerializer {
    /// Creates a serializer.
    public init() {}

    /// Builds a request with ``QueryString`` parameters. A URL that already has a query gets `&`; no
    /// parameters add no `?`; a POST without parameters still gets an empty form body.
    /// - Throws: ``HTTPError`` `invalidURL` or `invalidHeader`.
    public func request(
        _ method: RequestMethod, _ url: String, relativeTo baseURL: URL?, parameters: Parameters?, headers: HeaderFields
    ) throws(HTTPError) -> SessionRequest {
        var request = try SessionRequest(method, resolving: url, relativeTo: baseURL, headers: headers)
        let query = QueryString.encode(parameters ?? [:])
        if method.encodesParametersInURL {
            request.url = RequestURL.appendingQuery(query, to: request.url)
        } else {
            // An empty string is a valid form body (AFNetworking #2864).
            request.setBody(.bytes(Array(query.utf8)), contentType: "application/x-www-form-urlencoded")
        }
        return request
    }

    /// Builds a request whose body is `body` as given (curl's `-d`), whatever the method.
    /// - Parameter contentType: Sent unless `headers` has a `Content-Type`; a form, as curl, by default.
    /// - Throws: ``HTTPError`` `invalidURL` or `invalidHeader`.
    public func request(
        _ method: RequestMethod, _ url: String, relativeTo baseURL: URL? = nil, body: [UInt8],
        contentType: String = "application/x-www-form-urlencoded", headers: HeaderFields = HeaderFields()
    ) throws(HTTPError) -> SessionRequest {
        var request = try SessionRequest(method, resolving: url, relativeTo: baseURL, headers: headers)
        try HeaderFields(dictionaryLiteral: ("Content-Type", contentType)).validate()
        request.setBody(.bytes(body), contentType: contentType)
        return request
    }

    /// Builds a request whose body is the bytes of the file at `path` (AFNetworking's
    /// `uploadTaskWithRequest:fromFile:progress:`, curl's `-T`), streamed from disk while it is sent, never
    /// loaded whole. Follow it with `RequestOptions.progress` to see the bytes sent.
    ///
    /// The file is checked and measured now (the `Content-Length` is its size) and opened again at each send:
    /// it must be a regular file (a FIFO is refused without waiting for a writer), and a file whose size
    /// changed by then, or that grows or shrinks while it is sent, fails the send with `unreadableFile`.
    /// - Parameter contentType: Sent unless `headers` has a `Content-Type`.
    /// - Throws: ``HTTPError`` `unreadableFile` naming the path (missing, no permission, a directory, not a
    ///   regular file); `invalidURL`, `invalidHeader`.
    public func request(
        _ method: RequestMethod = .put, _ url: String, relativeTo baseURL: URL? = nil, bodyFromFile path: String,
        contentType: String = "application/octet-stream", headers: HeaderFields = HeaderFields()
    ) throws(HTTPError) -> SessionRequest {
        var request = try SessionRequest(method, resolving: url, relativeTo: baseURL, headers: headers)
        try HeaderFields(dictionaryLiteral: ("Content-Type", contentType)).validate()
        let file = try UploadFile(path: path, role: "upload file")
        request.setBody(.stream(SegmentedBodySource(segments: [.file(file)])), contentType: contentType)
        return request
    }

    /// Builds a `multipart/form-data` request: `parameters` become text fields (flattened as in a query
    /// string, before the form's own parts), then the parts of `form`, files streamed from disk.
    ///
    /// The `Content-Type` is always the form's, whatever `headers` says, because it carries the boundary.
    /// A form with no parts sends no body, as AFNetworking.
    /// - Throws: ``HTTPError`` `invalidURL`, `invalidHeader`, or `invalidBody` for GET, HEAD and DELETE.
    public func multipartRequest(
        _ method: RequestMethod = .post, _ url: String, relativeTo baseURL: URL? = nil, parameters: Parameters? = nil,
        form: MultipartFormData, headers: HeaderFields = HeaderFields()
    ) throws(HTTPError) -> SessionRequest {
        var request = try SessionRequest(method, resolving: url, relativeTo: baseURL, headers: headers)
        guard !method.encodesParametersInURL else {
            throw HTTPError(.invalidBody, "\(request.summary): a multipart form needs a method with a body (POST, PUT, PATCH)")
        }
        var fields = MultipartFormData(boundary: form.boundary)
        for (name, value) in QueryString.pairs(parameters ?? [:]) { fields.append(name: name, value: value ?? "") }
        let body = fields.appending(contentsOf: form).makeBodySource()
        guard body.count > 0 else { return request }
        request.headers["Content-Type"] = nil
        request.setBody(.stream(body), contentType: form.contentType)
        return request
    }
}
