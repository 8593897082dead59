import FoundationEssentials
import PinpathHTTP
import PinpathYAML

/// `defaults:`, the endpoint keys set once for every endpoint (an operator with 300 endpoints writes the
/// interval, policy or headers once).
///
/// Defaults are merged into each endpoint's YAML before it is read, so every endpoint is validated with its
/// effective values, and a problem in a default is reported once, at the default. An endpoint's key replaces the
/// default's whole value (`expect`, `proxy`, …), except `headers`, which merge by name (the endpoint's header
/// wins, names compared without regard to case). An endpoint that writes a key as null (`proxy: ~`) gets the
/// built-in default instead of the file's. A default applies only to the kinds it means something for
/// (`headers` to http and https, `send` to tcp, `policy` to the TLS kinds, `expect.banner` to the kinds whose
/// server speaks first…), so one `defaults:` serves a file mixing kinds.
struct EndpointDefaults {
    /// Every endpoint key but the two that identify an endpoint.
    static let keys = EndpointConfiguration.keys.filter { $0 != "name" && $0 != "url" }

    /// The default pairs, in file order.
    let pairs: [(key: Node, value: Node)]

    static let none = EndpointDefaults(pairs: [])

    /// Reads `defaults:`, reporting unknown keys and the per-endpoint ones (`name`, `url`).
    static func decode(_ node: Node?, _ decoder: ConfigurationDecoder) -> EndpointDefaults {
        guard let node else { return .none }
        guard let fields = decoder.mapping(node, "defaults", known: EndpointConfiguration.keys) else { return .none }
        var pairs: [(key: Node, value: Node)] = []
        for key in EndpointConfiguration.keys {
            guard let entry = fields.values[key] else { continue }
            guard keys.contains(key) else {
                decoder.report(
                    .unknownKey, at: entry.key, fields.path(key), "\(key) identifies one endpoint; it cannot have a default")
                continue
            }
            pairs.append(entry)
        }
        // File order, so that problems and `--effective` read as the file does.
        pairs.sort { ($0.key.mark?.line ?? 0, $0.key.mark?.column ?? 0) < ($1.key.mark?.line ?? 0, $1.key.mark?.column ?? 0) }
        return EndpointDefaults(pairs: pairs)
    }

    /// The endpoint's mapping with the defaults it does not set added, and the key paths (below `keyPath`) of the
    /// values that came from the defaults. Anything but a mapping is returned as it is, for the reader to refuse.
    func apply(to node: Node, _ keyPath: String) -> (node: Node, inherited: [String]) {
        guard !pairs.isEmpty, case .mapping(let mapping) = node else { return (node, []) }
        let own = Set(mapping.compactMap { $0.key.string })
        let kind = mapping["url"]?.string.flatMap { URL(endpointText: $0) }.flatMap { ServiceKind(scheme: $0.scheme) }
        var merged = Array(mapping)
        var inherited: [String] = []
        for (key, value) in pairs {
            guard let name = key.string, Self.applies(name, to: kind) else { continue }
            if !own.contains(name) {
                merged.append((key, name == "expect" ? Self.expectation(value, for: kind) : value))
                inherited.append(ConfigurationDecoder.keyPath(keyPath, name))
            } else if name == "headers", let index = merged.firstIndex(where: { $0.key.string == "headers" }),
                case .mapping(let ownHeaders) = merged[index].value, case .mapping(let defaultHeaders) = value
            {
                let ownNames = Set(ownHeaders.compactMap { $0.key.string?.lowercased() })
                let added = defaultHeaders.filter { !ownNames.contains($0.key.string?.lowercased() ?? "") }
                inherited += added.compactMap { $0.key.string.map { ConfigurationDecoder.keyPath(keyPath, "headers.\($0)") } }
                let headers = Node.Mapping(added.map { ($0.key, $0.value) } + ownHeaders.map { ($0.key, $0.value) }, ownHeaders.mark)
                merged[index].value = .mapping(headers)
            }
        }
        return (.mapping(Node.Mapping(merged.map { ($0.key, $0.value) }, mapping.mark)), inherited)
    }

    /// Whether the endpoint key `key` means something for `kind` (`nil`: a URL not understood, where only the
    /// keys of every kind apply).
    static func applies(_ key: String, to kind: ServiceKind?) -> Bool {
        switch key {
        case "method", "headers", "body", "body_file", "follow_redirects": kind?.isHTTP ?? false
        case "servername": kind.map { $0.usesTLS && !$0.isHTTP } ?? false
        case "send": kind == .tcp
        case "starttls": kind?.upgradesWithSTARTTLS ?? false
        case "policy", "client_certificate", "client_key", "client_key_password": kind?.usesTLS ?? false
        default: true
        }
    }

    /// A default `expect:` with only the keys `kind` reads: the HTTP ones for http(s), `banner` for the kinds
    /// whose server speaks first and tcp, `max_duration` for all.
    private static func expectation(_ node: Node, for kind: ServiceKind?) -> Node {
        guard case .mapping(let mapping) = node else { return node }
        let kept = mapping.filter { pair in
            switch pair.key.string {
            case "status", "body_contains", "body_matches", "headers": kind?.isHTTP ?? false
            case "banner": kind.map { $0.greets || $0 == .tcp } ?? false
            default: true
            }
        }
        return .mapping(Node.Mapping(kept.map { ($0.key, $0.value) }, mapping.mark))
    }
}
