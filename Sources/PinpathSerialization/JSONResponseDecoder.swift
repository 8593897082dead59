import FoundationEssentials
import PinpathHTTP
import PinpathSupport

/// AFNetworking's `AFJSONResponseSerializer`: validates a response, then decodes its JSON body.
public struct JSONResponseDecoder: Sendable {
    /// The content types a JSON response may have, as AFNetworking: `application/json`, `text/json`,
    /// `text/javascript`.
    public static let acceptableContentTypes: Set<String> = ["application/json", "text/json", "text/javascript"]

    /// Checks status and content type before decoding.
    public var validator: ResponseValidator
    /// Removes object members whose value is `null`, at every depth, before the value is returned.
    public var removesKeysWithNullValues: Bool

    /// Creates a decoder.
    /// - Parameters:
    ///   - validator: Status codes 200–299 and the JSON content types by default.
    ///   - removesKeysWithNullValues: Whether to drop `"key": null` entries at every depth.
    public init(
        validator: ResponseValidator = ResponseValidator(acceptableContentTypes: JSONResponseDecoder.acceptableContentTypes),
        removesKeysWithNullValues: Bool = false
    ) {
        self.validator = validator
        self.removesKeysWithNullValues = removesKeysWithNullValues
    }

    /// Validates `response` and decodes its body.
    /// - Returns: The value, or `nil` for an empty or whitespace-only body (a `HEAD`, a 204, Rails' `" "`).
    /// - Throws: ``HTTPError`` `unexpectedStatus` or `unexpectedContentType` from the validator, or
    ///   `invalidResponse` when the body is not JSON (with the line and column); each carries the response.
    public func decode(_ response: SessionResponse) throws(HTTPError) -> JSONValue? {
        try validator.validate(response)
        guard response.body.contains(where: { !Self.isWhitespace($0) }) else { return nil }
        let value: JSONValue
        do {
            value = try JSONParser.parse(response.body)
        } catch {
            throw HTTPError(.invalidResponse, "\(response.url.absoluteString): the body is not valid JSON: \(error)", response: response)
        }
        return removesKeysWithNullValues ? value.removingKeysWithNullValues() : value
    }

    /// Validates `response` and decodes its body into `type` with `JSONDecoder`.
    /// - Returns: The value, or `nil` for an empty or whitespace-only body.
    /// - Throws: ``HTTPError`` as ``decode(_:)``, and `invalidResponse` when the JSON does not fit `type`.
    public func decode<T: Decodable>(_ type: T.Type, from response: SessionResponse) throws(HTTPError) -> T? {
        // Parsed strictly first, so that invalid JSON fails the same way (with a position) for every caller.
        guard let value = try decode(response) else { return nil }
        do {
            // Without null removal the body is already what JSONDecoder should read; with it, the cleaned value is.
            let json = removesKeysWithNullValues ? try JSONEncoder().encode(value) : Data(response.body)
            return try JSONDecoder().decode(type, from: json)
        } catch {
            throw HTTPError(
                .invalidResponse, "\(response.url.absoluteString): the JSON does not decode as \(type): \(error)", response: response)
        }
    }

    private static func isWhitespace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D }
}
