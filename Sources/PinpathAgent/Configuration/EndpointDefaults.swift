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
///
/// Every endpoint reads what the defaults give it again, so the nodes and text they copy into the endpoints are
/// bounded (``copyLimit``) and counted before any endpoint is read (``applications(to:written:policies:at:_:)``).
struct EndpointDefaults {
    /// The default pairs, in file order.
    let pairs: [(key: Node, value: Node)]
    /// The items of a `headers:` default that is a mapping, each with its name lowercased and whether it is
    /// secret, worked out once rather than for every endpoint.
    private let headers: [(key: Node, value: Node, lowercasedName: String?, isSecret: Bool)]

    init(pairs: [(key: Node, value: Node)]) {
        self.pairs = pairs
        let mapping = pairs.first { $0.key.string == "headers" }?.value.mapping
        headers = (mapping.map(Array.init) ?? []).map { key, value in
            let name = key.string
            return (
                key, value, name?.lowercased(),
                name.map { ConfigurationDecoder.isSecretHeader(name: $0, template: value.string ?? "") } ?? false
            )
        }
    }

    static let none = EndpointDefaults(pairs: [])

    /// Reads `defaults:`, reporting unknown keys and the per-endpoint ones (those whose ``EndpointKey/places`` lack
    /// `defaults`: `name`, `url`, `address`, whose default would send every endpoint to one server).
    init?(reading node: Node, at keyPath: String, in _: Void, _ decoder: ConfigurationDecoder) {
        guard let fields = decoder.mapping(node, keyPath, known: EndpointKey.names(in: .endpoint)) else { return nil }
        var pairs: [(key: Node, value: Node)] = []
        for key in EndpointKey.all {
            guard let entry = fields.values[key.name] else { continue }
            guard key.places.contains(.defaults) else {
                decoder.report(
                    .unknownKey, at: entry.key, fields.path(key.name), "\(key.name) identifies one endpoint; it cannot have a default")
                continue
            }
            pairs.append(entry)
        }
        // File order, so that problems and `--effective` read as the file does.
        pairs.sort { ($0.key.mark?.line ?? 0, $0.key.mark?.column ?? 0) < ($1.key.mark?.line ?? 0, $1.key.mark?.column ?? 0) }
        self.init(pairs: pairs)
    }

    /// How far the defaults may multiply the configuration: what they copy into the endpoints, at most 100,000
    /// nodes and 16 MiB of text, or 10 times what the files write. 10,000 endpoints with a handful of defaults
    /// each, or a 500-byte body default in 5,000 endpoints, are inside it; a 1 MiB header copied into 2,000
    /// endpoints is not. Reading copied text costs about 0.1 s per MiB (patterns are compiled once per text).
    static let copyLimit = AliasLimit(nodes: 100_000, bytes: 16 << 20, multipleOfWritten: 10)

    /// What applying the defaults to one endpoint gave.
    struct Application {
        /// The endpoint's mapping with the defaults it does not set added.
        var node: Node
        /// The key paths (below the endpoint's) of the values that came from the defaults.
        var inherited: [String] = []
        /// The credential defaults not applied (`headers.Authorization`, `client_certificate`), by reason.
        var withheld: [(key: String, reason: WithholdingReason)] = []
        /// What the defaults added to the endpoint (keys and values).
        var copied = TreeSize.zero
    }

    /// Why a credential default was not applied to an endpoint.
    enum WithholdingReason: Equatable {
        /// The endpoint is plain http, where anyone on the path would read it: a secret header, or any credential
        /// default for an included file's endpoint.
        case plainHTTP
        /// The endpoint is in an included file, and `include`'s `credentials_for` does not list its host.
        case notScoped(host: String)
        /// The endpoint is in an included file, and the policy its handshake is held to (`policies`, combined)
        /// does not authenticate the server as `host`: it skips what `laxities` says.
        case unauthenticated(host: String, policies: [String], laxities: [Laxity])
        /// The endpoint is in an included file, and its policy cannot be resolved (not defined, refused, in
        /// conflict): the endpoint is refused there, so nothing is sent, and no warning repeats it.
        case unresolvedPolicy
    }

    /// What a policy skips that authenticating a server needs.
    enum Laxity: Equatable {
        /// `validates_domain_name: false`: a certificate for any name passes.
        case hostNameNotChecked
        /// `allow_invalid_certificates: true`: a chain no trusted CA issued passes (the pins decide).
        case untrustedChainAllowed
        /// The included file names a policy whose own anchors (`ca_file`, or certificates pinned in `certificate`
        /// mode) the main file trusts for other hosts (its `hosts` do not match): whoever that CA issues a
        /// certificate for the host to passes.
        case anchorsForOtherHosts(policy: String)
    }

    /// The defaults applied to every endpoint of `sources`, in order, before any endpoint is read; `nil` after a
    /// problem at `node` (`defaults:`) when what they copy into the endpoints passes ``copyLimit`` for files
    /// that write `written` together.
    ///
    /// Each endpoint reads what the defaults give it again: unbounded, a small file cost the product of its
    /// defaults and its endpoints (500 default headers × 2,000 endpoints, 104 KB, took `check-config` 19 s; one
    /// 1 MiB header × 2,000 endpoints took 230 s and 2 GB). Counting stops at the limit, so such a file is refused
    /// in the time of the copies the limit allows.
    func applications(
        to sources: [EndpointSource], written: TreeSize, policies: [PolicyConfiguration], at node: Node?,
        _ decoder: ConfigurationDecoder
    ) -> [[Application]]? {
        var copied = TreeSize.zero
        var applications: [[Application]] = []
        for source in sources {
            var applied: [Application] = []
            applied.reserveCapacity(source.endpoints.count)
            for (index, endpoint) in source.endpoints.enumerated() {
                let application = apply(to: endpoint, "endpoints[\(index)]", trust: source.trust, policies: policies)
                copied += application.copied
                if let excess = Self.copyLimit.excess(of: copied, written: written) {
                    decoder.report(
                        .tooLarge, at: node, "defaults",
                        """
                        copied into the endpoints, the defaults stand for more than \(excess.allowed) \(excess.unit), the most \
                        they may (\(excess.floor), or \(Self.copyLimit.multipleOfWritten) times the \(excess.written) \(excess.unit) \
                        the configuration writes); keep defaults to a few short values, and write long lists or many headers \
                        on the endpoints that need them
                        """)
                    return nil
                }
                applied.append(application)
            }
            applications.append(applied)
        }
        return applications
    }

    /// The endpoint's mapping with the defaults it does not set added, the key paths (below `keyPath`) of the
    /// values that came from the defaults, and the credential defaults withheld. Anything but a mapping is
    /// returned as it is, for the reader to refuse.
    ///
    /// A credential default is a secret header (``ConfigurationDecoder/isSecretHeader(name:template:)``) or a key that
    /// reads a local file (``EndpointKey/localRead``): it is the main file's, and reaches an
    /// endpoint of an included file only over https (or TLS), when `trust` scopes it to the endpoint's host, and
    /// when the endpoint's policy among `policies` authenticates that host; a secret header is never sent over
    /// plain http, whichever file the endpoint is in.
    func apply(to node: Node, _ keyPath: String, trust: EndpointSource.Trust, policies: [PolicyConfiguration]) -> Application {
        guard !pairs.isEmpty, case .mapping(let mapping) = node else { return Application(node: node) }
        let own = Set(mapping.compactMap { $0.key.string })
        let url = mapping["url"]?.string.flatMap { URL(endpointText: $0) }
        let kind = url.flatMap { ServiceKind(scheme: $0.scheme) }
        let host = url?.host.flatMap { $0.isEmpty ? nil : $0 }
        let serverName = mapping["servername"]?.string ?? pairs.first { $0.key.string == "servername" }?.value.string
        // A TLS kind's handshake checks its server name when it has one.
        let checkedName = (EndpointKey.named("servername")?.applies(to: kind) == true ? serverName : nil) ?? host
        var result = Application(node: node)
        var authentication: WithholdingReason??
        // Why a credential default does not reach this endpoint; `nil` when it does.
        func withholding(isHeader: Bool) -> WithholdingReason? {
            guard case .included(let scope) = trust else { return isHeader && kind == .http ? .plainHTTP : nil }
            // An included file chooses the URL and the proxy: over plain http, any default it gets is readable on
            // the path, the proxy it names included.
            if kind == .http { return .plainHTTP }
            guard let host, let checkedName else { return .notScoped(host: "") }
            // A TLS kind's checked name must be in scope too: it is the name the handshake authenticates.
            guard [host, checkedName].allSatisfy({ name in scope.contains { $0.matches(name) } }) else { return .notScoped(host: host) }
            // It also chooses the policy: one that skips the name or the chain hands the credential to whoever
            // answers for the host (the proxy it names, anyone on the path) with a certificate from any trusted CA.
            if authentication == nil {
                let policy = own.contains("policy") ? mapping["policy"] : pairs.first { $0.key.string == "policy" }?.value
                authentication = Self.unauthenticated(checkedName, policy: policy, among: policies)
            }
            return authentication ?? nil
        }
        var merged = Array(mapping)
        for (key, value) in pairs {
            guard let name = key.string, EndpointKey.named(name)?.applies(to: kind) ?? true else { continue }
            if name == "headers", case .mapping(let defaultHeaders) = value {
                let ownHeaders = merged.firstIndex { $0.key.string == "headers" }
                var ownNames: Set<String> = []
                if let ownHeaders {
                    // Headers that are not a mapping are refused at the endpoint; nothing merges into them.
                    guard case .mapping(let headers) = merged[ownHeaders].value else { continue }
                    ownNames = Set(headers.compactMap { $0.key.string?.lowercased() })
                }
                var added: [(Node, Node)] = []
                for (headerKey, headerValue, lowercasedName, isSecret) in headers {
                    // A key that is not a name is passed on, for the reader to refuse at the default.
                    guard let headerName = headerKey.string, let lowercasedName else {
                        added.append((headerKey, headerValue))
                        result.copied += headerKey.size + headerValue.size
                        continue
                    }
                    guard !ownNames.contains(lowercasedName) else { continue }
                    let path = "headers.\(headerName)"
                    if isSecret, let reason = withholding(isHeader: true) {
                        result.withheld.append((path, reason))
                        continue
                    }
                    added.append((headerKey, headerValue))
                    result.copied += headerKey.size + headerValue.size
                    if ownHeaders != nil { result.inherited.append(ConfigurationDecoder.keyPath(keyPath, path)) }
                }
                if let ownHeaders, case .mapping(let headers) = merged[ownHeaders].value {
                    // The endpoint's own `headers` stays where it is, the defaults' before its own.
                    merged[ownHeaders].value = .mapping(Node.Mapping(added + headers.map { ($0.key, $0.value) }, headers.mark))
                } else if !added.isEmpty {
                    merged.append((key, .mapping(Node.Mapping(added, defaultHeaders.mark))))
                    result.copied += key.size + TreeSize(nodes: 1, bytes: 0)
                    result.inherited.append(ConfigurationDecoder.keyPath(keyPath, "headers"))
                }
                continue
            }
            guard !own.contains(name) else { continue }
            if EndpointKey.named(name)?.localRead != nil, let reason = withholding(isHeader: false) {
                result.withheld.append((name, reason))
                continue
            }
            let copy = name == "expect" ? Self.expectation(value, for: kind) : value
            merged.append((key, copy))
            result.copied += key.size + copy.size
            result.inherited.append(ConfigurationDecoder.keyPath(keyPath, name))
        }
        result.node = .mapping(Node.Mapping(merged.map { ($0.key, $0.value) }, mapping.mark))
        return result
    }

    /// Why an included endpoint's server is not authenticated as `name` (the name its handshake checks), or `nil`
    /// when it is: the policy it is held to (the one `policy` names, with those whose `hosts` match, combined as
    /// the probe combines them; none is chain and name validation against the system store) must verify the chain
    /// (`allow_invalid_certificates` false) and check the name (`validates_domain_name` true). A named policy (by
    /// the included file, or by `defaults:`) that brings anchors of its own must also be meant for `name` (its
    /// `hosts` match it): the main file trusts a lab's `ca_file` for the lab's hosts, not for every host a credential
    /// is scoped to. Through a proxy the origin's handshake runs inside the tunnel under the same policy, so the
    /// proxy cannot stand in for the host.
    static func unauthenticated(_ name: String, policy reference: Node?, among policies: [PolicyConfiguration]) -> WithholdingReason? {
        var named: PolicyConfiguration?
        if let reference, !ConfigurationMapping.isNull(reference) {
            guard let text = reference.string, let policy = policies.first(where: { $0.name == text }) else { return .unresolvedPolicy }
            named = policy
        }
        let applied: AppliedPolicy?
        do throws(AppliedPolicy.Conflict) {
            applied = try AppliedPolicy(host: name, named: named, among: policies)
        } catch {
            return .unresolvedPolicy
        }
        guard let applied else { return nil }
        var laxities: [Laxity] = []
        if !applied.policy.validatesDomainName { laxities.append(.hostNameNotChecked) }
        if applied.policy.allowInvalidCertificates { laxities.append(.untrustedChainAllowed) }
        if let named, named.bringsAnchors, named.hostPolicy.pattern(matching: name) == nil {
            laxities.append(.anchorsForOtherHosts(policy: named.name))
        }
        return laxities.isEmpty ? nil : .unauthenticated(host: name, policies: applied.names, laxities: laxities)
    }

    /// A default `expect:` with only the keys `kind` reads (``ResponseExpectation/Key/kinds``).
    private static func expectation(_ node: Node, for kind: ServiceKind?) -> Node {
        guard case .mapping(let mapping) = node else { return node }
        let kept = mapping.filter { pair in
            pair.key.string.flatMap(ResponseExpectation.Key.named)?.kinds.contains(kind) ?? true
        }
        return .mapping(Node.Mapping(kept.map { ($0.key, $0.value) }, mapping.mark))
    }
}

extension ConfigurationDecoder {
    /// One warning per reason for the credential defaults withheld from the endpoint at `node`, saying why and
    /// what to do.
    func warnWithheld(_ withheld: [(key: String, reason: EndpointDefaults.WithholdingReason)], at node: Node, _ keyPath: String) {
        let plainHTTP = withheld.filter { $0.reason == .plainHTTP }.map(\.key)
        if !plainHTTP.isEmpty {
            warn(
                .credentialDefaultWithheld, at: node, keyPath,
                """
                the credential default \(Self.list(plainHTTP)) from \(mainFile) is not sent to this endpoint: it is plain http, \
                where anyone on the path reads it (use https)
                """)
        }
        let unscoped = withheld.compactMap { entry -> (key: String, host: String)? in
            if case .notScoped(let host) = entry.reason, !host.isEmpty { (entry.key, host) } else { nil }
        }
        if let host = unscoped.first?.host {
            warn(
                .credentialDefaultWithheld, at: node, keyPath,
                """
                the credential default \(Self.list(unscoped.map(\.key))) from \(mainFile) is not applied to this endpoint of an \
                included file: include's credentials_for does not list \(ConfigurationProblem.quoted(host)) (list it there \
                for this file's endpoints to have it)
                """)
        }
        let unauthenticated = withheld.compactMap { entry -> (key: String, reason: EndpointDefaults.WithholdingReason)? in
            if case .unauthenticated = entry.reason { entry } else { nil }
        }
        if case .unauthenticated(let host, let policies, let laxities) = unauthenticated.first?.reason {
            let named = policies.map(ConfigurationProblem.quoted)
            let policy = named.count == 1 ? "its policy \(named[0])" : "its policies \(named.joined(separator: ", ")) together"
            let skipped = laxities.map { laxity in
                switch laxity {
                case .hostNameNotChecked: "\(policy) does not check the host name (validates_domain_name: false)"
                case .untrustedChainAllowed: "\(policy) accepts a chain no trusted CA issued (allow_invalid_certificates: true)"
                case .anchorsForOtherHosts(let named):
                    """
                    its policy \(ConfigurationProblem.quoted(named)) brings anchors (ca_file or pinned certificates) that its \
                    hosts do not scope to this host
                    """
                }
            }
            warn(
                .credentialDefaultWithheld, at: node, keyPath,
                """
                the credential default \(Self.list(unauthenticated.map(\.key))) from \(mainFile) is not applied to this endpoint \
                of an included file: \(skipped.joined(separator: " and ")), so a server answering for \
                \(ConfigurationProblem.quoted(host)) is not authenticated by a trusted chain and its name (give this endpoint a \
                policy meant for this host that verifies both, or move it to \(mainFile))
                """)
        }
    }

    /// `headers.Authorization` or `headers.Authorization, client_certificate`.
    private static func list(_ keys: [String]) -> String { keys.joined(separator: ", ") }
}

extension EndpointDefaults: ConfigurationReadable {}
