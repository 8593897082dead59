/// An HTTP request method. A struct rather than an enum so that any token the server understands can be used.
public struct RequestMethod: RawRepresentable, Hashable, Sendable, CustomStringConvertible, ExpressibleByStringLiteral {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue.uppercased() }
    public init(stringLiteral value: String) { self.init(rawValue: value) }
    public var description: String { rawValue }

    public static let get: RequestMethod = "GET"
    public static let head: RequestMethod = "HEAD"
    public static let post: RequestMethod = "POST"
    public static let put: RequestMethod = "PUT"
    public static let patch: RequestMethod = "PATCH"
    public static let delete: RequestMethod = "DELETE"
    public static let options: RequestMethod = "OPTIONS"

    /// AFNetworking's `HTTPMethodsEncodingParametersInURI`: parameters of these go into the query string.
    public var encodesParametersInURL: Bool { self == .get || self == .head || self == .delete }
}
