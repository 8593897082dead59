import PinpathSupport

/// How much server-chosen text (certificate names, SANs, messages) one endpoint's record may hold, in Unicode
/// scalars counted before escaping.
///
/// A hostile server chooses every name of its chain and can fill each with `<` (written `\u003c`, six bytes):
/// without a budget, 100 SANs and 10 certificates of 256-scalar names made one endpoint cost 150 KB of JSON, and
/// 500 such endpoints a 53 MB document rendered on the listener's thread. Each part of the record has its own
/// share, fixed, because the parts come from different probes (the certificate of one, the last pin failure of
/// another): whatever mix a record holds, its server text stays under ``perEndpoint`` scalars (under 25 KB of
/// JSON at six bytes a scalar). Events are not cut by this: they carry one probe each.
struct StatusTextBudget {
    /// The certificate's subject, issuer, SANs and chain names.
    static let certificate = 2560
    /// The last probe's message.
    static let lastProbeMessage = 768
    /// The last pin failure's message.
    static let pinFailureMessage = 768
    /// All of an endpoint's shares together.
    static let perEndpoint = certificate + lastProbeMessage + pinFailureMessage

    /// The scalars still available.
    private(set) var remaining: Int

    init(_ scalars: Int) { remaining = scalars }

    /// `text` cut to `limit` scalars and to what remains (an ellipsis marks a cut), which it then uses up.
    mutating func take(_ text: String, limit: Int) -> String {
        let cut = UntrustedText.truncated(text, limit: min(limit, remaining))
        remaining -= min(text.unicodeScalars.count, limit, remaining)
        return cut
    }

    /// The longest prefix of `texts`, each cut to `limit` scalars, that fits in what remains, and how many were
    /// left out: a list is cut whole items at a time, with the count of the rest, rather than ending in a
    /// fragment of a name.
    mutating func takeWhole(_ texts: [String], limit: Int) -> (kept: [String], omitted: Int) {
        var kept: [String] = []
        for text in texts {
            let item = UntrustedText.truncated(text, limit: limit)
            let cost = item.unicodeScalars.count
            guard cost <= remaining else { break }
            remaining -= cost
            kept.append(item)
        }
        return (kept, texts.count - kept.count)
    }
}
