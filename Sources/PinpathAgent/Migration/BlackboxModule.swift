import PinpathHTTP
import PinpathYAML

/// One module of a blackbox_exporter configuration, converted to one pinpath module (or to a comment saying why
/// it was skipped). Options are read in the file's order; a value of the wrong shape is a comment, not a failure:
/// blackbox_exporter itself is the judge of its file, the converter only says what it could not carry over.
struct BlackboxModule {
    let name: String
    let fields: Node.Mapping

    /// The probers pinpath has nothing for, with why.
    static let otherProbers = [
        "icmp":
            "pinpath probes TCP, TLS, HTTP and STARTTLS services, not ICMP echo; its reachability monitor already reports whether the kernel has a route",
        "dns": "pinpath has no DNS prober; probe the service the name is for instead",
        "grpc": "pinpath has no gRPC health-check prober; an https module can probe the same server's TLS and pins",
        "unix": "pinpath probes network targets only, not Unix sockets",
        "websocket": "pinpath has no WebSocket prober; an http module can probe the same URL's handshake",
    ]

    /// The converted module, or a comment when its prober has no pinpath equivalent.
    func converted(_ names: inout ConversionNames) -> ConvertedYAML.Entry {
        let quotedName = ConvertedYAML.quoted(name)
        guard let prober = fields["prober"]?.string else {
            return ConvertedYAML.Entry(comments: ["module \(quotedName) skipped: it names no prober"])
        }
        var module = ConvertedModule(name: name, names: names)
        switch prober {
        case "http":
            module.http(fields["http"]?.mapping)
        case "tcp":
            guard module.tcp(fields["tcp"]?.mapping) else {
                return ConvertedYAML.Entry(comments: ["module \(quotedName) skipped: \(module.notes.last ?? "")"])
            }
        default:
            let reason = Self.otherProbers[prober] ?? "no pinpath equivalent is known for this prober"
            return ConvertedYAML.Entry(comments: ["module \(quotedName) skipped: prober \(ConvertedYAML.quoted(prober)): \(reason)"])
        }
        module.moduleOptions(fields)
        module.noteCredentialTargets()
        names = module.names
        return ConvertedYAML.Entry(comments: module.notes, key: name, value: .mapping(module.values()))
    }
}

/// The pinpath keys a module converts to, and the comments on what did not convert.
struct ConvertedModule {
    /// The policies and environment variables named by every module so far.
    private(set) var names: ConversionNames
    private(set) var notes: [String] = []
    private var keys: [String: ConvertedYAML.Value] = [:]
    private var headers: [(key: String, value: ConvertedYAML.Value)] = []
    /// `expect:` but its headers, by key.
    private var expect: [String: ConvertedYAML.Value] = [:]
    private var expectedHeaders: [(key: String, value: ConvertedYAML.Value)] = []
    /// The probe kind, once the prober's options decided it.
    private var kind: String?
    private let moduleName: String

    init(name: String, names: ConversionNames) {
        self.moduleName = name
        self.names = names
    }

    /// The keys in the order of the endpoint key table (``EndpointKey/all``), `kind` first.
    func values() -> [(key: String, value: ConvertedYAML.Value)] {
        var keys = keys
        if let kind { keys["kind"] = .plain(kind) }
        if !headers.isEmpty { keys["headers"] = .mapping(headers) }
        var expect = expect
        if !expectedHeaders.isEmpty { expect["headers"] = .mapping(expectedHeaders) }
        let expectOrder = ResponseExpectation.Key.all.map(\.name)
        let expectPairs = expectOrder.compactMap { key in expect[key].map { (key, $0) } }
        if !expectPairs.isEmpty { keys["expect"] = .mapping(expectPairs) }
        if sendsCredentials {
            keys["targets"] = .list([.text(Self.credentialTargetsPlaceholder)])
        }
        let order = ["kind"] + EndpointKey.names(in: .module).filter { $0 != "kind" } + ["targets"]
        let known: [(key: String, value: ConvertedYAML.Value)] = order.compactMap { key in keys[key].map { (key: key, value: $0) } }
        let others = keys.filter { !order.contains($0.key) }.sorted { $0.key < $1.key }.map { (key: $0.key, value: $0.value) }
        return known + others
    }

    /// What a module that sends credentials lists in `targets:` until the operator names its hosts: a name no
    /// target can have (`.invalid`, RFC 2606), so that the converted module is accepted and probes nothing.
    /// blackbox sends a module's credentials to any target a scraper names; pinpath only to the hosts listed.
    static let credentialTargetsPlaceholder = "list-the-hosts-this-module-may-send-credentials-to.invalid"

    /// Headers whose values are known to carry no secret. Any other header may (`X-Pass`, `X-Signature`, a vendor's
    /// token header whose name says nothing), so a module that sends one is treated as sending credentials.
    static let nonSecretHeaders: Set<String> = [
        "accept", "accept-language", "accept-encoding", "user-agent", "host", "content-type", "cache-control", "pragma", "origin",
        "referer",
    ]

    /// What the module sends that may be a secret, for the comment: credentials (a credential header, a client
    /// certificate), a header not known to carry none, a request body, a tcp `send`. pinpath sends them only to the
    /// hosts its `targets:` lists.
    private var secretsSent: [String] {
        var sent: [String] = []
        if headers.contains(where: { HeaderFields.isCredential($0.key) }) || keys["client_certificate"] != nil {
            sent.append("credentials")
        }
        let unknownHeaders = headers.map(\.key).filter {
            !HeaderFields.isCredential($0) && !Self.nonSecretHeaders.contains($0.lowercased())
        }
        if !unknownHeaders.isEmpty {
            sent.append("headers that may hold a secret (\(unknownHeaders.map(ConvertedYAML.quoted).joined(separator: ", ")))")
        }
        if keys["body"] != nil || keys["body_file"] != nil { sent.append("a request body") }
        if keys["send"] != nil { sent.append("what its query_response sends") }
        return sent
    }

    private var sendsCredentials: Bool { !secretsSent.isEmpty }

    /// The comment that says why `targets:` holds a placeholder.
    mutating func noteCredentialTargets() {
        let sent = secretsSent
        guard !sent.isEmpty else { return }
        notes.append(
            """
            targets: blackbox sends this module's \(sent.joined(separator: ", ")) to any target; pinpath sends them only \
            to the hosts listed here: replace the placeholder with them (until then the module probes nothing)
            """)
    }

    private mutating func note(_ option: String, _ reason: String) { notes.append("\(option): not converted: \(reason)") }

    // MARK: module level

    /// `timeout`, and the keys a module may have besides its prober's section.
    mutating func moduleOptions(_ fields: Node.Mapping) {
        for (key, value) in fields {
            switch key.string {
            case "prober", "http", "tcp", "icmp", "dns", "grpc", "unix", "websocket": continue
            case "timeout": timeout(value)
            default: note(ConvertedYAML.quoted(key.string ?? "?"), "not a blackbox_exporter module option known to the converter")
            }
        }
    }

    private mutating func timeout(_ node: Node) {
        guard let text = node.string, let converted = GoDuration(text) else {
            return note("timeout", "not a Go duration (such as 5s); pinpath's default is 10s")
        }
        keys["timeout"] = .plain(converted.text)
        if !converted.isExact { notes.append("timeout: rounded up to whole milliseconds, the smallest unit pinpath reads") }
    }

    // MARK: http

    mutating func http(_ section: Node.Mapping?) {
        var preferredFamily: String?
        var fallback: Bool?
        var httpsOnly = false
        for (key, value) in section ?? Node.Mapping([]) {
            let option = key.string ?? "?"
            switch option {
            case "valid_status_codes": statuses(value)
            case "method": keys["method"] = text(value).map(ConvertedYAML.Value.text) ?? keys["method"]
            case "headers": plainHeaders(value)
            case "http_headers": structuredHeaders(value)
            case "body": keys["body"] = text(value).map(ConvertedYAML.Value.text) ?? keys["body"]
            case "body_file":
                guard let path = text(value) else { continue }
                keys["body_file"] = .text(path)
                notes.append("body_file: read when pinpath loads its configuration, relative to the configuration's directory")
            case "follow_redirects", "no_follow_redirects":
                guard let flag = bool(value) else { continue }
                keys["follow_redirects"] = .plain(flag == (option == "follow_redirects") ? "true" : "false")
            case "fail_if_body_not_matches_regexp": bodyPatterns(value)
            case "fail_if_header_not_matches": headerPatterns(value)
            case "preferred_ip_protocol": preferredFamily = text(value)
            case "ip_protocol_fallback": fallback = bool(value)
            case "tls_config": tls(value, isHTTP: true)
            case "proxy_url": proxy(value)
            case "basic_auth": basicAuth(value)
            case "bearer_token", "bearer_token_file":
                credentialHeader("Authorization", scheme: "Bearer", from: option)
            case "authorization":
                // blackbox's default scheme, also for an empty type.
                let type = value.mapping?["type"]?.string ?? ""
                let scheme = type.isEmpty ? "Bearer" : type
                // Copied into the header before its ${…}: anything but a scheme name could be a ${…} of its own,
                // which pinpath would expand from its environment and send.
                guard HeaderFields.isToken(scheme) else {
                    note(
                        "authorization.type",
                        "not an authentication scheme (letters, digits and !#$%&'*+-.^_`|~ only, as Bearer): no Authorization header"
                    )
                    continue
                }
                credentialHeader("Authorization", scheme: scheme, from: "authorization")
            case "fail_if_not_ssl":
                guard bool(value) == true else { continue }
                httpsOnly = true
                notes.append("fail_if_not_ssl: kind https, so a target must be an https:// URL")
            case "fail_if_ssl":
                guard bool(value) == true else { continue }
                note("fail_if_ssl", "a module probes what its target's scheme says: give it http:// targets")
            case "fail_if_body_matches_regexp":
                note(option, "pinpath has no expectation that a body must NOT match; expect.body_matches says what it must match")
            case "fail_if_header_matches":
                note(option, "pinpath has no expectation that a header must NOT match; expect.headers says what one must match")
            case "fail_if_body_json_matches_cel", "fail_if_body_json_not_matches_cel":
                note(option, "pinpath has no CEL expressions; expect.body_matches or expect.body_contains may check the JSON text")
            case "valid_http_versions":
                note(option, "pinpath does not check the HTTP version; libcurl negotiates it")
            case "skip_resolve_phase_with_proxy":
                note(option, "through a proxy pinpath never resolves the target itself: the proxy does")
            case "compression":
                note(option, "pinpath does not ask for a compressed body; add an Accept-Encoding header if the server must be asked")
            case "body_size_limit":
                note(option, "pinpath reads at most its own fixed body limit (see docs/agent.md)")
            case "enable_http3", "enable_http2":
                note(option, "pinpath lets libcurl negotiate the HTTP version")
            case "oauth2":
                note(
                    option,
                    "pinpath does not fetch OAuth 2 tokens; put a token in an Authorization header read from the environment (${NAME})")
            case "proxy_connect_header":
                note(option, "pinpath sends no headers of its own to the proxy; its credentials go in proxy's user and password")
            case "no_proxy", "proxy_from_environment":
                note(option, "without proxy: a module uses the configuration's proxy, or the environment's (with its no_proxy)")
            default:
                note(ConvertedYAML.quoted(option), "not an http option known to the converter")
            }
        }
        ipFamily(
            preferredFamily, fallback: fallback,
            written: section?["preferred_ip_protocol"] != nil || section?["ip_protocol_fallback"] != nil)
        // A policy or a client certificate applies to TLS only: those modules probe https:// targets.
        let needsTLS = keys["policy"] != nil || keys["client_certificate"] != nil
        if httpsOnly || needsTLS {
            kind = "https"
            if needsTLS && !httpsOnly {
                notes.append("kind: https, as its tls_config applies to TLS: a target must be an https:// URL")
            }
        }
    }

    private mutating func statuses(_ node: Node) {
        guard case .sequence(let items) = node else { return note("valid_status_codes", "not a list of status codes") }
        let codes = items.compactMap { $0.string.flatMap { Int($0) } }
        guard codes.count == items.count else { return note("valid_status_codes", "not a list of status codes") }
        // An empty list is blackbox's 2xx, pinpath's default too.
        guard !codes.isEmpty else { return }
        expect["status"] = .list(codes.map { .plain(String($0)) })
    }

    private mutating func plainHeaders(_ node: Node) {
        guard case .mapping(let pairs) = node else { return note("headers", "not a mapping of header names to values") }
        for (key, value) in pairs {
            guard let name = key.string, let text = value.string else { continue }
            header(name, text, option: "headers")
        }
    }

    /// `http_headers`: each header's `values` (joined with `, `, HTTP's list form); `secrets` and `files` are
    /// credentials, read from the environment instead.
    private mutating func structuredHeaders(_ node: Node) {
        guard case .mapping(let pairs) = node else { return note("http_headers", "not a mapping of header names") }
        for (key, value) in pairs {
            guard let name = key.string, let spec = value.mapping else { continue }
            if spec["secrets"] != nil || spec["files"] != nil {
                credentialHeader(name, scheme: nil, from: "http_headers")
            } else if case .sequence(let values) = spec["values"] {
                header(name, values.compactMap(\.string).joined(separator: ", "), option: "http_headers")
            }
        }
    }

    /// A header copied as written, unless its name says it carries a credential (`Authorization`, `Cookie`,
    /// `X-API-Key`…): its value is then not copied, and the header reads the environment.
    private mutating func header(_ name: String, _ value: String, option: String) {
        if isWritten(header: name, option: option) { return }
        if HeaderFields.isCredential(name) {
            credentialHeader(name, scheme: nil, from: option)
        } else if value.contains("${") {
            // pinpath would read `${…}` from the environment; it has no escape for a literal one.
            note(option, "the value of \(ConvertedYAML.quoted(name)) holds ${, which pinpath reads as an environment variable")
        } else {
            headers.append((name, .text(value)))
        }
    }

    /// A header whose value is a secret in the blackbox file: written as `${NAME}` (after `scheme`), and a comment
    /// says what the variable must hold. The secret itself is never read into the output.
    private mutating func credentialHeader(_ name: String, scheme: String?, from option: String) {
        if isWritten(header: name, option: option) { return }
        let variable = environmentVariable(for: name)
        headers.append((name, .text((scheme.map { "\($0) " } ?? "") + "${\(variable)}")))
        let holds = option == "basic_auth" ? "the base64 of user:password (printf '%s' 'user:password' | base64 -w0)" : "the secret"
        notes.append(
            "\(option): the secret was not copied: set \(variable) in the agent's environment to \(holds) from the blackbox file")
    }

    /// Whether a header of this name (in any case) is already written; if so, a comment says that `option`'s was
    /// not, since a header is written once.
    private mutating func isWritten(header name: String, option: String) -> Bool {
        guard headers.contains(where: { $0.key.lowercased() == name.lowercased() }) else { return false }
        note(option, "a second \(ConvertedYAML.quoted(name)) header: the first one written is kept")
        return true
    }

    private mutating func basicAuth(_ node: Node) {
        guard node.mapping != nil else { return note("basic_auth", "not a mapping with username and password") }
        credentialHeader("Authorization", scheme: "Basic", from: "basic_auth")
    }

    /// `BLACKBOX_<MODULE>_<HEADER>`, upper case, anything but letters and digits as `_`, made unique.
    private mutating func environmentVariable(for header: String) -> String {
        func word(_ text: String) -> String {
            String(
                text.uppercased().unicodeScalars.map {
                    $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0)) ? Character($0) : "_"
                })
        }
        let base = "BLACKBOX_\(word(moduleName))_\(word(header))"
        var name = base
        var counter = 1
        while !names.environmentVariables.insert(name).inserted {
            counter += 1
            name = "\(base)_\(counter)"
        }
        return name
    }

    /// `fail_if_body_not_matches_regexp`: every pattern must match, so several become one PCRE2 pattern of
    /// lookaheads, each searching the whole body (RE2's syntax is PCRE2's but for `$`: see the comment written).
    private mutating func bodyPatterns(_ node: Node) {
        guard case .sequence(let items) = node, items.allSatisfy({ $0.string != nil }) else {
            return note("fail_if_body_not_matches_regexp", "not a list of regular expressions")
        }
        let patterns = items.compactMap(\.string)
        guard !patterns.isEmpty else { return }
        let pattern = patterns.count == 1 ? patterns[0] : patterns.map { "(?=[\\s\\S]*?(?:\($0)))" }.joined()
        expect["body_matches"] = .text(pattern)
        if patterns.count > 1 {
            notes.append("fail_if_body_not_matches_regexp: its \(patterns.count) patterns are one body_matches, each a lookahead")
        }
        if patterns.contains(where: { $0.contains("$") }) {
            notes.append(
                "fail_if_body_not_matches_regexp: in PCRE2 $ also matches before a final newline (RE2's only at the end; \\z is RE2's $)")
        }
    }

    /// `fail_if_header_not_matches`: `expect.headers` with `/pattern/`, which also requires the header.
    private mutating func headerPatterns(_ node: Node) {
        guard case .sequence(let items) = node else { return note("fail_if_header_not_matches", "not a list of header matches") }
        var seen: Set<String> = []
        for item in items {
            guard let match = item.mapping, let name = match["header"]?.string, let pattern = match["regexp"]?.string else {
                note("fail_if_header_not_matches", "an item without header and regexp")
                continue
            }
            guard seen.insert(name.lowercased()).inserted else {
                note("fail_if_header_not_matches", "a second pattern for \(ConvertedYAML.quoted(name)): pinpath takes one per header")
                continue
            }
            expectedHeaders.append((name, .text("/\(pattern)/")))
            if bool(match["allow_missing"]) == true {
                notes.append("fail_if_header_not_matches: allow_missing: pinpath requires \(ConvertedYAML.quoted(name)) to be present")
            }
        }
    }

    private mutating func ipFamily(_ preferred: String?, fallback: Bool?, written: Bool) {
        guard written else { return }
        // blackbox's defaults: ip6 preferred, falling back to the other family.
        switch (preferred ?? "ip6", fallback ?? true) {
        case ("ip4", false), ("ipv4", false): keys["ip_family"] = .plain("ipv4")
        case ("ip6", false), ("ipv6", false): keys["ip_family"] = .plain("ipv6")
        case (_, true):
            note(
                "preferred_ip_protocol",
                "pinpath does not prefer a family; with ip_protocol_fallback it may use either, as ip_family: any (the default)")
        default:
            note("preferred_ip_protocol", "not ip4 or ip6")
        }
    }

    private mutating func proxy(_ node: Node) {
        guard let url = text(node), url.hasPrefix("http://") || url.hasPrefix("https://"), let scheme = url.firstRange(of: "://") else {
            return note("proxy_url", "pinpath goes through http:// and https:// proxies only")
        }
        // Any user information in the proxy's URL is a secret (a user name alone is often a token): pinpath reads the
        // user name and the password from the environment.
        let authority = url[scheme.upperBound...].prefix { $0 != "/" }
        guard let at = authority.lastIndex(of: "@") else {
            keys["proxy"] = .text(url)
            return
        }
        let userInformation = authority[..<at]
        let colon = userInformation.firstIndex(of: ":")
        var parts: [(name: String, present: Bool)] = [("user", !userInformation[..<(colon ?? at)].isEmpty)]
        if let colon { parts.append(("password", !userInformation[userInformation.index(after: colon)...].isEmpty)) }
        var written: [String] = []
        var replaced: [String] = []
        for part in parts {
            guard part.present else {
                written.append("")
                continue
            }
            let variable = environmentVariable(for: "proxy_\(part.name)")
            written.append("${\(variable)}")
            replaced.append("the \(part.name == "user" ? "user name" : "password") to \(variable)")
        }
        keys["proxy"] = .text(String(url[..<scheme.upperBound]) + written.joined(separator: ":") + String(url[at...]))
        if !replaced.isEmpty {
            notes.append(
                """
                proxy_url: its user information was not copied: set \(replaced.joined(separator: " and ")) in the agent's \
                environment, percent-decoded (%40 as @)
                """)
        }
    }

    // MARK: tls_config

    /// `tls_config`, for the http prober (`isHTTP`: the URL's host is the checked name) or tcp.
    private mutating func tls(_ node: Node, isHTTP: Bool) {
        guard case .mapping(let options) = node else { return note("tls_config", "not a mapping") }
        for (key, value) in options {
            let option = "tls_config.\(key.string ?? "?")"
            switch key.string {
            case "ca_file":
                guard let caFile = text(value) else { continue }
                let policy = names.policy(caFile: caFile)
                keys["policy"] = .text(policy)
            case "cert_file": keys["client_certificate"] = text(value).map(ConvertedYAML.Value.text) ?? keys["client_certificate"]
            case "key_file": keys["client_key"] = text(value).map(ConvertedYAML.Value.text) ?? keys["client_key"]
            case "server_name":
                guard let serverName = text(value) else { continue }
                if isHTTP {
                    note(option, "an https target's host is the name sent and checked; put that name in the target URL")
                } else {
                    keys["servername"] = .text(serverName)
                }
            case "insecure_skip_verify":
                guard bool(value) == true else { continue }
                note(
                    option,
                    "pinpath never skips verification silently: give the server's CA in a policy's ca_file, or pin its key (mode: public_key with pins, and allow_invalid_certificates: true only for a self-signed server)"
                )
            case "ca", "cert", "key":
                note(option, "pinpath reads certificates and keys from files: write it to a PEM file and name that file")
            case "min_version", "max_version":
                note(option, "pinpath's verification profile decides the TLS versions it accepts (TLS 1.2 and later)")
            default:
                note(ConvertedYAML.quoted(option), "not a tls_config option the converter maps")
            }
        }
    }

    // MARK: tcp

    /// The tcp prober: `tcp`, `tls` (a `tls://` probe) or a STARTTLS kind, by `tls:` and `query_response`.
    /// `false` when the module cannot be converted at all (the last note says why).
    mutating func tcp(_ section: Node.Mapping?) -> Bool {
        let section = section ?? Node.Mapping([])
        let usesTLS = bool(section["tls"]) == true
        var steps: [Node.Mapping] = []
        if case .sequence(let items) = section["query_response"] { steps = items.compactMap(\.mapping) }
        if let upgrade = steps.firstIndex(where: { bool($0["starttls"]) == true }) {
            guard let kind = Self.startTLSKind(steps[..<upgrade]) else {
                notes.append(
                    "its query_response upgrades with STARTTLS in a protocol pinpath does not speak (it speaks smtp, imap, pop3 and ftp)")
                return false
            }
            self.kind = kind
            keys["starttls"] = .plain("true")
            notes.append("query_response: kind \(kind) speaks the exchange up to STARTTLS itself; what follows STARTTLS is not converted")
        } else if usesTLS {
            kind = "tls"
            if !steps.isEmpty { note("query_response", "pinpath's tls kind checks the handshake and sends nothing over it") }
        } else {
            kind = "tcp"
            exchange(steps)
        }
        for (key, value) in section {
            switch key.string {
            case "tls", "query_response", "preferred_ip_protocol", "ip_protocol_fallback": continue
            case "tls_config": tls(value, isHTTP: false)
            case "source_ip_address": note("source_ip_address", "pinpath connects from the address the kernel's route chooses")
            default: note(ConvertedYAML.quoted(key.string ?? "?"), "not a tcp option known to the converter")
            }
        }
        let familyWritten = section["preferred_ip_protocol"] != nil || section["ip_protocol_fallback"] != nil
        ipFamily(section["preferred_ip_protocol"]?.string, fallback: bool(section["ip_protocol_fallback"]), written: familyWritten)
        if kind == "tcp", keys["policy"] != nil || keys["client_certificate"] != nil {
            keys["policy"] = nil
            keys["client_certificate"] = nil
            keys["client_key"] = nil
            note("tls_config", "without tls: true the probe has no TLS to apply it to")
        }
        return true
    }

    /// The STARTTLS kind an exchange before `starttls: true` speaks, by what it sends.
    static func startTLSKind(_ steps: ArraySlice<Node.Mapping>) -> String? {
        let sent = steps.compactMap { $0["send"]?.string?.uppercased() }
        if sent.contains(where: { $0.contains("STARTTLS") }) {
            return sent.contains { $0.hasPrefix("EHLO") || $0.hasPrefix("HELO") } ? "smtp" : "imap"
        }
        if sent.contains(where: { $0.hasPrefix("STLS") }) { return "pop3" }
        if sent.contains(where: { $0.hasPrefix("AUTH TLS") }) { return "ftp" }
        return nil
    }

    /// A plain tcp `query_response`: the sends before the first expect become `send` (each with the newline
    /// blackbox adds), a first expect that is plain text `expect.banner`; the rest is a comment.
    private mutating func exchange(_ steps: [Node.Mapping]) {
        var rest = steps[...]
        var sent = ""
        while let step = rest.first, step["expect"] == nil, step["expect_bytes"] == nil, let text = step["send"]?.string, step.count == 1 {
            sent += text + "\n"
            rest = rest.dropFirst()
        }
        if !sent.isEmpty { keys["send"] = .text(sent) }
        if let step = rest.first, step.count == 1, let pattern = step["expect"]?.string, Self.isPlainText(pattern) {
            expect["banner"] = .text(pattern)
            rest = rest.dropFirst()
        }
        if !rest.isEmpty {
            note(
                "query_response",
                "\(rest.count) of its steps: pinpath's tcp kind sends one text and checks that the answer contains plain text (no regular expression, no second exchange, no expect_bytes or labels)"
            )
        }
    }

    /// Whether a regular expression is plain text: it matches exactly where its text is contained.
    static func isPlainText(_ pattern: String) -> Bool {
        !pattern.isEmpty && !pattern.contains { "\\^$.|?*+()[]{}".contains($0) }
    }

    // MARK: values

    private func text(_ node: Node) -> String? { node.string }

    /// A YAML boolean as blackbox's YAML library reads it (1.1's `yes` and `on` too).
    private func bool(_ node: Node?) -> Bool? {
        switch node?.string?.lowercased() {
        case "true", "yes", "on", "y": true
        case "false", "no", "off", "n": false
        default: nil
        }
    }
}

/// A Go duration (`5s`, `1m30s`, `1.5s`, `250ms`) in pinpath's syntax, rounded up to whole milliseconds.
struct GoDuration {
    let text: String
    /// Whether no rounding was needed.
    let isExact: Bool

    /// Go's units in nanoseconds, the longest suffix first so that `ms` is not read as `m`.
    private static let units: [(suffix: String, nanoseconds: Int)] = [
        ("ns", 1), ("us", 1_000), ("µs", 1_000), ("μs", 1_000), ("ms", 1_000_000), ("s", 1_000_000_000), ("m", 60_000_000_000),
        ("h", 3_600_000_000_000),
    ]
    /// Beyond a year a timeout means nothing; the bound also keeps the arithmetic far from overflow.
    private static let longest = 365 * 86_400 * 1_000_000_000

    init?(_ goText: String) {
        var rest = Substring(goText)
        var total = 0
        guard !rest.isEmpty else { return nil }
        while !rest.isEmpty {
            // Whole and fractional digits in integers: 1.1s is exactly 1,100 ms.
            let whole = rest.prefix { $0.isASCII && $0.isNumber }
            rest = rest.dropFirst(whole.count)
            var fraction: Substring = ""
            if rest.first == "." {
                fraction = rest.dropFirst().prefix { $0.isASCII && $0.isNumber }
                rest = rest.dropFirst(fraction.count + 1)
            }
            guard !(whole.isEmpty && fraction.isEmpty), whole.count <= 18, let unit = Self.units.first(where: { rest.hasPrefix($0.suffix) })
            else { return nil }
            rest = rest.dropFirst(unit.suffix.count)
            // Digits past the nanosecond say nothing; nine are enough for every unit.
            let digits = fraction.prefix(9)
            let scale = (0..<digits.count).reduce(1) { product, _ in product * 10 }
            let (wholePart, overflow) = (Int(whole) ?? 0).multipliedReportingOverflow(by: unit.nanoseconds)
            guard !overflow, wholePart <= Self.longest else { return nil }
            total += wholePart + (Int(digits) ?? 0) * (unit.nanoseconds / scale) + (Int(digits) ?? 0) * (unit.nanoseconds % scale) / scale
            guard total <= Self.longest else { return nil }
        }
        guard total > 0 else { return nil }
        let milliseconds = (total + 999_999) / 1_000_000
        isExact = total % 1_000_000 == 0
        text = DurationSyntax.format(.milliseconds(milliseconds))
    }
}
