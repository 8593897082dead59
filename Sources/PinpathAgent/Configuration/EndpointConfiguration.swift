import FoundationEssentials
import PinpathHTTP
import PinpathReachability
import PinpathSupport
import PinpathYAML

/// One endpoint the agent probes (an item of `endpoints:`), with every default applied: an HTTP(S) URL, or
/// a connection check whose kind the URL's scheme chooses (`tls://`, `tcp://`, `smtp://` with `starttls`…,
/// ``ServiceKind``).
///
/// Endpoints compare by value, over everything a probe depends on (the policies a redirect may reach
/// included): a reload restarts exactly the endpoints whose probes would now behave differently.
package struct EndpointConfiguration: Sendable, Equatable {
    /// One configured request header; its value renders redacted when secret.
    package struct Header: Sendable, Hashable {
        /// The field name as written.
        package let name: String
        /// The value, `${NAME}` already replaced from the environment.
        package let value: RedactableValue
    }

    /// A client certificate for mutual TLS (`client_certificate`, `client_key`, `client_key_password`),
    /// checked at load time; the password renders redacted.
    package struct ClientCertificateFiles: Sendable, Equatable {
        /// The certificate file (PEM), resolved against the configuration's directory.
        package let certificate: String
        /// The key file (PEM); `nil` when the key is in the certificate's file.
        package let key: String?
        /// The key's password (`${ENV}` only), secret.
        package let password: RedactableValue?
    }

    /// Unique among the endpoints; names the endpoint in events and metrics.
    package let name: String
    /// The URL (no user name or password in it: put credentials in a header); its scheme is the ``kind``.
    package internal(set) var url: URL
    /// What a probe does, from the URL's scheme.
    package var kind: ServiceKind { ServiceKind(scheme: url.scheme) ?? .https }
    /// For the TLS connection checks: the name sent as SNI and checked against the certificate (`servername`);
    /// `nil` is the URL's host.
    package let serverName: String?
    /// Where probes connect instead of resolving the URL's host (`address`, an IP address): SNI, `Host` and
    /// the policy still use the URL's name (or ``serverName``), and the reachability gate judges this address.
    /// A redirect to another host or port is not affected. `nil` resolves the host. A target probe sets it to the
    /// address its admission checked (``TargetAdmission``), so that a second DNS answer cannot change it.
    package var address: IPAddress?
    /// For `tcp://`: the text sent after connecting (`send`).
    package let send: String?
    /// The client certificate presented when the server asks for one.
    package let clientCertificate: ClientCertificateFiles?
    /// The method. Default `GET`.
    package let method: RequestMethod
    /// Extra request headers, in file order.
    package let headers: [Header]
    /// The request body (`body`, or the contents of `body_file` read at load time), sent with the method.
    package let body: [UInt8]?
    /// What the response must look like. Default: a 2xx status.
    package let expect: ResponseExpectation
    /// Time between the starts of two probes. Default 60s; at least 1s.
    package let interval: Duration
    /// How long one probe may take. Default 10s, or the interval if that is shorter; never longer than the
    /// interval, so probes of one endpoint never overlap. A target probe lowers it to the scraper's deadline.
    package var timeout: Duration
    /// The `policy:` the endpoint names, if it names one.
    package let policyName: String?
    /// The security policy its handshakes are held to: the named one and the policies whose `hosts` match
    /// the URL's host, combined; `nil` for http URLs and unpinned hosts (chain and host name are still verified).
    package internal(set) var security: AppliedPolicy?
    /// The configured policies a redirect may reach, in file order: each hop to another host is held to
    /// those matching it, as a first request there would be. All of them when redirects are followed or the
    /// probe goes through an https proxy (whose own certificate is held to those matching the proxy's host),
    /// none otherwise.
    package internal(set) var redirectPolicies: [PolicyConfiguration]
    /// The one address family probes are held to (`ip_family`); `nil` for `any`, the default.
    package let ipFamily: IPFamily?
    /// Consecutive failures before the endpoint is reported down. Default 2.
    package let failureThreshold: Int
    /// Consecutive successes before it is reported up again. Default 1.
    package let successThreshold: Int
    /// The thresholds at which a certificate of the verified chain expiring warns, once each, longest first.
    /// Default 14d, 7d and 1d; empty (`0s` or `[]`) turns warnings off.
    package let certExpiryWarnings: [Duration]
    /// Whether redirects are followed (the final response is judged). Default `true`.
    package let followRedirects: Bool
    /// Where its pin failure reports are POSTed: the `report_uri` of every policy in ``security``, once each, in
    /// the order of its sources. Empty when none has one.
    package internal(set) var reportCollectors: [ReportCollector]
    /// The proxies its probes go through: its own `proxy:`, else the file's default.
    package let proxy: ProxyConfiguration
    /// Whether an included file defines it: its pattern searches run in the included files' lane
    /// (``PatternSearchLane``), so they cannot delay the main file's.
    package let isFromIncludedFile: Bool
    /// The credential defaults not applied to it (`headers.Authorization`, `client_certificate`): it is plain
    /// http, or in an included file not scoped to its host (``EndpointDefaults``). Shown by `--effective`.
    var withheldDefaults: [String] = []
    /// Whether this is a module read with a scraper's target (`/probe`) rather than an endpoint: its redirects
    /// stay on the host and port its admission checked (``TargetAdmission``).
    package var isTargetProbe = false

    /// The headers to send, with the real values. Never print or log the result: unlike ``headers``, it
    /// does not redact.
    package var requestHeaders: HeaderFields {
        var fields = HeaderFields()
        for header in headers { fields.add(name: header.name, value: header.value.unredacted) }
        return fields
    }

    static let defaultInterval = Duration.seconds(60)
    static let defaultTimeout = Duration.seconds(10)
    static let defaultCertExpiryWarnings: [Duration] = [.seconds(14 * 86_400), .seconds(7 * 86_400), .seconds(86_400)]

    /// The largest `body_file` read: a probe's body, not an upload.
    static let maximumBodyFileSize = 1 << 20
}

extension EndpointConfiguration {
    /// What the endpoints are checked against while they are read.
    struct Context: Sendable {
        /// Valid policies, in file order.
        let policies: [PolicyConfiguration]
        /// Every policy name in the file, valid or not: a reference to one that had problems of its own is
        /// not reported again as undefined.
        let declaredPolicies: [String]
        /// The collectors of each policy's `report_uri`, by policy name.
        let collectors: [String: [ReportCollector]]
        /// The file's default proxies.
        let proxy: ProxyConfiguration
    }

    /// Reads one endpoint, each key with its row of ``EndpointKey/all``; `nil` after reporting its problems.
    init?(reading node: Node, at keyPath: String, in context: Context, _ decoder: ConfigurationDecoder) {
        guard let fields = decoder.mapping(node, keyPath, known: EndpointKey.names(in: .endpoint)) else { return nil }
        let before = decoder.problems.count
        var reading = EndpointReading(fields, in: .endpoint, context: context, decoder)
        guard let endpoint = reading.endpoint(problemsBefore: before) else { return nil }
        self = endpoint
    }
}

extension EndpointConfiguration: ConfigurationReadable {}

extension EndpointConfiguration {
    /// Whether the probe's first hop goes through an https proxy, whose own certificate is held to the
    /// configured policies matching the proxy's host (they travel with the redirect policies).
    static func throughHTTPSProxy(_ proxy: ProxyConfiguration, _ url: URL?) -> Bool {
        url.flatMap { proxy.settings.proxy(for: $0) }?.scheme == .https
    }

    /// The policy a TLS kind's handshakes to `url` are held to: `named` and the policies whose `hosts` match the
    /// checked name (`serverName` when one is given, else the URL's host), combined; `nil` for other kinds.
    /// - Throws: ``AppliedPolicy/Conflict`` when they cannot be combined.
    static func appliedPolicy(
        url: URL, kind: ServiceKind?, serverName: String?, named: PolicyConfiguration?, among policies: [PolicyConfiguration]
    ) throws(AppliedPolicy.Conflict) -> AppliedPolicy? {
        guard let kind, EndpointKey.Kinds.tls.contains(kind), let host = serverName ?? url.host else { return nil }
        return try AppliedPolicy(host: host, named: named, among: policies)
    }

    /// Where pin failure reports under `security` go: the `report_uri` of each of its policies, once each.
    static func reportCollectors(of security: AppliedPolicy?, in context: Context) -> [ReportCollector] {
        var collectors: [ReportCollector] = []
        for source in security?.sources ?? [] {
            for collector in context.collectors[source.name] ?? [] where !collectors.contains(where: { $0.url == collector.url }) {
                collectors.append(collector)
            }
        }
        return collectors
    }

    /// The policies a redirect may reach (``redirectPolicies``).
    static func redirectPolicies(
        followRedirects: Bool, proxy: ProxyConfiguration, url: URL, in context: Context
    ) -> [PolicyConfiguration] {
        followRedirects || throughHTTPSProxy(proxy, url) ? context.policies : []
    }

    /// This endpoint, read from a module with one target, aimed at `url`, a target of the same kind: the keys as
    /// read (they depend on the kind only), and what depends on the URL chosen again as a reading with `url` would
    /// (the policies by host, their collectors, the policies a redirect is held to). `nil` when the policies that
    /// apply to its host cannot be combined: a reading with `url` then says why.
    func retargeted(to url: URL, in context: Context) -> EndpointConfiguration? {
        var endpoint = self
        endpoint.url = url
        do throws(AppliedPolicy.Conflict) {
            endpoint.security = try Self.appliedPolicy(
                url: url, kind: endpoint.kind, serverName: serverName, named: context.policies.first { $0.name == policyName },
                among: context.policies)
        } catch {
            return nil
        }
        endpoint.reportCollectors = Self.reportCollectors(of: endpoint.security, in: context)
        endpoint.redirectPolicies = Self.redirectPolicies(followRedirects: followRedirects, proxy: proxy, url: url, in: context)
        return endpoint
    }
}

extension ConfigurationDecoder {
    /// A non-empty name without control, bidi formatting or other invisible characters, not used by an earlier
    /// endpoint.
    func endpointName(_ node: Node, _ keyPath: String) -> String? {
        guard let name = string(node, keyPath, "a name"), isVisibleName(name, at: node, keyPath, what: "a name") else { return nil }
        if let first = endpointNames[name] {
            // Across files, the first one's whole position: both files may have the line.
            let mark = first.node.mark
            let place =
                first.file == file
                ? "line \(mark?.line ?? 0)" : "at \(first.file):\(mark?.line ?? 0):\(mark?.column ?? 0)"
            report(
                .duplicate, at: node, keyPath,
                "another endpoint is already named \(ConfigurationProblem.quoted(name)) (\(place)); names must be unique")
            return nil
        }
        endpointNames[name] = (file, node)
        return name
    }

    /// Whether `name` (of an endpoint, or `what` else names) is one line of visible text, reporting why not.
    func isVisibleName(_ name: String, at node: Node, _ keyPath: String, what: String) -> Bool {
        guard !name.isEmpty else {
            report(.invalidValue, at: node, keyPath, "the name must be non-empty text on one line")
            return false
        }
        // Names reach terminals, metric labels and every event: a control (a line break, ESC, NEL) or a bidi
        // override in one is a forgery waiting for a reader.
        if let scalar = name.unicodeScalars.first(where: UntrustedText.needsEscape) {
            let shown = UntrustedText.escaped(String(scalar))
            report(
                .invalidValue, at: node, keyPath,
                "the name holds \(shown), a control or bidi formatting character; \(what) is one line of visible text")
            return false
        }
        // Invisible scalars (a zero-width space, a byte order mark, a tag character, a line separator) make a
        // name that reads as another: an included file's `api` + U+200B beside the main file's `api`.
        if let (scalar, kind) = name.unicodeScalars.lazy.compactMap({ scalar in Self.invisibleKind(scalar).map { (scalar, $0) } }).first {
            let code = String(scalar.value, radix: 16, uppercase: true)
            report(
                .invalidValue, at: node, keyPath,
                "the name holds U+\(String(repeating: "0", count: max(0, 4 - code.count)) + code), \(kind); \(what) is one line of visible text"
            )
            return false
        }
        return true
    }

    /// What `scalar` is when it is invisible but no control (Unicode's general categories Cf, Zl and Zp), or `nil`.
    private static func invisibleKind(_ scalar: Unicode.Scalar) -> String? {
        switch scalar.properties.generalCategory {
        case .format: "an invisible format character"
        case .lineSeparator: "a line separator"
        case .paragraphSeparator: "a paragraph separator"
        default: nil
        }
    }

    /// `cert_expiry_warning`: one duration (`0s` for none) or a list of them (`[30d, 14d, 7d, 1d]`, `[]` for none),
    /// each once; longest first.
    func expiryThresholds(_ node: Node, _ keyPath: String) -> [Duration]? {
        guard case .sequence(let items) = node else {
            return duration(node, keyPath).map { $0 == .zero ? [] : [$0] }
        }
        var thresholds: [Duration] = []
        var seen: Set<Duration> = []
        for (index, item) in items.enumerated() {
            let path = "\(keyPath)[\(index)]"
            guard let threshold = duration(item, path, atLeast: .milliseconds(1)) else { continue }
            guard seen.insert(threshold).inserted else {
                report(.duplicate, at: item, path, "\(DurationSyntax.format(threshold)) is already a threshold")
                continue
            }
            thresholds.append(threshold)
        }
        return thresholds.sorted(by: >)
    }

    /// An HTTP method token, upper-cased (`get` is `GET`).
    func method(_ node: Node, _ keyPath: String) -> RequestMethod? {
        guard let text = string(node, keyPath, "an HTTP method") else { return nil }
        guard !text.isEmpty, text.unicodeScalars.allSatisfy({ $0.isASCII && ($0.properties.isAlphabetic || $0 == "-" || $0 == "_") }) else {
            report(.invalidValue, at: node, keyPath, "\(ConfigurationProblem.quoted(text)) is not an HTTP method (GET, HEAD, POST, …)")
            return nil
        }
        return RequestMethod(rawValue: text)
    }
}
