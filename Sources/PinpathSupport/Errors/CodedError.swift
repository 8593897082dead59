/// The shape of the layers' public errors (swift-certificates' `CertificateError`, swift-subprocess'
/// `SubprocessError`): a code from an extensible set, which can grow without breaking callers as an enum
/// would, and a sentence for a person, which is also the description. `ReachabilityError`, `SecurityError`
/// and `TLSConnectionError` are this struct over their own codes; `HTTPError` and `ConfigurationProblem`
/// carry more (the response, the place in the file) and are their own structs.
public struct CodedError<Codes: ErrorCode>: Error, Sendable, Equatable, CustomStringConvertible {
    /// The error's code type (`SecurityError.Code.invalidPin`).
    public typealias Code = Codes

    /// What went wrong.
    public let code: Code
    /// A sentence for a person that names the input and what was wrong.
    public let message: String

    package init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// The message.
    public var description: String { message }
}

/// A code of a ``CodedError``: one of an extensible set of static values, each with a name.
public protocol ErrorCode: Hashable, Sendable, CustomStringConvertible {
    /// The name, as written in logs and JSON (`invalid_pin`).
    var name: String { get }
}

extension ErrorCode {
    /// The name.
    public var description: String { name }
}
