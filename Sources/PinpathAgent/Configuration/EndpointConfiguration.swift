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
public struct EndpointConfiguration: Sendable, Equatable {
    /// Which address families a probe may connect over.
    public enum IPFamily: String, Sendable, CaseIterable {
        /// Whatever the resolver and the routes allow. The default.
        case any
        /// IPv4 only.
        case ipv4
        /// IPv6 only.
        case ipv6
    }

    /// One configured request header; its value renders redacted when secret.
    public struct Header: Sendable, Hashable {
        /// The field name as written.
        public let name: String
        /// The value, `${NAME}` already replaced from the environment.
        public let value: RedactableValue
    }

    /// A client certificate for mutual TLS (`client_certificate`, `client_key`, `client_key_password`),
    /// checked at load time; the password renders redacted.
    public struct ClientCertificateFiles: Sendable, Equatable {
        /// The certificate file (PEM), resolved against the configuration's directory.
        public let certificate: String
        /// The key file (PEM); `nil` when the key is in the certificate's file.
        public let key: String?
        /// The key's password (`${ENV}` only), secret.
        public let password: RedactableValue?
    }

    /// Unique among the endpoints; names the endpoint in events and metrics.
    public let name: String
    /// The URL (no user name or password in it: put credentials in a header); its scheme is the ``kind``.
    public let url: URL
    /// What a probe does, from the URL's scheme.
    public var kind: ServiceKind { ServiceKind(scheme: url.scheme) ?? .https }
    /// For the TLS connection checks: the name sent as SNI and checked against the certificate (`servername`);
    /// `nil` is the URL's host.
    public let serverName: String?
    /// Where probes connect instead of resolving the URL's host (`address`, an IP address): SNI, `Host` and
    /// the policy still use the URL's name (or ``serverName``), and the reachability gate judges this address.
    /// A redirect to another host or port is not affected. `nil` resolves the host.
    public let address: IPAddress?
    /// For `tcp://`: the text sent after connecting (`send`).
    public let send: String?
    /// The client certificate presented when the server asks for one.
    public let clientCertificate: ClientCertificateFiles?
    /// The method. Default `GET`.
    public let method: RequestMethod
    /// Extra request headers, in file order.
    public let headers: [Header]
    /// The request body (`body`, or the contents of `body_file` read at load time), sent with the method.
    public let body: [UInt8]?
    /// What the response must look like. Default: a 2xx status.
    public let expect: ResponseExpectation
    /// Time between the starts of two probes. Default 60s; at least 1s.
    public let interval: Duration
    /// How long one probe may take. Default 10s, or the interval if that is shorter; never longer than the
    /// interval, so probes of one endpoint never overlap.
    public let timeout: Duration
    /// The `policy:` the endpoint names, if it names one.
    public let policyName: String?
    /// The security policy its handshakes are held to: the named one and the policies whose `hosts` match
    /// the URL's host, combined; `nil` for http URLs and unpinned hosts (chain and host name are still verified).
    public let security: AppliedPolicy?
    /// The configured policies a redirect may reach, in file order: each hop to another host is held to
    /// those matching it, as a first request there would be. All of them when redirects are followed or the
    /// probe goes through an https proxy (whose own certificate is held to those matching the proxy's host),
    /// none otherwise.
    public let redirectPolicies: [PolicyConfiguration]
    /// The address families to use. Default `any`.
    public let ipFamily: IPFamily
    /// Consecutive failures before the endpoint is reported down. Default 2.
    public let failureThreshold: Int
    /// Consecutive successes before it is reported up again. Default 1.
    public let successThreshold: Int
    /// The thresholds at which a certificate of the verified chain expiring warns, once each, longest first.
    /// Default 14d, 7d and 1d; empty (`0s` or `[]`) turns warnings off.
    public let certExpiryWarnings: [Duration]
    /// Whether redirects are followed (the final response is judged). Default `true`.
    public let followRedirects: Bool
    /// Where its pin failure reports are POSTed: the `report_uri` of every policy in ``security``, once each, in
    /// the order of its sources. Empty when none has one.
    public let reportCollectors: [ReportCollector]
    /// The proxies its probes go through: its own `proxy:`, else the file's default.
    public let proxy: ProxyConfiguration
    /// Whether an included file defines it: its pattern searches run in the included files' lane
    /// (``PatternSearchLane``), so they cannot delay the main file's.
    public let isFromIncludedFile: Bool
    /// The credential defaults not applied to it (`headers.Authorization`, `client_certificate`): it is plain
    /// http, or in an included file not scoped to its host (``EndpointDefaults``). Shown by `--effective`.
    var withheldDefaults: [String] = []

    /// The headers to send, with the real values. Never print or log the result: unlike ``headers``, it
    /// does not redact.
    public var requestHeaders: HeaderFields {
        var fields = HeaderFields()
        for header in headers { fields.add(name: header.name, value: header.value.unredacted) }
        return fields
    }

    static let defaultInterval = Duration.seconds(60)
    static let defaultTimeout = Duration.seconds(10)
    static let defaultCertExpiryWarnings: [Duration] = [.seconds(14 * 86_400), .seconds(7 * 86_400), .seconds(86_400)]

    static let keys = [
        "name", "url", "method", "headers", "expect", "interval", "timeout", "policy", "ip_family",
        "failure_threshold", "success_threshold", "cert_expiry_warning", "follow_redirects", "proxy", "starttls", "servername",
        "address", "send", "client_certificate", "client_key", "client_key_password", "body", "body_file",
    ]

    /// The largest `body_file` read: a probe's body, not an upload.
    static let maximumBodyFileSize = 1 << 20

    /// The keys that read a local file (or, for the key's password, the environment) when the configuration is
    /// loaded, and send what they read to the endpoint's server: only the main file may write them. An
    /// included file that could would send the agent's private key or any file it can read to a URL of its
    /// choosing. Inherited from the main file's `defaults:`, they are credentials, scoped like secret headers.
    static let mainFileOnlyKeys = ["body_file", "client_certificate", "client_key", "client_key_password"]
}

extension EndpointConfiguration {
    /// What the endpoints are checked against while they are read.
    struct Context {
        /// Valid policies, in file order.
        let policies: [PolicyConfiguration]
        /// Every policy name in the file, valid or not: a reference to one that had problems of its own is
        /// not reported again as undefined.
        let declaredPolicies: [String]
        /// The collectors of each policy's `report_uri`, by policy name.
        let collectors: [String: [ReportCollector]]
        /// The file's default proxies.
        let proxy: ProxyConfiguration
        /// Endpoint names seen so far, with the file and node where.
        var names: [String: (file: String, node: Node)] = [:]
    }

    /// Reads one endpoint; `nil` after reporting its problems.
    static func decode(_ node: Node, _ keyPath: String, _ context: inout Context, _ decoder: ConfigurationDecoder) -> EndpointConfiguration?
    {
        guard var fields = decoder.mapping(node, keyPath, known: keys) else { return nil }
        let before = decoder.problems.count
        decoder.refuseMainFileOnlyKeys(&fields)

        let name = decoder.required(fields, "name", "a name").flatMap { value in decoder.endpointName(value, fields.path("name"), &context)
        }
        let url = decoder.required(fields, "url", "a URL such as https://host/path or tls://host:port").flatMap {
            decoder.url($0, fields.path("url"))
        }
        let kind = url.flatMap { ServiceKind(scheme: $0.scheme) }
        let serverName = decoder.serverName(fields, kind: kind)
        let send = decoder.sendText(fields, kind: kind)
        decoder.checkStartTLS(fields, kind: kind)
        decoder.checkHTTPOnlyKeys(fields, kind: kind)
        let clientCertificate = decoder.clientCertificate(fields, kind: kind)
        let method = fields["method"].flatMap { decoder.method($0, fields.path("method")) } ?? .get
        let headers = fields["headers"].flatMap { decoder.headers($0, fields.path("headers")) } ?? []
        let body = decoder.requestBody(fields, kind: kind)
        let expect = ResponseExpectation.decode(fields["expect"], fields.path("expect"), decoder, kind: kind)
        let interval = fields["interval"].flatMap { decoder.duration($0, fields.path("interval"), atLeast: .seconds(1)) } ?? defaultInterval
        var timeout = min(defaultTimeout, interval)
        if let node = fields["timeout"], let value = decoder.duration(node, fields.path("timeout"), atLeast: .milliseconds(1)) {
            timeout = value
            if value > interval {
                decoder.report(
                    .invalidValue, at: node, fields.path("timeout"),
                    """
                    \(DurationSyntax.format(value)) is longer than the interval (\(DurationSyntax.format(interval))); a probe must \
                    end before the next one starts
                    """
                )
            }
        }
        let ipFamily = fields["ip_family"].flatMap { decoder.choice($0, fields.path("ip_family"), IPFamily.self) } ?? .any
        let failureThreshold =
            fields["failure_threshold"].flatMap { decoder.integer($0, fields.path("failure_threshold"), in: 1...Int.max) } ?? 2
        let successThreshold =
            fields["success_threshold"].flatMap { decoder.integer($0, fields.path("success_threshold"), in: 1...Int.max) } ?? 1
        let warnings =
            fields["cert_expiry_warning"].flatMap { decoder.expiryThresholds($0, fields.path("cert_expiry_warning")) }
            ?? defaultCertExpiryWarnings
        let followRedirects = fields["follow_redirects"].flatMap { decoder.bool($0, fields.path("follow_redirects")) } ?? true
        let proxy =
            fields["proxy"].flatMap { node in
                decoder.proxy(node, fields.path("proxy")).map { ProxyConfiguration(settings: $0, source: .endpoint) }
            } ?? context.proxy

        var policyName: String?
        var named: PolicyConfiguration?
        if let node = fields["policy"], let reference = decoder.string(node, fields.path("policy"), "a policy name") {
            policyName = reference
            named = context.policies.first { $0.name == reference }
            if named != nil {
                if let kind, !kind.usesTLS {
                    decoder.report(
                        .invalidValue, at: node, fields.path("policy"),
                        kind == .http
                            ? "policy \(ConfigurationProblem.quoted(reference)) checks TLS, but the URL is plain http; use https or remove the policy"
                            : "policy \(ConfigurationProblem.quoted(reference)) checks TLS, but a \(kind.rawValue):// probe has none; use tls:// or remove the policy"
                    )
                }
            } else if !context.declaredPolicies.contains(reference) {
                var message = "policy \(ConfigurationProblem.quoted(reference)) is not defined"
                if context.declaredPolicies.isEmpty {
                    message += " (there is no policies: section)"
                } else if let close = ConfigurationDecoder.closest(to: reference, among: context.declaredPolicies) {
                    message += "; did you mean \"\(close)\"?"
                } else {
                    message += " (defined: \(context.declaredPolicies.joined(separator: ", ")))"
                }
                decoder.report(.undefinedReference, at: node, fields.path("policy"), message)
            }
        }
        var security: AppliedPolicy?
        // The policy is the checked name's: the server name when one is given.
        if let url, let kind, kind.usesTLS, let host = serverName ?? url.host {
            do throws(AppliedPolicy.Conflict) {
                security = try AppliedPolicy(host: host, named: named, among: context.policies)
            } catch  where error.involvesNamedPolicy {
                decoder.report(.refusedPolicy, at: fields["policy"], fields.path("policy"), error.description)
            } catch {
                // Two host-matched policies: reported once, at the policies themselves.
            }
        }
        let address = decoder.connectAddress(fields, url: url, proxy: proxy)
        guard decoder.problems.count == before, let name, let url else { return nil }
        var collectors: [ReportCollector] = []
        for source in security?.sources ?? [] {
            for collector in context.collectors[source.name] ?? [] where !collectors.contains(where: { $0.url == collector.url }) {
                collectors.append(collector)
            }
        }
        return EndpointConfiguration(
            name: name, url: url, serverName: serverName, address: address, send: send, clientCertificate: clientCertificate,
            method: method, headers: headers, body: body, expect: expect, interval: interval, timeout: timeout,
            policyName: policyName, security: security,
            redirectPolicies: followRedirects || Self.throughHTTPSProxy(proxy, url) ? context.policies : [], ipFamily: ipFamily,
            failureThreshold: failureThreshold,
            successThreshold: successThreshold, certExpiryWarnings: warnings, followRedirects: followRedirects,
            reportCollectors: collectors, proxy: proxy, isFromIncludedFile: decoder.readingIncludedFile)
    }
}

extension EndpointConfiguration {
    /// Whether the probe's first hop goes through an https proxy, whose own certificate is held to the
    /// configured policies matching the proxy's host (they travel with the redirect policies).
    static func throughHTTPSProxy(_ proxy: ProxyConfiguration, _ url: URL?) -> Bool {
        url.flatMap { proxy.settings.proxy(for: $0) }?.scheme == .https
    }
}

extension ConfigurationDecoder {
    /// A non-empty name without control, bidi formatting or other invisible characters, not used by an earlier
    /// endpoint.
    func endpointName(_ node: Node, _ keyPath: String, _ context: inout EndpointConfiguration.Context) -> String? {
        guard let name = string(node, keyPath, "a name") else { return nil }
        guard !name.isEmpty else {
            report(.invalidValue, at: node, keyPath, "the name must be non-empty text on one line")
            return nil
        }
        // Names reach terminals, metric labels and every event: a control (a line break, ESC, NEL) or a bidi
        // override in one is a forgery waiting for a reader.
        if let scalar = name.unicodeScalars.first(where: UntrustedText.needsEscape) {
            let shown = UntrustedText.escaped(String(scalar))
            report(
                .invalidValue, at: node, keyPath,
                "the name holds \(shown), a control or bidi formatting character; a name is one line of visible text")
            return nil
        }
        // Invisible scalars (a zero-width space, a byte order mark, a tag character, a line separator) make a
        // name that reads as another: an included file's `api` + U+200B beside the main file's `api`.
        if let (scalar, what) = name.unicodeScalars.lazy.compactMap({ scalar in Self.invisibleKind(scalar).map { (scalar, $0) } }).first {
            let code = String(scalar.value, radix: 16, uppercase: true)
            report(
                .invalidValue, at: node, keyPath,
                "the name holds U+\(String(repeating: "0", count: max(0, 4 - code.count)) + code), \(what); a name is one line of visible text"
            )
            return nil
        }
        if let first = context.names[name] {
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
        context.names[name] = (file, node)
        return name
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

    /// Refuses, in an included file, the keys only the main file may write (``EndpointConfiguration/mainFileOnlyKeys``),
    /// and drops them before anything reads the files they name.
    func refuseMainFileOnlyKeys(_ fields: inout ConfigurationMapping) {
        var refused: [String] = []
        for key in EndpointConfiguration.mainFileOnlyKeys {
            guard let entry = fields.values[key], isWrittenInIncludedFile(fields.path(key)) else { continue }
            refused.append(key)
            let what = key == "client_key_password" ? "unlocks a local key file" : "reads a local file"
            report(
                .notInIncludedFile, at: entry.key, fields.path(key),
                """
                \(key) \(what), which only \(mainFile) may name: an included file could send the agent's keys or any \
                file it can read to a server of its choosing; move this endpoint to \(mainFile)
                """)
            fields.values[key] = nil
        }
        // Without its certificate, an inherited key or password would only add a second, misleading problem.
        if refused.contains("client_certificate") {
            for key in ["client_key", "client_key_password"] where isInherited(fields.path(key)) { fields.values[key] = nil }
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
