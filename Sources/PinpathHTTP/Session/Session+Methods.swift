import FoundationEssentials

/// AFHTTPSessionManager's calls: a method, a URL (relative to the base URL) and parameters, serialized by the
/// session's request serializer and validated by its response validator.
extension Session {
    /// A GET; parameters go into the query string.
    public func get(
        _ url: String, parameters: Parameters? = nil, headers: HTTPHeaders = HTTPHeaders(), options: RequestOptions? = nil
    ) async throws(HTTPError) -> HTTPResponse {
        try await request(.get, url, parameters: parameters, headers: headers, options: options)
    }

    /// A HEAD; parameters go into the query string.
    public func head(
        _ url: String, parameters: Parameters? = nil, headers: HTTPHeaders = HTTPHeaders(), options: RequestOptions? = nil
    ) async throws(HTTPError) -> HTTPResponse {
        try await request(.head, url, parameters: parameters, headers: headers, options: options)
    }

    /// A POST; parameters go into the body (form-urlencoded, or JSON with ``JSONRequestSerializer``).
    public func post(
        _ url: String, parameters: Parameters? = nil, headers: HTTPHeaders = HTTPHeaders(), options: RequestOptions? = nil
    ) async throws(HTTPError) -> HTTPResponse {
        try await request(.post, url, parameters: parameters, headers: headers, options: options)
    }

    /// A PUT; parameters go into the body.
    public func put(
        _ url: String, parameters: Parameters? = nil, headers: HTTPHeaders = HTTPHeaders(), options: RequestOptions? = nil
    ) async throws(HTTPError) -> HTTPResponse {
        try await request(.put, url, parameters: parameters, headers: headers, options: options)
    }

    /// A PATCH; parameters go into the body.
    public func patch(
        _ url: String, parameters: Parameters? = nil, headers: HTTPHeaders = HTTPHeaders(), options: RequestOptions? = nil
    ) async throws(HTTPError) -> HTTPResponse {
        try await request(.patch, url, parameters: parameters, headers: headers, options: options)
    }

    /// A DELETE; parameters go into the query string.
    public func delete(
        _ url: String, parameters: Parameters? = nil, headers: HTTPHeaders = HTTPHeaders(), options: RequestOptions? = nil
    ) async throws(HTTPError) -> HTTPResponse {
        try await request(.delete, url, parameters: parameters, headers: headers, options: options)
    }

    /// A `multipart/form-data` upload (POST by default): `parameters` as text fields, then the form's parts,
    /// files streamed from disk.
    public func upload(
        _ url: String, method: HTTPMethod = .post, parameters: Parameters? = nil, form: MultipartFormData,
        headers: HTTPHeaders = HTTPHeaders(), options: RequestOptions? = nil
    ) async throws(HTTPError) -> HTTPResponse {
        let request = try HTTPRequestSerializer().multipartRequest(
            method, url, relativeTo: configuration.baseURL, parameters: parameters, form: form, headers: headers)
        return try await validated(request, options: options)
    }

    /// Any method, serialized by the session's request serializer.
    /// - Throws: ``HTTPError``: serialization errors, everything ``send(_:options:)`` throws, and
    ///   `unexpectedStatus` / `unexpectedContentType` (with the response) from the response validator.
    public func request(
        _ method: HTTPMethod, _ url: String, parameters: Parameters? = nil, headers: HTTPHeaders = HTTPHeaders(),
        options: RequestOptions? = nil
    ) async throws(HTTPError) -> HTTPResponse {
        let request = try configuration.requestSerializer.request(
            method, url, relativeTo: configuration.baseURL, parameters: parameters, headers: headers)
        return try await validated(request, options: options)
    }

    /// Sends a request and checks its response with the session's validator.
    public func validated(_ request: HTTPRequest, options: RequestOptions? = nil) async throws(HTTPError) -> HTTPResponse {
        let response = try await send(request, options: options)
        try configuration.responseValidator.validate(response)
        return response
    }
}
