/// A position in YAML text, as libyaml counts it.
public struct Mark: Sendable, Hashable, CustomStringConvertible {
    /// Line number starting from 1.
    public let line: Int
    /// Column number starting from 1, in Unicode scalars (libyaml's count).
    public let column: Int

    public init(line: Int, column: Int) {
        self.line = line
        self.column = column
    }

    /// `line:column`.
    public var description: String { "\(line):\(column)" }
}
