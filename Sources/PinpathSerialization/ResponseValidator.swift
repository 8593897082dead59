import PinpathHTTP

/// Decides whether a response is acceptable, as AFNetworking's `AFHTTPResponseSerializer.validateResponse`:
/// its status code, and its content type when it has a body.
public struct ResponseValidator: Sendable {
    /// The status codes that pass; 200–299 by default.
    public var acceptableStatusCodes: RangeSet<Int>
    /// The MIME types (without parameters, compared without case) that pass, or `nil` for any.
    public var acceptableContentTypes: Set<String>?

    /// Creates a validator.
    /// - Parameters:
    ///   - acceptableStatusCodes: The codes that pass, such as `RangeSet(200..<300)` or
    ///     `RangeSet([200..<300, 304..<305])`.
    ///   - acceptableContentTypes: The MIME types that pass (compared without case), or `nil` for any.
    public init(acceptableStatusCodes: RangeSet<Int> = RangeSet(200..<300), acceptableContentTypes: Set<String>? = nil) {
        self.acceptableStatusCodes = acceptableStatusCodes
        self.acceptableContentTypes = acceptableContentTypes
    }

    /// Checks the status code, then the content type; a content type that does not match is an error only
    /// when the body is not empty (a 204, or a 205 with no body, passes whatever its `Content-Type`).
    /// - Throws: ``HTTPError`` `unexpectedStatus` or `unexpectedContentType`, carrying the response (and
    ///   so its body).
    public func validate(_ response: SessionResponse) throws(HTTPError) {
        guard acceptableStatusCodes.contains(response.statusCode) else {
            throw HTTPError(
                .unexpectedStatus,
                """
                \(response.url.absoluteString): status \(response.statusCode) is not acceptable (expected \
                \(Self.describe(acceptableStatusCodes)))
                """,
                response: response)
        }
        if let acceptableContentTypes, !response.body.isEmpty,
            !acceptableContentTypes.contains(where: { $0.lowercased() == response.mimeType })
        {
            let found = response.mimeType.map { "content type \($0)" } ?? "a body without a content type"
            throw HTTPError(
                .unexpectedContentType,
                """
                \(response.url.absoluteString): \(found) is not acceptable (expected \
                \(acceptableContentTypes.sorted().joined(separator: ", ")))
                """,
                response: response)
        }
    }

    /// `200-299, 304` for messages.
    private static func describe(_ codes: RangeSet<Int>) -> String {
        codes.ranges.map { $0.count == 1 ? "\($0.lowerBound)" : "\($0.lowerBound)-\($0.upperBound - 1)" }.joined(separator: ", ")
    }
}
