import PinpathSupport

/// Request parameters: names and JSON values, as AFNetworking's `parameters` dictionaries. A serializer
/// writes them in a fixed order (sorted keys), so the same parameters always give the same request.
public typealias Parameters = [String: JSONValue]
