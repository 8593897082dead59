import PinpathHTTP
import PinpathReachability
import PinpathSupport
import PinpathYAML

/// One key an endpoint may write: a row of ``EndpointKey/all``, the table that is the only place a key is
/// declared. It drives reading (``EndpointReading``), `defaults:` (which keys, and which reach which kind), the
/// refusal of a key on a kind it does not apply to, unknown-key suggestions, `check-config --effective` and the
/// reference in docs/configuration.md (checked against it by `EndpointKeyTableTests`).
///
/// Adding a key is one row here, one stored property on ``EndpointReading`` and ``EndpointConfiguration`` for its
/// value, and one row of the reference.
struct EndpointKey: Sendable {
    /// Where a key may be written. Each place reads its keys with the same rows: a module (issue 26's `modules:`)
    /// is one more place, not a second parser.
    enum Place: Sendable, CaseIterable {
        /// An item of `endpoints:`.
        case endpoint
        /// `defaults:`, copied into every endpoint that does not set the key.
        case defaults
        /// A named probe recipe that Prometheus' targets fill in (`modules:`): no key of one endpoint's identity
        /// or schedule, since the target and the scrape give them.
        case module
    }

    /// The probe kinds (``ServiceKind``) a key means something for. Written on another kind the key is refused at
    /// its line, so a key that would do nothing is never silently ignored; a default of it is not applied there.
    enum Kinds: Sendable, Equatable {
        /// Every kind.
        case all
        /// `http://` and `https://`: the keys of the HTTP request.
        case http
        /// The kinds with a TLS handshake (all but `http` and `tcp`).
        case tls
        /// The TLS kinds other than `https`, whose checked name is not the URL's host by necessity.
        case tlsConnection
        /// `tcp://` only.
        case tcp
        /// The kinds that upgrade a plaintext protocol with STARTTLS.
        case startTLS
        /// The kinds whose server speaks first, and `tcp://`, whose answer to `send` is read.
        case greetingOrTCP

        /// Whether `kind` is one of them.
        func contains(_ kind: ServiceKind) -> Bool {
            switch self {
            case .all: true
            case .http: kind.isHTTP
            case .tls: kind.usesTLS
            case .tlsConnection: kind.usesTLS && !kind.isHTTP
            case .tcp: kind == .tcp
            case .startTLS: kind.upgradesWithSTARTTLS
            case .greetingOrTCP: kind.greets || kind == .tcp
            }
        }

        /// Whether a key of these kinds applies to `kind`; for a URL not understood (`nil`), only the keys of
        /// every kind do.
        func contains(_ kind: ServiceKind?) -> Bool { kind.map(contains) ?? (self == .all) }

        /// As the reference's "kinds" column writes them.
        var documented: String {
            switch self {
            case .all: "all"
            case .http: "http, https"
            case .tls: "TLS kinds"
            case .tlsConnection: "TLS kinds but https"
            case .tcp: "tcp"
            case .startTLS: "smtp, imap, pop3, ftp"
            case .greetingOrTCP: "greeting kinds, tcp"
            }
        }
    }

    /// The key as written.
    let name: String
    /// The kinds it applies to.
    var kinds: Kinds = .all
    /// Where it may be written.
    var places: Set<Place> = [.endpoint, .defaults, .module]
    /// What a missing key is reported as needing (`a name`), for the keys an endpoint must write; `nil` when it
    /// may be left out.
    var required: String?
    /// The default as the reference's "default" column shows it.
    var documentedDefault: String
    /// For a key that reads a local file (or, for a key's password, the environment) at load time and sends what
    /// it read to the endpoint's server, what it does (`reads a local file`): only the main file may write it. An
    /// included file that could would send the agent's private key or any file it can read to a URL of its
    /// choosing. Inherited from the main file's `defaults:`, such a key is a credential, scoped like secret headers.
    var localRead: String?
    /// Whether its value is a secret: `--effective` never shows more than `[redacted]`.
    var isSecret = false
    /// Whether `--effective` shows it on the kinds it does not apply to too: a plain http or tcp endpoint says it has
    /// no policy.
    var isShownOnEveryKind = false
    /// The problem a value of it on `kind` (a kind it does not apply to) is refused with; `nil` when its reader
    /// decides (a key whose refusal depends on its value, or that a related key's refusal covers).
    var refusal: (@Sendable (_ kind: ServiceKind) -> String)?
    /// Reads its value (present and not null) at `keyPath` into `reading`, reporting what is wrong with it.
    let read: @Sendable (_ node: Node, _ keyPath: String, _ reading: inout EndpointReading) -> Void
    /// What `--effective` shows of it for `endpoint`, in order (a key may show as more than one entry, or none).
    let shown: @Sendable (_ endpoint: EndpointConfiguration) -> [(key: String, value: JSONValue)]

    /// Whether it means something for `kind` (`nil`: a URL not understood).
    func applies(to kind: ServiceKind?) -> Bool { kinds.contains(kind) }

    /// The keys `place` may write, in the table's order.
    static func keys(in place: Place) -> [EndpointKey] { byPlace[place] ?? [] }

    /// The names `place` may write, in the table's order: the known keys of its mapping.
    static func names(in place: Place) -> [String] { keys(in: place).map(\.name) }

    /// The row of `name`, if it is an endpoint key.
    static func named(_ name: String) -> EndpointKey? { byName[name] }

    private static let byName = Dictionary(uniqueKeysWithValues: all.map { ($0.name, $0) })

    /// The rows of each place, filtered once: a module is read again for every target a scraper names.
    private static let byPlace = Dictionary(
        uniqueKeysWithValues: Place.allCases.map { place in (place, all.filter { $0.places.contains(place) }) })

    /// `method`, `headers`, `body`, `body_file` and `follow_redirects` are HTTP's.
    private static func httpOnly(_ key: String) -> @Sendable (ServiceKind) -> String {
        { kind in "\(key) applies to http:// and https:// URLs only; a \(kind.rawValue):// probe sends no HTTP request" }
    }
}

extension EndpointKey {
    /// Every endpoint key, in the order of the reference and of `--effective`.
    static let all: [EndpointKey] = [
        EndpointKey(
            name: "name", places: [.endpoint], required: "a name", documentedDefault: "required",
            read: { node, path, reading in reading.name = reading.decoder.endpointName(node, path) },
            shown: { [("name", .string($0.name))] }),
        EndpointKey(
            name: "url", places: [.endpoint], required: "a URL such as https://host/path or tls://host:port", documentedDefault: "required",
            read: { node, path, reading in
                reading.url = reading.decoder.url(node, path)
                reading.kind = reading.url.flatMap { ServiceKind(scheme: $0.scheme) }
            },
            shown: { [("url", .string(DisplayURL.redacting($0.url.absoluteString))), ("kind", .string($0.kind.rawValue))] }),
        EndpointKey(
            name: "method", kinds: .http, documentedDefault: "GET", refusal: httpOnly("method"),
            read: { node, path, reading in reading.method = reading.decoder.method(node, path) ?? reading.method },
            shown: { [("method", .string($0.method.rawValue))] }),
        EndpointKey(
            name: "headers", kinds: .http, documentedDefault: "none", refusal: httpOnly("headers"),
            read: { node, path, reading in reading.headers = reading.decoder.headers(node, path) ?? [] },
            shown: { [("headers", .object($0.headers.map { ($0.name, JSONValue.string($0.value.shownWithOrigin)) }))] }),
        EndpointKey(
            name: "body", kinds: .http, documentedDefault: "none", refusal: httpOnly("body"),
            read: { node, path, reading in
                if reading.fields["body_file"] != nil {
                    reading.decoder.report(.invalidValue, at: node, path, "give body or body_file, not both")
                } else {
                    reading.body = reading.decoder.string(node, path, "the request body as text").map { Array($0.utf8) }
                }
            },
            shown: { [("body", $0.body.map { JSONValue.string("\($0.count) bytes") } ?? .null)] }),
        EndpointKey(
            name: "body_file", kinds: .http, documentedDefault: "none", localRead: "reads a local file", refusal: httpOnly("body_file"),
            read: { node, path, reading in
                // Given with `body`, the problem is reported there.
                guard reading.fields["body"] == nil else { return }
                reading.body = reading.decoder.bodyFile(node, path)
            },
            shown: { _ in [] }),
        EndpointKey(
            name: "follow_redirects", kinds: .http, documentedDefault: "true", refusal: httpOnly("follow_redirects"),
            read: { node, path, reading in reading.followRedirects = reading.decoder.bool(node, path) ?? reading.followRedirects },
            shown: { [("follow_redirects", .bool($0.followRedirects))] }),
        EndpointKey(
            name: "expect", documentedDefault: "a 2xx status",
            read: { node, path, reading in
                reading.expect = ResponseExpectation(reading: node, at: path, in: reading.kind, reading.decoder) ?? ResponseExpectation()
            },
            shown: { [("expect", .object($0.expect.effectiveValues(for: $0.kind)))] }),
        EndpointKey(
            name: "starttls", kinds: .startTLS, documentedDefault: "required true",
            refusal: { kind in
                let kinds = ServiceKind.probed.filter(\.upgradesWithSTARTTLS).map { "\($0.rawValue)://" }
                return """
                    starttls applies to \(kinds.dropLast().joined(separator: ", ")) and \(kinds.last ?? "") only; a \(kind.rawValue):// \
                    probe \(kind.usesTLS ? "starts with TLS" : "has no TLS")
                    """
            },
            read: { node, path, reading in reading.startTLS = reading.decoder.bool(node, path) },
            shown: { _ in [] }),
        EndpointKey(
            name: "servername", kinds: .tlsConnection, documentedDefault: "the URL's host",
            refusal: { kind in
                kind.isHTTP
                    ? "servername applies to tls:// and the mail, FTP and ldaps:// kinds; an \(kind.rawValue) URL's host is the name checked"
                    : "servername is the TLS server name, and a \(kind.rawValue):// probe has no TLS"
            },
            read: { node, path, reading in
                guard reading.kind != nil else { return }
                reading.serverName = reading.decoder.serverName(node, path)
            },
            shown: { $0.serverName.map { [("servername", .string($0))] } ?? [] }),
        EndpointKey(
            name: "address", places: [.endpoint], documentedDefault: "none",
            read: { node, path, reading in reading.address = reading.decoder.connectAddress(node, path) },
            shown: { $0.address.map { [("address", .string($0.description))] } ?? [] }),
        EndpointKey(
            name: "send", kinds: .tcp, documentedDefault: "none",
            refusal: { kind in "send applies to tcp:// URLs only (a \(kind.rawValue):// probe sends what its protocol needs)" },
            read: { node, path, reading in
                guard reading.kind != nil else { return }
                reading.send = reading.decoder.sendText(node, path)
            },
            shown: { $0.send.map { [("send", .string($0))] } ?? [] }),
        EndpointKey(
            name: "client_certificate", kinds: .tls, documentedDefault: "none", localRead: "reads a local file",
            refusal: { kind in "a client certificate is sent in a TLS handshake, and a \(kind.rawValue):// probe has none" },
            read: { node, path, reading in reading.clientCertificate = reading.decoder.clientCertificate(node, path, reading.fields) },
            shown: { $0.clientCertificate.map { [("client_certificate", .string($0.certificate))] } ?? [] }),
        EndpointKey(
            name: "client_key", kinds: .tls, documentedDefault: "in the certificate's file", localRead: "reads a local file",
            read: { node, _, reading in reading.decoder.requireClientCertificate(for: "client_key", at: node, reading.fields) },
            shown: { $0.clientCertificate.map { [("client_key", .string($0.key))] } ?? [] }),
        EndpointKey(
            name: "client_key_password", kinds: .tls, documentedDefault: "none", localRead: "unlocks a local key file", isSecret: true,
            read: { node, _, reading in
                reading.decoder.requireClientCertificate(for: "client_key_password", at: node, reading.fields)
            },
            shown: { endpoint in
                endpoint.clientCertificate.map { [("client_key_password", $0.password == nil ? .null : .string($0.password?.description))] }
                    ?? []
            }),
        EndpointKey(
            name: "interval", places: [.endpoint, .defaults], documentedDefault: "1m",
            read: { node, path, reading in
                reading.interval = reading.decoder.duration(node, path, atLeast: .seconds(1)) ?? reading.interval
            },
            shown: { [("interval", .string(DurationSyntax.format($0.interval)))] }),
        EndpointKey(
            name: "timeout", documentedDefault: "10s",
            read: { node, path, reading in
                reading.timeout = reading.decoder.duration(node, path, atLeast: .milliseconds(1)).map { ($0, node) }
            },
            shown: { [("timeout", .string(DurationSyntax.format($0.timeout)))] }),
        EndpointKey(
            name: "policy", kinds: .tls, documentedDefault: "by hosts", isShownOnEveryKind: true,
            read: { node, path, reading in reading.readPolicy(node, path) },
            shown: { [("policy", .string($0.policyName)), ("policies", .array(($0.security?.names ?? []).map(JSONValue.string)))] }),
        EndpointKey(
            name: "ip_family", documentedDefault: "any",
            read: { node, path, reading in
                // `any` is no restriction: no family.
                let names = ["any"] + IPFamily.allCases.map(\.rawValue)
                guard let text = reading.decoder.choice(node, path, among: names) else { return }
                reading.ipFamily = IPFamily(rawValue: text)
            },
            shown: { [("ip_family", .string($0.ipFamily?.rawValue ?? "any"))] }),
        EndpointKey(
            name: "failure_threshold", documentedDefault: "2",
            read: { node, path, reading in
                reading.failureThreshold = reading.decoder.integer(node, path, in: 1...Int.max) ?? reading.failureThreshold
            },
            shown: { [("failure_threshold", .int($0.failureThreshold))] }),
        EndpointKey(
            name: "success_threshold", documentedDefault: "1",
            read: { node, path, reading in
                reading.successThreshold = reading.decoder.integer(node, path, in: 1...Int.max) ?? reading.successThreshold
            },
            shown: { [("success_threshold", .int($0.successThreshold))] }),
        EndpointKey(
            name: "cert_expiry_warning", documentedDefault: "[14d, 7d, 1d]",
            read: { node, path, reading in
                reading.certExpiryWarnings = reading.decoder.expiryThresholds(node, path) ?? reading.certExpiryWarnings
            },
            shown: { [("cert_expiry_warning", .array($0.certExpiryWarnings.map { .string(DurationSyntax.format($0)) }))] }),
        EndpointKey(
            name: "proxy", documentedDefault: "the file's proxy",
            read: { node, path, reading in
                reading.proxy = ProxyConfiguration(reading: node, at: path, in: .endpoint, reading.decoder) ?? reading.proxy
            },
            shown: { [("proxy", .string($0.proxy.summary(for: $0.url)))] }),
    ]
}
