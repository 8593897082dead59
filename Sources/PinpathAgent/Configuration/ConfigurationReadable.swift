import PinpathYAML

/// A part of the configuration read from one YAML node: every section and every value with keys of its own
/// (`events:`, a policy, `defaults:`, an endpoint, its `expect:`, `connectivity:`, a proxy) is read through this one
/// shape, and each plain value (a duration, a URL, a header list) through a typed reader of ``ConfigurationDecoder``.
///
/// A reader reports every problem it finds to the decoder, with its position, and goes on reading, so that a
/// rejected file shows all of its problems at once.
protocol ConfigurationReadable {
    /// What reading it needs besides its node: the policies an endpoint names, the kind an `expect:` is for;
    /// `Void` when nothing.
    associatedtype ReadingContext = Void

    /// Reads `node`, found at `keyPath`; `nil` after reporting why it cannot be used.
    init?(reading node: Node, at keyPath: String, in context: ReadingContext, _ decoder: ConfigurationDecoder)
}

extension ConfigurationReadable where ReadingContext == Void {
    /// Reads `node`, found at `keyPath`; `nil` after reporting why it cannot be used.
    init?(reading node: Node, at keyPath: String, _ decoder: ConfigurationDecoder) {
        self.init(reading: node, at: keyPath, in: (), decoder)
    }
}
