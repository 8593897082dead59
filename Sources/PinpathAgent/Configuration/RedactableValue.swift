/// A header value that may hold a secret: printed, dumped, reflected or encoded, a secret one reads
/// `[redacted]`; only ``unredacted`` gives the text, for building the request itself.
///
/// A value is secret when it was written with `${NAME}` (read from the environment at load time) or when its
/// header's name says it carries credentials (`HeaderFields.isCredential`: `Authorization`, `Cookie`, any name
/// containing `token`, `secret`, `session`, `key`, …), so that a token pasted into the file is not logged either.
public struct RedactableValue: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable, Encodable
{
    private let text: String
    /// Whether renderings hide the value.
    public let isSecret: Bool
    /// The environment variables the value was built from, in order (`["API_TOKEN"]`). Names only: safe to show.
    public let variables: [String]

    /// Wraps a value.
    public init(_ text: String, isSecret: Bool, variables: [String] = []) {
        self.text = text
        self.isSecret = isSecret
        self.variables = variables
    }

    /// The real value. Use it to build the request and nowhere else.
    public var unredacted: String { text }

    /// `[redacted]` for a secret, otherwise the value.
    public var description: String { isSecret ? "[redacted]" : text }
    /// The same as ``description``, so `String(reflecting:)` and `debugPrint` hide it too.
    public var debugDescription: String { description }
    /// No children: `dump` and `Mirror` see only the redacted description.
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }

    /// Encodes ``description``, so JSON never carries a secret.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}
