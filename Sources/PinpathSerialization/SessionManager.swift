import FoundationEssentials
import PinpathHTTP

/// AFNetworking's `AFHTTPSessionManager` over a gated ``Session``: a method, a URL (relative to the base URL)
/// and parameters, serialized by the request serializer and checked by the response validator.
///
/// The session does the sending (both gates, the policies, redirects, timeouts); the manager only builds
/// requests and judges answers, so any number of managers may share one session.
public struct SessionManager: Sendable {
    /// The session that sends the requests.
    public let session: Session
    /// Relative URLs resolve against this; a base path gets a trailing slash (AFNetworking's rule), so
    /// `v1` + `users` is `v1/users` (``RequestURL/resolve(_:relativeTo:)``).
    public var baseURL: URL?
    /// Builds requests from parameters: form-urlencoded by default, or ``JSONRequestSerializer``.
    public var requestSerializer: any RequestSerializer
    /// Checks the responses of the method-named calls (`get`, `post`…): status 200–299 by default.
    public var responseValidator: ResponseValidator

    /// Creates a manager that sends through `session`.
    public init(
        session: Session, baseURL: URL? = nil, requestSerializer: any RequestSerializer = HTTPRequestSerializer(),
        responseValidator: ResponseValidator = ResponseValidator()
    ) {
        self.session = session
        self.baseURL = baseURL
        self.requestSerializer = requestSerializer
        self.responseValidator = responseValidator
    }

    /// A GET; parameters go into the query string.
    public func get(
        _ url: String, parameters: Parameters? = nil, headers: HeaderFields = HeaderFields(), options: RequestOptions? = nil
    ) async throws(HTTPError) -> SessionResponse {
        try await request(.get, url, parameters: parameters, headers: headers, options: options)
    }

    /// A HEAD; parameters go into the query string.
    public func head(
        _ url: String, parameters: Parameters? = nil, headers: HeaderFields = HeaderFields(), options: RequestOptions? = nil
    ) async throws(HTTPError) -> SessionResponse {
        try await request(.head, url, parameters: parameters, headers: headers, options: options)
    }

    /// A POST; parameters go into the body (form-urlencoded, or JSON with ``JSONRequestSerializer``).
    public func post(
        _ url: String, parameters: Parameters? = nil, headers: HeaderFields = HeaderFields(), options: RequestOptions? = nil
    ) async throws(HTTPError) -> SessionResponse {
        try await request(.post, url, parameters: parameters, headers: headers, options: options)
    }

    /// A PUT; parameters go into the body.
    public func put(
        _ url: String, parameters: Parameters? = nil, headers: HeaderFields = HeaderFields(), options: RequestOptions? = nil
    ) async throws(HTTPError) -> SessionResponse {
        try await request(.put, url, parameters: parameters, headers: headers, options: options)
    }

    /// A PATCH; parameters go into the body.
    public func patch(
        _ url: String, parameters: Parameters? = nil, headers: HeaderFields = HeaderFields(), options: RequestOptions? = nil
    ) async throws(HTTPError) -> SessionResponse {
        try await request(.patch, url, parameters: parameters, headers: headers, options: options)
    }

    /// A DELETE; parameters go into the query string.
    public func delete(
        _ url: String, parameters: Parameters? = nil, headers: HeaderFields = HeaderFields(), options: RequestOptions? = nil
    ) async throws(HTTPError) -> SessionResponse {
        try await request(.delete, url, parameters: parameters, headers: headers, options: options)
    }

    /// A `multipart/form-data` upload (POST by default): `parameters` as text fields, then the form's parts,
    /// files streamed from disk.
    public func upload(
        _ url: String, method: RequestMethod = .post, parameters: Parameters? = nil, form: MultipartFormData,
        headers: HeaderFields = HeaderFields(), options: RequestOptions? = nil
    ) async throws(HTTPError) -> SessionResponse {
        let request = try HTTPRequestSerializer().multipartRequest(
            method, url, relativeTo: baseURL, parameters: parameters, form: form, headers: headers)
        return try await validated(request, options: options)
    }

    /// Any method, serialized by the request serializer.
    /// - Throws: ``HTTPError``: serialization errors, everything `Session.send(_:options:)` throws, and
    ///   `unexpectedStatus` / `unexpectedContentType` (with the response) from the response validator.
    public func request(
        _ method: RequestMethod, _ url: String, parameters: Parameters? = nil, headers: HeaderFields = HeaderFields(),
        options: RequestOptions? = nil
    ) async throws(HTTPError) -> SessionResponse {
        let request = try requestSerializer.request(method, url, relativeTo: baseURL, parameters: parameters, headers: headers)
        return try await validated(request, options: options)
    }

    /// Sends a request through the session and checks its response with the validator.
    public func validated(_ request: SessionRequest, options: RequestOptions? = nil) async throws(HTTPError) -> SessionResponse {
        let response = try await session.send(request, options: options)
        try responseValidator.validate(response)
        return response
    }
}
