/// A value in a ``PinFailureReport`` field, enough to write JSON without a JSON dependency here.
public enum ReportValue: Sendable, Equatable {
    /// A string (dates are RFC 3339 strings).
    case string(String)
    /// An integer.
    case integer(Int)
    /// A boolean.
    case boolean(Bool)
    /// An array of strings (PEM certificates, pins).
    case strings([String])
    /// JSON `null`.
    case null
}
