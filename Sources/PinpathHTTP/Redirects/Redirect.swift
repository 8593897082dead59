import FoundationEssentials
import PinpathSecurity
import PinpathSupport

/// How a redirect changes the request, as browsers and libcurl do by default, and what it may not change:
/// an https request does not continue over http, and another origin gets neither the caller's headers nor its
/// body.
enum Redirect {
    /// The caller's fields a hop to another origin (scheme, host or port) keeps: they describe the client
    /// and the body, never who the client is; `Range` and `If-Range` too, so that a resumed download
    /// redirected to a mirror keeps its range (they carry no secret). Every other field the caller set, credentials and custom
    /// headers alike, is dropped unless ``RequestOptions/keepsHeadersAcrossOrigins`` (curl's
    /// `--location-trusted`).
    static let headersKeptAcrossOrigins: Set<String> = [
        "accept", "accept-encoding", "accept-language", "user-agent", "content-type", "content-length", "range", "if-range",
    ]

    /// The request to send after `response`, or `nil` when it is not a redirect to follow.
    /// - Throws: ``HTTPError`` `insecureRedirect` (with the response) when an https request is redirected to
    ///   http and ``RequestOptions/allowsInsecureRedirects`` is off: nothing is sent to the http URL;
    ///   `crossOriginBody` when the hop goes to another origin and would send the body again (307, 308, or 301
    ///   and 302 of a method other than POST) and ``RequestOptions/keepsHeadersAcrossOrigins`` is off: a body
    ///   is the caller's as its headers are (a client secret, a token form), and cannot be dropped without
    ///   changing what the request means.
    static func next(after request: SessionRequest, response: SessionResponse, options: RequestOptions) throws(HTTPError) -> SessionRequest?
    {
        guard [301, 302, 303, 307, 308].contains(response.statusCode), let location = response.headers["Location"],
            let target = URL(string: location, relativeTo: request.url)?.absoluteURL,
            URLHost.isWellFormed(inURLText: location),  // as full Foundation parsed it: no space or `|` in a host
            let scheme = target.scheme?.lowercased(), scheme == "http" || scheme == "https"
        else { return nil }
        let downgrade = request.url.scheme?.lowercased() == "https" && scheme == "http"
        if downgrade && !options.allowsInsecureRedirects {
            throw HTTPError(
                .insecureRedirect,
                """
                \(request.method) \(request.displayURL): redirected (\(response.statusCode)) to \
                \(DisplayURL.redacting(target.absoluteString)), which is not https; not followed (allow it explicitly to follow)
                """,
                response: response)
        }
        var next = request
        next.url = target
        // 303 always, and 301/302 for POST, become a GET without a body; 307 and 308 keep method and body.
        if response.statusCode == 303 && request.method != .head || (response.statusCode <= 302 && request.method == .post) {
            next.method = .get
            next.body = nil
            next.headers["Content-Type"] = nil
            next.headers["Content-Length"] = nil
        }
        let sameOrigin =
            target.host.map(HostPattern.canonicalHost) == request.url.host.map(HostPattern.canonicalHost)
            && target.port == request.url.port
            && scheme == request.url.scheme?.lowercased()
        if !sameOrigin, next.body != nil, !options.keepsHeadersAcrossOrigins {
            throw HTTPError(
                .crossOriginBody,
                """
                \(request.method) \(request.displayURL): redirected (\(response.statusCode)) to \
                \(DisplayURL.redacting(target.absoluteString)), another origin, which would receive the request body again; \
                not followed (trust the redirect's target explicitly to follow)
                """,
                response: response)
        }
        if !sameOrigin {
            next.headers = HeaderFields(
                next.headers.filter { field in
                    let name = field.name.lowercased()
                    if downgrade && HeaderFields.isCredential(name) { return false }
                    return options.keepsHeadersAcrossOrigins || headersKeptAcrossOrigins.contains(name)
                })
        }
        return next
    }
}

extension HeaderFields {
    /// The given fields, in order.
    init(_ fields: some Sequence<(name: String, value: String)>) {
        self.init()
        for (name, value) in fields { add(name: name, value: value) }
    }
}
