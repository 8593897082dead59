import FoundationEssentials
import PinpathHTTP
import PinpathReachability
import PinpathYAML

/// The values of one endpoint's keys while its mapping is read: each row of ``EndpointKey/all`` reads its own key
/// into it, and ``endpoint(isFromIncludedFile:)`` checks the rules that join keys (a timeout within the interval,
/// an address without a proxy, the policy a TLS kind is held to) and makes the ``EndpointConfiguration``.
///
/// A module (issue 26) is read the same way in ``EndpointKey/Place/module``: its `kind:` sets ``kind`` before the
/// rows run, and each probed target supplies the name and URL that the module has none of.
struct EndpointReading {
    let decoder: ConfigurationDecoder
    /// The mapping's known keys; those only the main file may write are withdrawn from an included file's first.
    private(set) var fields: ConfigurationMapping
    /// The policies and proxy the endpoint is checked against.
    let context: EndpointConfiguration.Context

    /// The probe kind, from the URL's scheme; `nil` while the URL is not understood, when only the keys of every
    /// kind are refused or checked.
    var kind: ServiceKind?
    var name: String?
    var url: URL?
    var method = RequestMethod.get
    var headers: [EndpointConfiguration.Header] = []
    var body: [UInt8]?
    var followRedirects = true
    var expect = ResponseExpectation()
    /// `starttls` as written, `nil` when absent or not a boolean.
    var startTLS: Bool?
    var serverName: String?
    var address: (value: IPAddress, node: Node)?
    var send: String?
    var clientCertificate: EndpointConfiguration.ClientCertificateFiles?
    var interval = EndpointConfiguration.defaultInterval
    /// The timeout written, with its node; `nil` takes the default (10s, or the interval if shorter).
    var timeout: (value: Duration, node: Node)?
    var policyName: String?
    var namedPolicy: PolicyConfiguration?
    var ipFamily: IPFamily?
    var failureThreshold = 2
    var successThreshold = 1
    var certExpiryWarnings = EndpointConfiguration.defaultCertExpiryWarnings
    var proxy: ProxyConfiguration
    /// Whether this reads a module for one target a scraper named (nothing reads it again at the policies).
    private let readsTarget: Bool

    /// Reads the keys of `place` from `fields`, each with its row of the table, in the table's order.
    ///
    /// A module gives `moduleKind` (its `kind:`, so that the kind-dependent rows refuse and read as for an endpoint of
    /// that kind) and, when one of its targets is probed, `target`: the name and URL that it has no keys for.
    init(
        _ fields: ConfigurationMapping, in place: EndpointKey.Place, context: EndpointConfiguration.Context,
        _ decoder: ConfigurationDecoder,
        moduleKind: ServiceKind? = nil, target: (name: String, url: URL)? = nil
    ) {
        self.decoder = decoder
        self.fields = fields
        self.context = context
        self.proxy = context.proxy
        self.kind = target.flatMap { ServiceKind(scheme: $0.url.scheme) } ?? moduleKind
        self.name = target?.name
        self.url = target?.url
        self.readsTarget = target != nil
        withdrawMainFileOnlyKeys()
        for key in EndpointKey.keys(in: place) {
            let path = self.fields.path(key.name)
            guard let node = self.fields[key.name] else {
                if let what = key.required {
                    decoder.report(.missingKey, at: self.fields.node, self.fields.keyPath, "\(key.name) is missing (\(what))")
                }
                continue
            }
            if let kind, !key.applies(to: kind), let refusal = key.refusal {
                decoder.report(.invalidValue, at: node, path, refusal(kind))
                continue
            }
            key.read(node, path, &self)
        }
    }

    /// Refuses, in an included file, the keys only the main file may write (``EndpointKey/localRead``), and
    /// withdraws them before anything reads the files they name.
    private mutating func withdrawMainFileOnlyKeys() {
        for key in EndpointKey.all {
            guard let localRead = key.localRead, let entry = fields.values[key.name], decoder.isWrittenInIncludedFile(fields.path(key.name))
            else { continue }
            decoder.report(
                .notInIncludedFile, at: entry.key, fields.path(key.name),
                """
                \(key.name) \(localRead), which only \(decoder.mainFile) may name: an included file could send the agent's keys or any \
                file it can read to a server of its choosing; move this endpoint to \(decoder.mainFile)
                """)
            fields.withdraw(key.name)
        }
    }

    /// `policy`: a name among `policies:`, on a TLS kind.
    mutating func readPolicy(_ node: Node, _ keyPath: String) {
        guard let reference = decoder.string(node, keyPath, "a policy name") else { return }
        policyName = reference
        namedPolicy = context.policies.first { $0.name == reference }
        if namedPolicy != nil {
            if let kind, !EndpointKey.Kinds.tls.contains(kind) {
                decoder.report(
                    .invalidValue, at: node, keyPath,
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
            decoder.report(.undefinedReference, at: node, keyPath, message)
        }
    }

    /// The endpoint, after the rules that join its keys; `nil` when a problem was reported since `problemsBefore`.
    ///
    /// A module, which has no name or URL of its own, gives `standIn` to get the endpoint its keys make
    /// (for `check-config --effective`) without a target: the stand-in's host selects no policy.
    mutating func endpoint(problemsBefore: Int, standIn: (name: String, url: URL)? = nil) -> EndpointConfiguration? {
        requireStartTLS()
        let timeout = checkedTimeout()
        let security = appliedPolicy()
        let address = address.flatMap { checkedAddress($0.value, at: $0.node) }
        guard decoder.problems.count == problemsBefore, let name = name ?? standIn?.name, let url = url ?? standIn?.url
        else { return nil }
        return EndpointConfiguration(
            name: name, url: url, serverName: serverName, address: address, send: send, clientCertificate: clientCertificate,
            method: method, headers: headers, body: body, expect: expect, interval: interval, timeout: timeout,
            policyName: policyName, security: security,
            redirectPolicies: EndpointConfiguration.redirectPolicies(followRedirects: followRedirects, proxy: proxy, url: url, in: context),
            ipFamily: ipFamily, failureThreshold: failureThreshold, successThreshold: successThreshold,
            certExpiryWarnings: certExpiryWarnings, followRedirects: followRedirects,
            reportCollectors: EndpointConfiguration.reportCollectors(of: security, in: context), proxy: proxy,
            isFromIncludedFile: decoder.readingIncludedFile)
    }

    /// `starttls: true` is required for the kinds that upgrade a plaintext protocol (refused elsewhere by its row).
    /// A refused kind (`ldap://`) has its URL refused instead.
    private func requireStartTLS() {
        guard let kind, kind.refusal == nil, EndpointKey.Kinds.startTLS.contains(kind) else { return }
        let node = fields["starttls"]
        guard startTLS != true, node == nil || startTLS != nil else { return }
        let secure = kind == .ftp ? "ftp:// has no implicit-TLS variant here" : "or use \(kind.rawValue)s:// for implicit TLS"
        decoder.report(
            node == nil ? .missingKey : .invalidValue, at: node ?? fields.node, fields.path("starttls"),
            """
            \(node == nil ? "starttls is missing: " : "")a probe of \(kind.rawValue):// upgrades to TLS with STARTTLS and fails \
            when the server does not offer it; set starttls: true (\(secure)); pinpath never probes these protocols in plaintext
            """)
    }

    /// The timeout written, which may not be longer than the interval (probes of one endpoint never overlap), or
    /// the default: 10s, or the interval if that is shorter.
    private func checkedTimeout() -> Duration {
        guard let (value, node) = timeout else { return min(EndpointConfiguration.defaultTimeout, interval) }
        if value > interval {
            decoder.report(
                .invalidValue, at: node, fields.path("timeout"),
                """
                \(DurationSyntax.format(value)) is longer than the interval (\(DurationSyntax.format(interval))); a probe must \
                end before the next one starts
                """
            )
        }
        return value
    }

    /// The policy a TLS kind's handshakes are held to: the named one and those whose `hosts` match the checked name
    /// (the server name when one is given), combined.
    private func appliedPolicy() -> AppliedPolicy? {
        guard let url else { return nil }
        do throws(AppliedPolicy.Conflict) {
            return try EndpointConfiguration.appliedPolicy(
                url: url, kind: kind, serverName: serverName, named: namedPolicy, among: context.policies)
        } catch  where error.involvesNamedPolicy {
            decoder.report(.refusedPolicy, at: fields["policy"], fields.path("policy"), error.description)
        } catch {
            // Two host-matched policies: reported once, at the policies themselves, which a valid configuration
            // rules out for every host their patterns meet (``ConfigurationDecoder/reportTrustStoreConflicts``). A
            // target's reading fails closed all the same: no policy at all is never the answer to two.
            if readsTarget { decoder.report(.refusedPolicy, at: fields.node, fields.path("policy"), error.description) }
        }
        return nil
    }

    /// `address` is refused when the probe goes through a proxy, which connects to the URL's host itself.
    private func checkedAddress(_ address: IPAddress, at node: Node) -> IPAddress? {
        guard let url, let through = proxy.settings.proxy(for: url) else { return address }
        decoder.report(
            .invalidValue, at: node, fields.path("address"),
            """
            the probe goes through the proxy \(through), which connects to the URL's host itself, so the address cannot \
            be honoured; set proxy: none on this endpoint, or remove address
            """)
        return nil
    }
}
