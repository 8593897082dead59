import FoundationEssentials

extension URL {
    /// `URL(string:)` for an endpoint's `url`, refusing a host RFC 3986 does not allow
    /// (``URLHost/isWellFormed(inURLText:)``), as it was refused while the agent linked all of Foundation.
    /// Characters invalid elsewhere (a space in the path) are still percent-encoded, as before.
    init?(endpointText text: String) {
        guard let url = URL(string: text), URLHost.isWellFormed(inURLText: text) else { return nil }
        self = url
    }
}
