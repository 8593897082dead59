import FoundationEssentials

/// How a redirect changes the request, as browsers and libcurl do by default.
enum Redirect {
    /// The request to send after `response`, or `nil` when it is not a redirect to follow.
    static func next(after request: HTTPRequest, response: HTTPResponse) -> HTTPRequest? {
        guard [301, 302, 303, 307, 308].contains(response.statusCode), let location = response.headers["Location"],
            let target = URL(string: location, relativeTo: request.url)?.absoluteURL,
            let scheme = target.scheme?.lowercased(), scheme == "http" || scheme == "https"
        else { return nil }
        var next = request
        next.url = target
        // 303 always, and 301/302 for POST, become a GET without a body; 307 and 308 keep method and body.
        if response.statusCode == 303 && request.method != .head || (response.statusCode <= 302 && request.method == .post) {
            next.method = .get
            next.body = nil
            next.headers["Content-Type"] = nil
            next.headers["Content-Length"] = nil
        }
        // Credentials are for the host they were given to.
        if target.host != request.url.host || target.port != request.url.port || target.scheme != request.url.scheme {
            next.headers["Authorization"] = nil
            next.headers["Cookie"] = nil
        }
        return next
    }
}
