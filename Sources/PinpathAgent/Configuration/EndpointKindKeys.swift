import FoundationEssentials
import PinpathHTTP
import PinpathReachability
import PinpathSecurity
import PinpathSupport
import PinpathYAML

/// The endpoint keys that depend on the URL's kind (``ServiceKind``): each is refused, at its line, on a kind
/// it does not apply to, so that a key that would do nothing is never silently ignored.
extension ConfigurationDecoder {
    /// `servername`: for the TLS connection checks only (an https URL's host is already the name checked).
    func serverName(_ fields: ConfigurationMapping, kind: ServiceKind?) -> String? {
        guard let node = fields["servername"], let name = string(node, fields.path("servername"), "a host name") else { return nil }
        guard let kind else { return nil }
        guard kind.usesTLS, !kind.isHTTP else {
            report(
                .invalidValue, at: node, fields.path("servername"),
                kind.isHTTP
                    ? "servername applies to tls:// and the mail, FTP and ldaps:// kinds; an \(kind.rawValue) URL's host is the name checked"
                    : "servername is the TLS server name, and a \(kind.rawValue):// probe has no TLS")
            return nil
        }
        let allowed = name.unicodeScalars.allSatisfy {
            $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "-" || $0 == ".")
        }
        guard !name.isEmpty, allowed, !name.hasPrefix("."), !name.hasPrefix("-") else {
            report(
                .invalidValue, at: node, fields.path("servername"),
                "\(ConfigurationProblem.quoted(name)) is not a host name (letters, digits, - and ., such as db.internal.example)")
            return nil
        }
        return name.lowercased()
    }

    /// `address`: the IP address probes connect to instead of resolving the URL's host (curl's `--resolve`).
    /// A host name is refused: it would be resolved, and nothing pinned. So is an endpoint whose URL goes
    /// through a proxy, which would connect to the name itself.
    func connectAddress(_ fields: ConfigurationMapping, url: URL?, proxy: ProxyConfiguration) -> IPAddress? {
        guard let node = fields["address"], let text = string(node, fields.path("address"), "an IP address") else { return nil }
        guard let address = IPAddress(text) else {
            report(
                .invalidValue, at: node, fields.path("address"),
                """
                \(ConfigurationProblem.quoted(text)) is not an IP address (such as 192.0.2.10 or 2001:db8::10); a host name \
                would be resolved, not pinned: put the name in the URL and the address here
                """)
            return nil
        }
        if let refusal = ResolvedAddress.refusal(of: address) {
            report(.invalidValue, at: node, fields.path("address"), refusal)
            return nil
        }
        if let url, let through = proxy.settings.proxy(for: url) {
            report(
                .invalidValue, at: node, fields.path("address"),
                """
                the probe goes through the proxy \(through), which connects to the URL's host itself, so the address cannot \
                be honoured; set proxy: none on this endpoint, or remove address
                """)
            return nil
        }
        return address
    }

    /// `send`: the text a `tcp://` probe sends after connecting.
    func sendText(_ fields: ConfigurationMapping, kind: ServiceKind?) -> String? {
        guard let node = fields["send"], let text = string(node, fields.path("send"), "text to send") else { return nil }
        guard let kind else { return nil }
        guard kind == .tcp else {
            report(
                .invalidValue, at: node, fields.path("send"),
                "send applies to tcp:// URLs only (a \(kind.rawValue):// probe sends what its protocol needs)")
            return nil
        }
        guard !text.isEmpty else {
            report(.invalidValue, at: node, fields.path("send"), "the text is empty; remove send to connect only")
            return nil
        }
        return text
    }

    /// `starttls: true` is required for the kinds that upgrade a plaintext protocol, and refused elsewhere. A
    /// refused kind (`ldap://`) has its URL refused instead.
    func checkStartTLS(_ fields: ConfigurationMapping, kind: ServiceKind?) {
        let node = fields["starttls"]
        let value = node.flatMap { bool($0, fields.path("starttls")) }
        guard let kind, kind.refusal == nil else { return }
        if kind.upgradesWithSTARTTLS {
            guard value != true, node == nil || value != nil else { return }
            let secure = kind == .ftp ? "ftp:// has no implicit-TLS variant here" : "or use \(kind.rawValue)s:// for implicit TLS"
            report(
                node == nil ? .missingKey : .invalidValue, at: node ?? fields.node, fields.path("starttls"),
                """
                \(node == nil ? "starttls is missing: " : "")a probe of \(kind.rawValue):// upgrades to TLS with STARTTLS and fails \
                when the server does not offer it; set starttls: true (\(secure)); pinpath never probes these protocols in plaintext
                """)
        } else if let node, value != nil {
            let kinds = ServiceKind.probed.filter(\.upgradesWithSTARTTLS).map { "\($0.rawValue)://" }
            report(
                .invalidValue, at: node, fields.path("starttls"),
                """
                starttls applies to \(kinds.dropLast().joined(separator: ", ")) and \(kinds.last ?? "") only; a \(kind.rawValue):// \
                probe \(kind.usesTLS ? "starts with TLS" : "has no TLS")
                """)
        }
    }

    /// `body` (text) or `body_file` (read now, at most 1 MiB): the HTTP request's body, sent with `method`.
    func requestBody(_ fields: ConfigurationMapping, kind: ServiceKind?) -> [UInt8]? {
        if let text = fields["body"], fields["body_file"] != nil {
            report(.invalidValue, at: text, fields.path("body"), "give body or body_file, not both")
            return nil
        }
        if let node = fields["body"] {
            return string(node, fields.path("body"), "the request body as text").map { Array($0.utf8) }
        }
        guard let node = fields["body_file"], let path = string(node, fields.path("body_file"), "a file path") else { return nil }
        let resolved = resolve(path: path)
        do {
            let bytes = try readWholeFile(resolved)
            guard bytes.count <= EndpointConfiguration.maximumBodyFileSize else {
                report(
                    .unusableFile, at: node, fields.path("body_file"), "\(resolved) is larger than 1 MiB; a probe's body should be small")
                return nil
            }
            return bytes
        } catch {
            report(.unusableFile, at: node, fields.path("body_file"), "cannot read \(resolved): \(error)")
            return nil
        }
    }

    /// `method`, `headers`, `body`, `body_file` and `follow_redirects` are HTTP's; on another kind they are refused.
    func checkHTTPOnlyKeys(_ fields: ConfigurationMapping, kind: ServiceKind?) {
        guard let kind, !kind.isHTTP else { return }
        for key in ["method", "headers", "body", "body_file", "follow_redirects"] {
            if let node = fields[key] {
                report(
                    .invalidValue, at: node, fields.path(key),
                    "\(key) applies to http:// and https:// URLs only; a \(kind.rawValue):// probe sends no HTTP request")
            }
        }
    }

    /// `client_certificate`, `client_key` and `client_key_password`, checked now: readable PEM, the key
    /// decrypted, the key the certificate's. The password is read from the environment (`${NAME}`) and is
    /// secret from then on; no message carries it.
    func clientCertificate(_ fields: ConfigurationMapping, kind: ServiceKind?) -> EndpointConfiguration.ClientCertificateFiles? {
        let certificateNode = fields["client_certificate"]
        let keyNode = fields["client_key"]
        let passwordNode = fields["client_key_password"]
        guard let certificateNode else {
            for (key, node) in [("client_key", keyNode), ("client_key_password", passwordNode)] {
                if let node {
                    report(.missingKey, at: node, fields.path(key), "\(key) is given without client_certificate")
                }
            }
            return nil
        }
        if let kind, !kind.usesTLS {
            report(
                .invalidValue, at: certificateNode, fields.path("client_certificate"),
                "a client certificate is sent in a TLS handshake, and a \(kind.rawValue):// probe has none")
            return nil
        }
        guard let certificateText = string(certificateNode, fields.path("client_certificate"), "a PEM file path") else { return nil }
        let certificate = resolve(path: certificateText)
        let key = keyNode.flatMap { string($0, fields.path("client_key"), "a PEM file path") }.map(resolve(path:))
        var password: RedactableValue?
        if let passwordNode {
            guard let template = string(passwordNode, fields.path("client_key_password"), "a password, as ${ENV_VARIABLE}"),
                let (text, variables) = expand(template, passwordNode, fields.path("client_key_password"))
            else { return nil }
            password = RedactableValue(text, isSecret: true, variables: variables)
        }
        if keyNode != nil && key == nil { return nil }
        do throws(SecurityError) {
            try ClientIdentity.check(certificatePath: certificate, keyPath: key, password: password?.unredacted)
        } catch {
            let aboutKey = keyNode != nil && error.code == .unusableClientKey
            report(
                .unusableFile, at: aboutKey ? keyNode : certificateNode, fields.path(aboutKey ? "client_key" : "client_certificate"),
                error.message)
            return nil
        }
        return .init(certificate: certificate, key: key, password: password)
    }
}
