import FoundationEssentials
import PinpathHTTP
import PinpathSupport

/// AFNetworking's `AFJSONRequestSerializer`: parameters as an `application/json` body, except for GET, HEAD
/// and DELETE, whose parameters go into the query string as with ``HTTPRequestSerializer``.
public struct JSONRequestSerializer: RequestSerializer {
    /// How `JSONEncoder` writes bodies. Sorted keys make bodies repeatable (logs, tests, caches).
    public var outputFormatting: JSONEncoder.OutputFormatting

    /// Creates a serializer writing compact JSON with sorted keys and unescaped slashes.
    public init(outputFormatting: JSONEncoder.OutputFormatting = [.sortedKeys, .withoutEscapingSlashes]) {
        self.outputFormatting = outputFormatting
    }

    /// Builds a request whose body is `parameters` as a JSON object (`{"key":"value"}`); no parameters
    /// send no body. For GET, HEAD and DELETE the parameters go into the query string instead.
    /// - Throws: ``HTTPError`` `invalidURL`, `invalidHeader`, or `invalidBody` for NaN or an infinity.
    public func request(
        _ method: RequestMethod, _ url: String, relativeTo baseURL: URL?, parameters: Parameters?, headers: HeaderFields
    ) throws(HTTPError) -> SessionRequest {
        if method.encodesParametersInURL {
            return try HTTPRequestSerializer().request(method, url, relativeTo: baseURL, parameters: parameters, headers: headers)
        }
        guard let parameters else { return try SessionRequest(method, resolving: url, relativeTo: baseURL, headers: headers) }
        return try request(method, url, relativeTo: baseURL, json: JSONValue.object(parameters), headers: headers)
    }

    /// Builds a request whose body is `value` encoded as JSON, whatever the method (the caller asked for a body).
    /// - Throws: ``HTTPError`` `invalidURL`, `invalidHeader`, or `invalidBody` when `value` cannot be encoded
    ///   (NaN, an infinity, an encoder that throws), with the coding path.
    public func request(
        _ method: RequestMethod, _ url: String, relativeTo baseURL: URL? = nil, json value: some Encodable,
        headers: HeaderFields = HeaderFields()
    ) throws(HTTPError) -> SessionRequest {
        var request = try SessionRequest(method, resolving: url, relativeTo: baseURL, headers: headers)
        let encoder = JSONEncoder()
        encoder.outputFormatting = outputFormatting
        let data: Data
        do {
            data = try encoder.encode(value)
        } catch {
            throw HTTPError(.invalidBody, "\(request.summary): the JSON body cannot be encoded: \(Self.describe(error))")
        }
        request.setBody(.bytes(Array(data)), contentType: "application/json")
        return request
    }

    /// Builds a request whose body is `text`, sent as given once it is checked to be JSON (RFC 8259, strictly:
    /// no trailing commas, no comments), whatever the method.
    /// - Throws: ``HTTPError`` `invalidURL`, `invalidHeader`, or `invalidBody` naming the line and column of
    ///   the first mistake.
    public func request(
        _ method: RequestMethod, _ url: String, relativeTo baseURL: URL? = nil, jsonText text: String,
        headers: HeaderFields = HeaderFields()
    ) throws(HTTPError) -> SessionRequest {
        var request = try SessionRequest(method, resolving: url, relativeTo: baseURL, headers: headers)
        let bytes = Array(text.utf8)
        do {
            _ = try JSONParser.parse(bytes)
        } catch {
            throw HTTPError(.invalidBody, "\(request.summary): the JSON body is not valid JSON: \(error)")
        }
        request.setBody(.bytes(bytes), contentType: "application/json")
        return request
    }

    /// `EncodingError`'s own text, with where in the value it happened.
    private static func describe(_ error: any Error) -> String {
        guard case EncodingError.invalidValue(_, let context) = error else { return "\(error)" }
        let path = context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined()
        return path.isEmpty ? context.debugDescription : "\(context.debugDescription) (at \(path))"
    }
}
