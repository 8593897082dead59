import ArgumentParser
import FoundationEssentials
import Glibc
import PinpathAgent
import PinpathHTTP
import PinpathSecurity
import PinpathSupport

struct CheckConfigCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check-config",
        abstract: "Validate the agent's configuration file and summarize it.",
        discussion: """
            Reads the file as the agent would: certificate and CA files are loaded and ${NAME} in headers is \
            read from the environment, so run it as the agent's user with the agent's environment. Prints a \
            summary and exits 0 when the file is valid; otherwise prints every problem as \
            `pinpath: error: FILE:LINE:COLUMN: KEY: message` on stderr and exits 78 (EX_CONFIG), which is \
            also the answer for a file that cannot be read. With --json, one object on stdout either way: \
            {"valid":true,…,"warnings":[…]} or {"valid":false,"problems":[…]}. Warnings (pins already \
            expired, …) are printed as `pinpath: warning: …` on stderr and do not change the exit code.
            With --effective, every endpoint's keys with the values its probes use (after defaults: and \
            the built-in defaults; secrets redacted), then every module's (its kind, targets and keys), as \
            text or as an "effective" object per endpoint and per module.
            Exit codes: 0 valid (warnings or not), 64 usage error, 74 output error, 78 invalid.
            """)

    /// Where an installed agent's configuration lives; the repository's example is `etc/pinpath.yaml`.
    static let defaultPath = "/etc/pinpath/pinpath.yaml"

    @Option(name: .long, help: "The configuration file.")
    var config: String = Self.defaultPath

    @Flag(help: "Print one JSON object instead of text.")
    var json = false

    @Flag(help: "Also print every endpoint's and module's effective values, after defaults: and the built-in defaults.")
    var effective = false

    func run() async throws {
        let result = Result { () throws(ConfigurationError) in try AgentConfiguration.load(path: config) }
        let text: String
        switch (result, json) {
        case (.success(let configuration), false):
            text = Self.summary(configuration) + (effective ? Self.effectiveText(configuration) : "")
            let lines = UntrustedText.escapedLines(configuration.warnings.map { "pinpath: warning: \($0)" })
            try? LineOutput(descriptor: STDERR_FILENO).write(lines)
        case (.success(let configuration), true): text = Self.json(configuration, effective: effective).encoded() + "\n"
        case (.failure(let error), false):
            // Problems go to stderr, one per line, each in the CLI's error form; they quote the file.
            let lines = UntrustedText.escapedLines(error.problems.map { "pinpath: error: \($0)" })
            try? LineOutput(descriptor: STDERR_FILENO).write(lines)
            throw ExitCode(78)
        case (.failure(let error), true):
            text = Self.failureJSON(error).encoded() + "\n"
        }
        try writeOutput(text)
        if case .failure = result { throw ExitCode(78) }
    }

    /// `{"valid":false,"problems":[…],"error":{"category":"config","message":…,"exit_code":78}}`: the problems,
    /// and the `error` member every `--json` failure has (the first problem, and how many more there are).
    static func failureJSON(_ error: ConfigurationError) -> JSONValue {
        let first = error.problems.first.map { "\($0)" } ?? "the configuration is not valid"
        let more = error.problems.count > 1 ? " (and \(error.problems.count - 1) more problems)" : ""
        return .object([
            ("valid", false), ("problems", .array(error.problems.map(\.jsonValue))),
            ("error", ScriptContract.errorFields(category: .config, message: first + more, exitCode: 78)),
        ])
    }

    /// A few lines a person can check at a glance: what will be probed, how, and under which policy. Each line is
    /// escaped: names, banners, paths and hosts come from the file (an included one too) and the environment.
    static func summary(_ configuration: AgentConfiguration) -> String {
        var lines = ["\(configuration.file): valid"]
        let events = configuration.events
        lines.append(
            "events:    \(events.output), probe results: \(events.probes.rawValue), "
                + "certificates: \(events.includeCertificates ? "subject, pin and PEM" : "subject and pin")")
        lines.append("policies:  \(configuration.policies.count)")
        for entry in configuration.policies {
            let hosts = entry.hosts.isEmpty ? "" : ", hosts \(entry.hosts.map(\.description).joined(separator: " "))"
            let pins = entry.policy.pins.isEmpty ? "" : ", \(entry.policy.pins.count) pins"
            let enforce = entry.policy.enforce ? "" : ", report-only"
            let reports =
                entry.reportURIs.isEmpty
                ? "" : ", reports to \(entry.reportURIs.map { DisplayURL.redacting($0.absoluteString) }.joined(separator: " "))"
            lines.append("  \(entry.name): \(entry.policy.mode.rawValue)\(pins)\(hosts)\(enforce)\(reports)")
        }
        lines.append("endpoints: \(configuration.endpoints.count)")
        for endpoint in configuration.endpoints {
            let policy = endpoint.security.map { ", policy \($0.names.joined(separator: "+"))" } ?? ""
            // A connection check has no method or status: its line says what it checks instead.
            let what = endpoint.kind.isHTTP ? "\(endpoint.method) " : ""
            var expectation = endpoint.kind.isHTTP ? ", expect \(endpoint.expect.statusDescription)" : ""
            if let banner = endpoint.expect.banner { expectation += ", banner \"\(banner)\"" }
            let serverName = endpoint.serverName.map { ", servername \($0)" } ?? ""
            let address = endpoint.address.map { ", connects to \($0)" } ?? ""
            let client = endpoint.clientCertificate.map { ", client certificate \($0.certificate)" } ?? ""
            lines.append(
                """
                  \(endpoint.name): \(what)\(DisplayURL.redacting(endpoint.url.absoluteString)) every \
                \(DurationSyntax.format(endpoint.interval)), timeout \(DurationSyntax.format(endpoint.timeout))\
                \(expectation)\(serverName)\(address)\(client)\(policy)
                """
            )
            lines.append("    effective: \(effectivePolicy(endpoint))")
            if endpoint.proxy.settings != .direct || endpoint.proxy.source == .endpoint {
                lines.append("    proxy: \(endpoint.proxy.summary(for: endpoint.url))")
            }
        }
        if !configuration.modules.isEmpty {
            lines.append("modules:   \(configuration.modules.count)")
            for module in configuration.modules {
                let kind = module.kind.map { "kind \($0.rawValue)" } ?? "kind from each target's scheme"
                let admitted =
                    module.targets.map { list in
                        "targets \((list.hosts.map(\.description) + list.networks.map(\.description)).joined(separator: " "))"
                    } ?? "any target but loopback, link-local and metadata addresses"
                lines.append("  \(module.name): \(kind), \(admitted)")
            }
        }
        let targets = configuration.reachabilityTargets.map(\.description).joined(separator: " ")
        lines.append("targets:   \(configuration.reachabilityTargets.count)\(targets.isEmpty ? "" : " (\(targets))")")
        lines.append("metrics:   \(metricsSummary(configuration))")
        lines.append("proxy:     \(proxySummary(configuration.proxy))")
        if let listen = configuration.metricsListen {
            lines.append("listen:    \(listen) (/metrics, /healthz, /readyz, /probe, /api/v1/status, the status page /)")
            lines.append("access:    \(accessSummary(configuration))")
        }
        if let connectivity = configuration.connectivity { lines.append("connectivity: \(connectivitySummary(connectivity))") }
        return UntrustedText.escapedLines(lines)
    }

    /// Where the metrics go: `textfile PATH`, `listen ADDRESS`, both, or `none` when neither is set.
    static func metricsSummary(_ configuration: AgentConfiguration) -> String {
        let outputs = [
            configuration.metricsTextfile.map { "textfile \($0)" }, configuration.metricsListen.map { "listen \($0)" },
        ]
        .compactMap { $0 }
        return outputs.isEmpty ? "none" : outputs.joined(separator: ", ")
    }

    /// Who may use the listener: its TLS files, `basic_auth alice, bob (hashes set)`, and whether `/probe` is served
    /// without credentials. Hashes are never shown.
    static func accessSummary(_ configuration: AgentConfiguration) -> String {
        var parts = [configuration.metricsTLSSummary ?? "plain HTTP (no tls)"]
        parts.append(configuration.metricsBasicAuthUsers.map { "basic_auth \($0.joined(separator: ", ")) (hashes set)" } ?? "no basic_auth")
        if configuration.metricsProbeUnauthenticated { parts.append("probe_unauthenticated") }
        return parts.joined(separator: "; ")
    }

    /// The default proxies without credentials: `http://proxy:3128 (configuration)`, or for the environment
    /// `https http://proxy:3128, http none, no_proxy .internal (environment)`.
    static func proxySummary(_ proxy: ProxyConfiguration) -> String {
        let settings = proxy.settings
        guard settings.httpsProxy != settings.httpProxy || !settings.noProxy.isEmpty else {
            return "\(settings.httpsProxy?.description ?? "none") (\(proxy.source.rawValue))"
        }
        let noProxy = settings.noProxy.isEmpty ? "" : ", no_proxy \(settings.noProxy)"
        return """
            https \(settings.httpsProxy?.description ?? "none"), http \(settings.httpProxy?.description ?? "none")\
            \(noProxy) (\(proxy.source.rawValue))
            """
    }

    /// Each endpoint's and then each module's effective values, one `key: value` line each (values other than
    /// text in JSON), escaped.
    static func effectiveText(_ configuration: AgentConfiguration) -> String {
        var lines = ["effective values:"]
        let entries =
            configuration.endpoints.map { ($0.name, $0.effectiveValues) }
            + configuration.modules.map { ("module \($0.name)", $0.effectiveValues) }
        for (title, values) in entries {
            lines.append("  \(title):")
            for (key, value) in values where key != "name" {
                let shown = if case .string(let text) = value { text } else { value.encoded() }
                lines.append("    \(key): \(shown)")
            }
        }
        return UntrustedText.escapedLines(lines)
    }

    /// The summary for machines; header values are not included at all, unless `effective` (then redacted when secret).
    static func json(_ configuration: AgentConfiguration, effective: Bool = false) -> JSONValue {
        .object([
            ("valid", true), ("file", .string(configuration.file)),
            (
                "events",
                .object([
                    ("output", .string(configuration.events.output.description)), ("probes", .string(configuration.events.probes.rawValue)),
                    ("include_certificates", .bool(configuration.events.includeCertificates)),
                ])
            ),
            (
                "policies",
                .array(
                    configuration.policies.map { entry in
                        .object([
                            ("name", .string(entry.name)), ("mode", .string(entry.policy.mode.rawValue)),
                            ("pins", .int(entry.policy.pins.count)), ("hosts", .array(entry.hosts.map { .string($0.description) })),
                            ("enforce", .bool(entry.policy.enforce)),
                            ("report_uri", .array(entry.reportURIs.map { .string(DisplayURL.redacting($0.absoluteString)) })),
                        ])
                    })
            ),
            (
                "endpoints",
                .array(
                    configuration.endpoints.map { endpoint -> JSONValue in
                        var fields: [(String, JSONValue)] = [
                            ("name", .string(endpoint.name)), ("url", .string(DisplayURL.redacting(endpoint.url.absoluteString))),
                            ("interval", .string(DurationSyntax.format(endpoint.interval))),
                            ("timeout", .string(DurationSyntax.format(endpoint.timeout))),
                            ("policies", .array((endpoint.security?.names ?? []).map(JSONValue.string))),
                            ("kind", .string(endpoint.kind.rawValue)), ("tls", .bool(endpoint.kind.usesTLS)),
                            ("effective_policy", effectivePolicyJSON(endpoint)),
                            ("proxy", .string(endpoint.proxy.settings.proxy(for: endpoint.url)?.description)),
                            ("proxy_source", .string(endpoint.proxy.source.rawValue)),
                        ]
                        if effective { fields.append(("effective", .object(endpoint.effectiveValues.map { ($0.key, $0.value) }))) }
                        return .object(fields)
                    })
            ),
            (
                "modules",
                .array(
                    configuration.modules.map { module -> JSONValue in
                        var fields: [(String, JSONValue)] = [("name", .string(module.name)), ("kind", .string(module.kind?.rawValue))]
                        if effective { fields.append(("effective", .object(module.effectiveValues.map { ($0.key, $0.value) }))) }
                        return .object(fields)
                    })
            ),
            ("targets", .array(configuration.reachabilityTargets.map { .string($0.description) })),
            ("metrics_textfile", .string(configuration.metricsTextfile)),
            ("metrics_listen", .string(configuration.metricsListen?.description)),
            ("metrics_basic_auth_users", configuration.metricsBasicAuthUsers.map { .array($0.map { .string($0) }) } ?? .null),
            ("metrics_probe_unauthenticated", .bool(configuration.metricsProbeUnauthenticated)),
            ("metrics_tls", .string(configuration.metricsTLSSummary)),
            ("connectivity", .string(configuration.connectivity.map(connectivitySummary))),
            ("warnings", .array(configuration.warnings.map(\.jsonValue))),
        ])
    }

    /// `http://192.0.2.10/generate_204 every 5m, timeout 10s, expect 204` (the URL without its query).
    static func connectivitySummary(_ connectivity: ConnectivityConfiguration) -> String {
        let check = connectivity.check
        let body = check.expectedBody.map { " containing \"\($0)\"" } ?? (check.expectedStatus == 204 ? ", empty" : "")
        return "\(DisplayURL.redacting(check.url.absoluteString)) every \(DurationSyntax.format(connectivity.interval)), "
            + "timeout \(DurationSyntax.format(check.timeout)), expect \(check.expectedStatus)\(body)"
    }

    /// What an endpoint's handshakes are held to and why: the combined mode, pins, enforcement and store,
    /// then each policy that applies with the pattern that matched (or "named" for the `policy:` key).
    /// Other TLS kinds than https say first how TLS starts (`TLS after STARTTLS (required)`, `implicit TLS`).
    static func effectivePolicy(_ endpoint: EndpointConfiguration) -> String {
        let kind = endpoint.kind
        guard kind.usesTLS else { return kind == .tcp ? "plain TCP, no TLS" : "plain http, no TLS" }
        let transport = transportSummary(kind).map { "\($0): " } ?? ""
        guard let security = endpoint.security else {
            return transport + "none (no policy applies): chain and host name against the system store, profile "
                + ProfileSelection.auto.explanation(anchorsFrom: .system)
        }
        let policy = security.policy
        var facts = [policy.mode.rawValue]
        if policy.mode != .none {
            facts.append("\(policy.pins.count) pins")
            if policy.mode == .certificate { facts.append("\(policy.pinnedCertificates.count) pinned certificates") }
            facts.append(policy.enforce ? "enforced" : "report-only")
            if let expires = policy.expires { facts.append("expires \(expires.formatted(.iso8601))") }
        }
        if policy.allowInvalidCertificates { facts.append("invalid certificates allowed") }
        if !policy.validatesDomainName { facts.append("host name not checked") }
        facts.append("store \(security.caFile ?? "system")")
        facts.append("profile \(policy.profile.explanation(anchorsFrom: anchorOrigin(security)))")
        let sources = security.sources.map { source in
            source.pattern.map { "\(source.name) (hosts \($0))" } ?? "\(source.name) (named)"
        }
        return transport + facts.joined(separator: ", ") + "; from " + sources.joined(separator: ", ")
    }

    /// How a kind other than https reaches TLS: `TLS handshake only` (tls), `TLS after STARTTLS (required)`
    /// for the upgrading kinds, `implicit TLS` for the others; nil for https and the kinds without TLS.
    static func transportSummary(_ kind: ServiceKind) -> String? {
        guard kind.usesTLS, kind != .https else { return nil }
        if kind == .tls { return "TLS handshake only" }
        if let command = kind.upgradeCommand { return "TLS after \(command) (required)" }
        return "implicit TLS"
    }

    /// Where the anchors of an endpoint's chains come from: its pinned certificates in certificate mode, else
    /// its policies' CA file, else the system store.
    private static func anchorOrigin(_ security: AppliedPolicy) -> TrustStore.Origin {
        security.policy.mode == .certificate ? .pinnedCertificates : security.caFile == nil ? .system : .caFile
    }

    /// ``effectivePolicy(_:)`` for machines; `null` for http endpoints and endpoints no policy applies to.
    static func effectivePolicyJSON(_ endpoint: EndpointConfiguration) -> JSONValue {
        guard let security = endpoint.security else { return .null }
        let policy = security.policy
        return .object([
            ("mode", .string(policy.mode.rawValue)), ("pins", .int(policy.pins.count)),
            ("pinned_certificates", .int(policy.pinnedCertificates.count)), ("enforce", .bool(policy.enforce)),
            ("expires", .string(policy.expires.map { $0.formatted(.iso8601) })),
            ("allow_invalid_certificates", .bool(policy.allowInvalidCertificates)),
            ("validates_domain_name", .bool(policy.validatesDomainName)),
            ("ca_file", .string(security.caFile)),
            ("profile", .string(policy.profile.description)),
            ("profile_meaning", .string(policy.profile.explanation(anchorsFrom: anchorOrigin(security)))),
            (
                "from",
                .array(
                    security.sources.map { source in
                        .object([
                            ("policy", .string(source.name)), ("matched_by", .string(source.pattern.map { "hosts \($0)" } ?? "named")),
                        ])
                    })
            ),
        ])
    }
}
