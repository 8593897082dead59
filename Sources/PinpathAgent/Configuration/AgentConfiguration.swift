import FoundationEssentials
import Glibc
import PinpathReachability
import PinpathSecurity
import PinpathYAML

/// The agent's validated configuration (`etc/pinpath.yaml` is the commented example): every default
/// applied, every reference resolved, every file it names already read.
///
/// Load it with ``load(path:environment:)``. A configuration that loaded is complete: the agent never finds
/// a problem in it later, and a reload (SIGHUP) either yields a new one or a ``ConfigurationError`` listing
/// all the problems, while the old configuration keeps running.
public struct AgentConfiguration: Sendable {
    /// The file it was read from, as given.
    public let file: String
    /// Where events go and which probe results become events.
    package let events: EventsConfiguration
    /// The named security policies, in file order (the order matters when several match a host).
    package let policies: [PolicyConfiguration]
    /// The endpoints to probe, in file order.
    package let endpoints: [EndpointConfiguration]
    /// Extra reachability targets to watch (`reachability.targets`), besides the endpoints' hosts.
    package let reachabilityTargets: [ReachabilityTarget]
    /// The node_exporter textfile to write metrics to (`metrics.textfile`), resolved; `nil` for none.
    package let metricsTextfile: String?
    /// Where `/metrics`, `/healthz` and `/readyz` are served (`metrics.listen`); `nil` for nowhere (the default).
    package var metricsListen: MetricsListenAddress? = nil
    /// How many `/probe` requests may run at once (`metrics.probe_max_in_flight`); one more is answered 503.
    package var metricsProbeMaxInFlight = AgentConfiguration.defaultProbeMaxInFlight
    /// blackbox_exporter's users scrape a few dozen targets per Prometheus at once; a probe costs a handshake.
    package static let defaultProbeMaxInFlight = 64
    /// Who may use the listener (`metrics.basic_auth`, `metrics.probe_unauthenticated`); a reload applies it
    /// without a restart.
    var metricsAccess = ListenerAccess()
    /// The users of `metrics.basic_auth`, sorted (their hashes are never shown); `nil` when it is not set.
    package var metricsBasicAuthUsers: [String]? { metricsAccess.basicAuth?.users }
    /// `metrics.tls` in words (`tls CERT, key KEY, client_ca CA, min TLS12`); `nil` for plain HTTP.
    package var metricsTLSSummary: String? {
        metricsAccess.tls.map { tls in
            "tls \(tls.certificate), key \(tls.key)\(tls.clientCA.map { ", client_ca \($0) (client certificates required)" } ?? ""), min \(tls.minimumVersion.rawValue)"
        }
    }
    /// `metrics.probe_unauthenticated`.
    package var metricsProbeUnauthenticated: Bool { metricsAccess.probeUnauthenticated }
    /// The proxies endpoints without a `proxy:` of their own go through (the top-level `proxy:`, else the
    /// environment's).
    package let proxy: ProxyConfiguration
    /// The connectivity check (`connectivity:`); `nil` when off (the default).
    package var connectivity: ConnectivityConfiguration? = nil
    /// The probe recipes a scraper names with its targets (`modules:`), in file order.
    package var modules: [ModuleConfiguration] = []
    /// What loaded but deserves a look (pins already expired), sorted by position; `check-config` prints these.
    public var warnings: [ConfigurationProblem] = []

    /// The module named `name`.
    package func module(named name: String) -> ModuleConfiguration? { modules.first { $0.name == name } }

    /// The policy named `name`.
    package func policy(named name: String) -> PolicyConfiguration? { policies.first { $0.name == name } }

    static let keys = [
        "events", "policies", "defaults", "endpoints", "include", "reachability", "metrics", "proxy", "connectivity", "modules",
    ]

    /// Reads and validates the configuration file at `path`.
    ///
    /// Relative paths inside the file (certificates, `ca_file`, the events output, the metrics textfile) are
    /// resolved against the file's directory. Certificate and CA files are read now, with the caller's
    /// privileges: run `pinpath check-config` as the agent's user for a faithful answer.
    /// - Parameters:
    ///   - path: the YAML file; relative to the working directory when relative.
    ///   - environment: where `${NAME}` in header values is looked up; the process environment by default.
    /// - Throws: ``ConfigurationError`` with every problem found, each with file, line, column and key path.
    public static func load(
        path: String, environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(ConfigurationError) -> AgentConfiguration {
        let text = try ConfigurationDocument.text(of: path, as: .main)
        let directory = path.lastIndex(of: "/").map { String(path[...$0]) } ?? "."
        return try parse(yaml: text, file: path, baseDirectory: directory, environment: environment)
    }

    /// Validates YAML text; `file` names it in problems, `baseDirectory` anchors relative paths.
    /// `package` for the fuzz entry points (Tests/PinpathFuzzing), which feed it text without a file.
    package static func parse(
        yaml: String, file: String, baseDirectory: String, environment: [String: String]
    ) throws(ConfigurationError) -> AgentConfiguration {
        let document = try ConfigurationDocument.compose(yaml, file: file, as: .main)
        let root = document?.root
        let decoder = ConfigurationDecoder(file: file, baseDirectory: baseDirectory, environment: environment)
        // An empty file is an empty configuration: the machine's own reachability is still reported.
        let fields = root.flatMap { decoder.mapping($0, "", known: keys) }

        let events = fields?["events"].flatMap { EventsConfiguration(reading: $0, at: "events", decoder) } ?? EventsConfiguration()
        let declared = fields?["policies"].flatMap { decoder.namedEntries($0, "policies") } ?? []
        let policies = declared.compactMap {
            PolicyConfiguration(reading: $0.value, at: ConfigurationDecoder.keyPath("policies", $0.name), in: ($0.name, $0.key), decoder)
        }
        decoder.reportTrustStoreConflicts(policies, declared: declared)
        // A `proxy:` that cannot be read is no proxy, not the environment's: the file said which it wants.
        let proxy =
            fields?["proxy"].map {
                ProxyConfiguration(reading: $0, at: "proxy", in: .configuration, decoder)
                    ?? .init(settings: .direct, source: .configuration)
            } ?? .environment(decoder)
        let collectors = decoder.reportCollectors(policies, declared: declared, proxy: proxy)
        let context = EndpointConfiguration.Context(
            policies: policies, declaredPolicies: declared.map(\.name), collectors: collectors, proxy: proxy)
        let defaults = fields?["defaults"].flatMap { EndpointDefaults(reading: $0, at: "defaults", decoder) } ?? .none
        let ownEndpoints =
            fields?["endpoints"].flatMap { decoder.list($0, "endpoints", of: "endpoints (mappings with name and url)") } ?? []
        let sources =
            [EndpointSource(file: file, endpoints: ownEndpoints, trust: .mainFile, written: document?.written ?? .zero)]
            + (fields?["include"].map { includedEndpoints($0, decoder) } ?? [])
        // Refused defaults leave no endpoint to read: each would only report what the defaults gave it.
        let applications =
            defaults.applications(
                to: sources, written: sources.reduce(.zero) { $0 + $1.written }, policies: policies, at: fields?["defaults"],
                decoder) ?? []
        var endpoints: [EndpointConfiguration] = []
        for (source, applied) in zip(sources, applications) {
            decoder.file = source.file
            if case .included = source.trust { decoder.readingIncludedFile = true }
            for (index, (node, application)) in zip(source.endpoints, applied).enumerated() {
                let keyPath = "endpoints[\(index)]"
                decoder.inherited = (keyPath, application.inherited)
                decoder.warnWithheld(application.withheld, at: node, keyPath)
                if var endpoint = EndpointConfiguration(reading: application.node, at: keyPath, in: context, decoder) {
                    endpoint.withheldDefaults = application.withheld.map(\.key)
                    endpoints.append(endpoint)
                }
            }
            decoder.inherited = nil
            decoder.readingIncludedFile = false
        }
        decoder.file = file
        let modules = (fields?["modules"].flatMap { decoder.namedEntries($0, "modules") } ?? []).compactMap {
            ModuleConfiguration(
                reading: $0.value, at: ConfigurationDecoder.keyPath("modules", $0.name), named: ($0.name, $0.key), in: context, decoder)
        }
        let endpointNodes = sources.flatMap(\.endpoints)
        let targets = fields?["reachability"].map { decoder.reachabilityTargets($0) } ?? []
        let metrics = fields?["metrics"].map { decoder.metrics($0) }
        let connectivity = fields?["connectivity"].flatMap {
            ConnectivityConfiguration(reading: $0, at: "connectivity", in: policies, decoder)
        }
        if endpointNodes.isEmpty && targets.isEmpty && fields?["modules"] == nil {
            decoder.warn(
                .nothingToMonitor, at: fields?["endpoints"], "endpoints",
                "no endpoints and no reachability targets: the agent would only report this machine's own path")
        }

        guard decoder.problems.isEmpty else { throw ConfigurationError(problems: decoder.problems) }
        return AgentConfiguration(
            file: file, events: events, policies: policies, endpoints: endpoints, reachabilityTargets: targets,
            metricsTextfile: metrics?.textfile, metricsListen: metrics?.listen,
            metricsProbeMaxInFlight: metrics?.probeMaxInFlight ?? AgentConfiguration.defaultProbeMaxInFlight,
            metricsAccess: metrics?.access ?? ListenerAccess(), proxy: proxy, connectivity: connectivity, modules: modules,
            warnings: ConfigurationError(problems: decoder.warnings).problems)
    }
}

extension ConfigurationDecoder {
    /// `reachability: { targets: [...] }`: addresses or host names, each once.
    func reachabilityTargets(_ node: Node) -> [ReachabilityTarget] {
        guard let fields = mapping(node, "reachability", known: ["targets"]) else { return [] }
        var seen: Set<ReachabilityTarget> = []
        return elements(fields, "targets", of: "addresses or host names") { node, path in
            guard let target = parse(node, path, "an address or host name", { try ReachabilityTarget(parsing: $0) }) else { return nil }
            guard seen.insert(target).inserted else {
                report(.duplicate, at: node, path, "\(target) is already a target")
                return nil
            }
            return target
        }
    }

    /// `metrics: { textfile: …, listen: …, tls: …, basic_auth: …, probe_unauthenticated: …, probe_max_in_flight: … }`:
    /// a node_exporter textfile, where `/metrics` listens, who may use it, and how many `/probe` requests run at once.
    func metrics(_ node: Node) -> (textfile: String?, listen: MetricsListenAddress?, probeMaxInFlight: Int?, access: ListenerAccess) {
        let known = ["textfile", "listen", "tls", "basic_auth", "probe_unauthenticated", "probe_max_in_flight"]
        guard let fields = mapping(node, "metrics", known: known) else { return (nil, nil, nil, ListenerAccess()) }
        // Each probe holds a connection and a transfer: thousands at once would exhaust descriptors first.
        let probeMaxInFlight = fields["probe_max_in_flight"].flatMap {
            integer($0, fields.path("probe_max_in_flight"), in: 1...4096)
        }
        let textfile = fields["textfile"].flatMap { metricsTextfile($0, fields.path("textfile")) }
        let listen = fields["listen"].flatMap { value -> MetricsListenAddress? in
            let address = parse(value, fields.path("listen"), "an address:port or a Unix socket path") {
                try MetricsListenAddress(parsing: $0)
            }
            if case .unix(let path) = address { reportUnwritableDirectory(of: path, at: value, fields.path("listen")) }
            return address
        }
        let users = fields["basic_auth"].flatMap { basicAuth($0, fields.path("basic_auth")) }
        let costs = Set(users?.hashes.values.map(\.cost) ?? [])
        if costs.count > 1 {
            // An unknown user is checked against a decoy of the highest cost; a user of a lower cost answers sooner.
            warn(
                .mixedBcryptCosts, at: fields["basic_auth"], fields.path("basic_auth") + ".users",
                "the users' bcrypt hashes have different costs (\(costs.sorted().map(String.init).joined(separator: ", "))): a wrong password for a user of a lower cost is answered sooner than an unknown user's, so the time of a 401 tells which users exist; give every user the same cost"
            )
        }
        let probeUnauthenticated = fields["probe_unauthenticated"].flatMap { bool($0, fields.path("probe_unauthenticated")) } ?? false
        let tls = fields["tls"].flatMap { listenerTLS($0, fields.path("tls")) }
        let access = ListenerAccess(basicAuth: users, tls: tls, probeUnauthenticated: probeUnauthenticated, listen: listen)
        if let listen, let refusal = access.probeRefusal {
            // A warning, not an error: configurations written before /probe listen on every address and serve only
            // their own metrics, which stay served; /probe answers 403 with the same sentence.
            warn(.unprotectedListener, at: fields["listen"], fields.path("listen"), "\(listen) is reachable from other hosts: \(refusal)")
        }
        return (textfile, listen, probeMaxInFlight, access)
    }

    /// `metrics.tls: { certificate: …, key: …, client_ca: …, min_version: TLS12 }`, as exporter-toolkit's
    /// `tls_server_config` (`cert_file`, `key_file`, `client_ca_file` with `RequireAndVerifyClientCert`,
    /// `min_version`). The files are read and checked now, so a problem has the position of the key that names it.
    private func listenerTLS(_ node: Node, _ keyPath: String) -> ListenerTLS? {
        guard let fields = mapping(node, keyPath, known: ["certificate", "key", "client_ca", "min_version"]) else { return nil }
        let certificateNode = required(fields, "certificate", "the server's certificate, PEM, with its intermediates after it")
        let keyNode = required(fields, "key", "the certificate's private key, PEM, not encrypted")
        let certificate = certificateNode.flatMap { string($0, fields.path("certificate"), "a PEM file path") }.map(resolve(path:))
        let key = keyNode.flatMap { string($0, fields.path("key"), "a PEM file path") }.map(resolve(path:))
        let clientCANode = fields["client_ca"]
        let clientCA = clientCANode.flatMap { string($0, fields.path("client_ca"), "a PEM file path") }.map(resolve(path:))
        var minimumVersion = TLSServerContext.MinimumVersion.tls12
        if let versionNode = fields["min_version"], let text = string(versionNode, fields.path("min_version"), "TLS12 or TLS13") {
            guard let version = TLSServerContext.MinimumVersion(rawValue: text) else {
                report(
                    .invalidValue, at: versionNode, fields.path("min_version"),
                    "\(ConfigurationProblem.quoted(text)) is not a TLS version the listener accepts; use TLS12 (the default) or TLS13")
                return nil
            }
            minimumVersion = version
        }
        guard let certificate, let key, let certificateNode, let keyNode, clientCANode == nil || clientCA != nil else { return nil }
        do throws(SecurityError) {
            let context = try TLSServerContext(
                certificatePath: certificate, keyPath: key, clientCAPath: clientCA, minimumVersion: minimumVersion)
            return ListenerTLS(certificate: certificate, key: key, clientCA: clientCA, minimumVersion: minimumVersion, context: context)
        } catch {
            let (node, name): (Node, String) =
                switch error.code {
                case .unusableServerKey: (keyNode, "key")
                case .unusableClientCA: (clientCANode ?? certificateNode, "client_ca")
                default: (certificateNode, "certificate")
                }
            report(.unusableFile, at: node, fields.path(name), error.message)
            return nil
        }
    }

    /// `metrics.basic_auth: { users: { NAME: BCRYPT_HASH, … } }`, as exporter-toolkit's `basic_auth_users`.
    private func basicAuth(_ node: Node, _ keyPath: String) -> BasicAuthUsers? {
        guard let fields = mapping(node, keyPath, known: ["users"]),
            let usersNode = required(fields, "users", "a mapping of user names to bcrypt hashes"),
            let entries = namedEntries(usersNode, fields.path("users"))
        else { return nil }
        var hashes: [String: BcryptHash] = [:]
        var valid = true
        for (user, key, value) in entries {
            let path = ConfigurationDecoder.keyPath(fields.path("users"), user)
            guard !user.isEmpty, !user.contains(":"), user.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value != 0x7f }) else {
                // A colon ends the user name in an Authorization header (RFC 7617); a control cannot be sent in one.
                report(.invalidValue, at: key, path, "a user name cannot be empty nor hold a colon or a control character")
                valid = false
                continue
            }
            guard let text = string(value, path, "a bcrypt hash") else {
                valid = false
                continue
            }
            do {
                hashes[user] = try BcryptHash(parsing: text)
            } catch {
                // The message never quotes the value: it may be a password written by mistake.
                report(.invalidValue, at: value, path, "user \(ConfigurationProblem.quoted(user)): \(error.description)")
                valid = false
            }
        }
        if entries.isEmpty {
            report(
                .missingKey, at: usersNode, fields.path("users"), "no users: list at least one (NAME: BCRYPT_HASH), or remove basic_auth")
            return nil
        }
        return valid ? BasicAuthUsers(hashes: hashes) : nil
    }

    /// `metrics.textfile`: a `.prom` file, the only name node_exporter's textfile collector reads.
    private func metricsTextfile(_ value: Node, _ keyPath: String) -> String? {
        guard let text = string(value, keyPath, "a file path") else { return nil }
        guard text.hasSuffix(".prom"), !text.hasSuffix("/.prom") else {
            report(
                .invalidValue, at: value, keyPath,
                "\(ConfigurationProblem.quoted(text)) does not end in .prom; node_exporter's textfile collector reads only *.prom files")
            return nil
        }
        let path = resolve(path: text)
        reportUnwritableDirectory(of: path, at: value, keyPath)
        return path
    }
}
