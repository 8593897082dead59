import FoundationEssentials
import PinpathHTTP
import PinpathSupport
import PinpathYAML
import Synchronization

/// One entry of `modules:`: a named probe recipe whose targets a scraper names (`/probe?target=…&module=…`,
/// blackbox_exporter's multi-target pattern). Its keys are an endpoint's but `name`, `url`, `interval` and
/// `address` (``EndpointKey/Place/module``), plus `kind:` (which a bare `host:port` target needs) and `targets:`
/// (which targets it may probe, ``TargetAllowList``).
///
/// A module is read with the endpoint key table twice: once at load time, to report its problems with their
/// positions (as for an endpoint, against its `kind:` when it has one), and again for a target, with the
/// target's name and URL, so that the policy is chosen by the target's host, and the keys that do not apply to a
/// kind-less module's target's kind are refused in the words the configuration would use. There is no second
/// parser: both readings are ``EndpointReading``. The keys depend on the target's kind only, so the module is read
/// with the first good target of each kind, and later targets of that kind only choose again what depends on
/// their URL (``EndpointConfiguration/retargeted(to:in:)``).
package struct ModuleConfiguration: Sendable {
    /// The name the scraper gives (`module=`): one line of visible text, unique among the modules.
    package let name: String
    /// `kind:`; `nil` lets each target's scheme decide.
    package let kind: ServiceKind?
    /// `targets:`; `nil` admits any target but those refused by default (``TargetAdmission``).
    package let targets: TargetAllowList?
    /// The keys the module writes: a module without `kind:` shows these and the keys of every kind (``effectiveValues``).
    let writtenKeys: Set<String>
    /// The endpoint the module's keys make, with the module's name and a stand-in target (`target.invalid`, of the
    /// module's kind, or https): what ``effectiveValues`` shows. Probes use ``endpoint(forTarget:)``.
    let template: EndpointConfiguration
    /// The module's mapping as written, read again for each target.
    private let node: Node
    private let keyPath: String
    /// What the mapping is read against: the policies, their collectors, the file's proxy.
    private let context: EndpointConfiguration.Context
    /// The decoder's settings, for the reading of each target: relative paths and `${NAME}` mean what they meant
    /// at load time.
    private let file: String
    private let baseDirectory: String
    private let environment: [String: String]
    /// The module read with a target of each kind so far.
    private let readForKind = EndpointsByKind()

    /// The keys a module may write.
    static let keys = EndpointKey.names(in: .module) + ["kind", "targets"]

    /// The endpoint keys a module may not write, with why: named rather than called unknown, since an endpoint
    /// copied into `modules:` would have them.
    static let endpointOnlyKeys: [(key: String, why: String)] = [
        ("name", "its name is its key under modules:"),
        ("url", "each probe's target (&target=) gives the URL"),
        ("interval", "the scraper's scrape_interval decides when it probes"),
        ("address", "each target is resolved and checked when it is probed (list the address ranges it may reach in targets:)"),
    ]

    /// Why a target cannot be probed with a module: the problem the configuration would report, on one line.
    package struct TargetProblem: Error, Sendable {
        package let message: String
    }

    /// The endpoint a probe of `target` runs: the module's keys read again with the target as URL (a bare
    /// `host:port` takes the module's kind as its scheme, as blackbox_exporter prefixes `http://`) and the
    /// module's name as the endpoint's.
    /// - Throws: ``TargetProblem``: the target is not a URL the module can probe, or a key of the module does not
    ///   apply to the target's kind.
    func endpoint(forTarget target: String) throws(TargetProblem) -> EndpointConfiguration {
        let decoder = ConfigurationDecoder(file: file, baseDirectory: baseDirectory, environment: environment)
        // Only a refusal shows the target: redacting it parses it again as a URL, a tenth of a good probe's reading.
        var shown: String { ConfigurationProblem.quoted(DisplayURL.redacting(target)) }
        guard !target.isEmpty else { throw TargetProblem(message: "the target is empty") }
        let text: String
        if target.contains("://") {
            text = target
        } else if let kind {
            text = "\(kind.rawValue)://\(target)"
        } else {
            throw TargetProblem(
                message: """
                    module \(ConfigurationProblem.quoted(name)) has no kind:, so the target must be a URL (https://host/path, \
                    tls://host:port, …); \(shown) has no scheme
                    """)
        }
        guard let url = decoder.url(.scalar(.init(text)), "target") else { throw Self.firstProblem(decoder) }
        let targetKind = ServiceKind(scheme: url.scheme)
        // An http module takes http:// and https:// targets alike, as blackbox_exporter's http prober does.
        if let kind, let targetKind, targetKind != kind, !(kind.isHTTP && targetKind.isHTTP) {
            throw TargetProblem(
                message: """
                    module \(ConfigurationProblem.quoted(name)) probes \(kind.rawValue)://, and \(shown) is a \
                    \(targetKind.rawValue):// URL; give host:port, or a \(kind.rawValue):// URL
                    """)
        }
        // A target of a kind the module was read with: only what depends on the URL is chosen again. A scheme
        // pinpath does not know is read in full each time (the reading refuses it, or takes the module's kind).
        if let targetKind, let read = readForKind[targetKind], let endpoint = read.retargeted(to: url, in: context) {
            return endpoint
        }
        guard let fields = decoder.mapping(node, keyPath, known: Self.keys) else { throw Self.firstProblem(decoder) }
        var reading = EndpointReading(fields, in: .module, context: context, decoder, moduleKind: kind, target: (name, url))
        guard let endpoint = reading.endpoint(problemsBefore: 0) else { throw Self.firstProblem(decoder) }
        if let targetKind { readForKind[targetKind] = endpoint }
        return endpoint
    }

    /// A module's endpoint read with a target, by the target's kind: at most one per kind, whatever targets
    /// scrapers name. Probes of one module run at once on the task pool, hence the lock.
    private final class EndpointsByKind: Sendable {
        private let endpoints = Mutex<[ServiceKind: EndpointConfiguration]>([:])

        subscript(kind: ServiceKind) -> EndpointConfiguration? {
            get { endpoints.withLock { $0[kind] } }
            set { endpoints.withLock { $0[kind] = newValue } }
        }
    }

    /// The first problem a reading reported, without the file's name and position: the scraper sees it, and
    /// the configuration's path is none of its business.
    private static func firstProblem(_ decoder: ConfigurationDecoder) -> TargetProblem {
        guard let problem = decoder.problems.first else { return TargetProblem(message: "the target cannot be probed") }
        return TargetProblem(message: problem.keyPath.isEmpty ? problem.message : "\(problem.keyPath): \(problem.message)")
    }
}

extension ModuleConfiguration {
    /// Reads one module, `name` written at `key`; `nil` after reporting its problems.
    init?(
        reading value: Node, at keyPath: String, named: (name: String, key: Node), in context: EndpointConfiguration.Context,
        _ decoder: ConfigurationDecoder
    ) {
        let before = decoder.problems.count
        let nameIsVisible = decoder.isVisibleName(named.name, at: named.key, keyPath, what: "a module name")
        guard var fields = decoder.mapping(value, keyPath, known: Self.keys + Self.endpointOnlyKeys.map(\.key)) else { return nil }
        for (key, why) in Self.endpointOnlyKeys {
            guard let entry = fields.values[key] else { continue }
            decoder.report(.unknownKey, at: entry.key, fields.path(key), "a module has no \(key): \(why)")
            fields.withdraw(key)
        }
        let kind = fields["kind"].flatMap { node in
            decoder.choice(node, fields.path("kind"), among: ServiceKind.probed.map(\.rawValue)).flatMap(ServiceKind.init(rawValue:))
        }
        var reading = EndpointReading(fields, in: .module, context: context, decoder, moduleKind: kind)
        // The rules that join keys (starttls required, the timeout, the named policy's kind); a module has no
        // name or URL, so the endpoint that comes of it stands in for its targets (`--effective` shows its values).
        let standIn = URL(string: "\((kind ?? .https).rawValue)://target.invalid")
        let template = standIn.flatMap { reading.endpoint(problemsBefore: before, standIn: (named.name, $0)) }
        let targets = fields["targets"].flatMap { TargetAllowList(reading: $0, at: fields.path("targets"), decoder) }
        if let targets, !targets.networks.isEmpty, reading.proxy.settings != .direct {
            decoder.report(
                .invalidValue, at: fields["targets"], fields.path("targets"),
                """
                the module's probes go through a proxy (\(reading.proxy.source.rawValue)), which resolves names itself, so an \
                address range cannot be checked against them; list host patterns only, or set proxy: none
                """)
        }
        // A scraper chooses the target: without targets:, a credential would go to any host it names.
        let credentials =
            reading.headers.filter { $0.value.isSecret || HeaderFields.isCredential($0.name) }.map { "headers.\($0.name)" }
            + (reading.clientCertificate == nil ? [] : ["client_certificate"])
        if targets == nil, let first = credentials.first {
            decoder.report(
                .invalidValue, at: fields[first.hasPrefix("headers.") ? "headers" : "client_certificate"], fields.path(first),
                """
                the module sends credentials (\(credentials.joined(separator: ", "))) to whatever target a scraper names; list the \
                hosts it may send them to in targets:
                """)
        }
        guard nameIsVisible, decoder.problems.count == before, let template else { return nil }
        self.init(
            name: named.name, kind: kind, targets: targets, writtenKeys: Set(fields.values.keys), template: template, node: value,
            keyPath: keyPath, context: context, file: decoder.file,
            baseDirectory: decoder.baseDirectory, environment: decoder.environment)
    }
}
