/// A header value that may hold a secret: printed, dumped, reflected or encoded, a secret one reads
/// `[redacted]`; only ``unredacted`` gives the text, for building the request itself.
///
/// A value is secret when it was written with `${NAME}` (read from the environment at load time) or when its
/// header's name says it carries credentials (`HeaderFields.isCredential`: `Authorization`, `Cookie`, any name
/// containing `token`, `secret`, `session`, `key`, …), so that a token pasted into the file is not logged either.
package struct RedactableValue: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable, Encodable
{
    private let text: String
    /// Whether renderings hide the value.
    package let isSecret: Bool
    /// The environment variables the value was built from, in order (`["API_TOKEN"]`). Names only: safe to show.
    package let variables: [String]

    /// Wraps a value.
    package init(_ text: String, isSecret: Bool, variables: [String] = []) {
        self.text = text
        self.isSecret = isSecret
        self.variables = variables
    }

    /// The real value. Use it to build the request and nowhere else.
    package var unredacted: String { text }

    /// `[redacted]` for a secret, otherwise the value.
    package var description: String { isSecret ? Self.redacted : text }

    /// What a secret reads as.
    static let redacted = "[redacted]"

    /// ``description``, followed for a secret by the variables it came from: `[redacted] (from ${API_TOKEN})`, as
    /// `check-config --effective` shows a header.
    var shownWithOrigin: String {
        guard isSecret, !variables.isEmpty else { return description }
        return "\(description) (from ${\(variables.joined(separator: "}, ${"))})"
    }
    /// The same as ``description``, so `String(reflecting:)` and `debugPrint` hide it too.
    package var debugDescription: String { description }
    /// No children: `dump` and `Mirror` see only the redacted description.
    package var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }

    /// Encodes ``description``, so JSON never carries a secret.
    package func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}
