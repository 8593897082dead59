import FoundationEssentials
import PinpathHTTP
import PinpathReachability
import PinpathSecurity
import PinpathSupport
import PinpathYAML

/// The readers of the endpoint keys whose values need more than a typed reader (``EndpointKey/all`` names them):
/// each reads one key's value and reports what is wrong with it; the kinds a key applies to are its row's.
extension ConfigurationDecoder {
    /// `servername`: the name sent as SNI and checked against the certificate by the TLS connection checks.
    func serverName(_ node: Node, _ keyPath: String) -> String? {
        guard let name = string(node, keyPath, "a host name") else { return nil }
        let allowed = name.unicodeScalars.allSatisfy {
            $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "-" || $0 == ".")
        }
        guard !name.isEmpty, allowed, !name.hasPrefix("."), !name.hasPrefix("-") else {
            report(
                .invalidValue, at: node, keyPath,
                "\(ConfigurationProblem.quoted(name)) is not a host name (letters, digits, - and ., such as db.internal.example)")
            return nil
        }
        return name.lowercased()
    }

    /// `address`: the IP address probes connect to instead of resolving the URL's host (curl's `--resolve`).
    /// A host name is refused: it would be resolved, and nothing pinned. So is an endpoint whose URL goes
    /// through a proxy, which would connect to the name itself (``EndpointReading`` checks it, knowing the proxy).
    func connectAddress(_ node: Node, _ keyPath: String) -> (value: IPAddress, node: Node)? {
        guard let text = string(node, keyPath, "an IP address") else { return nil }
        guard let address = IPAddress(text) else {
            report(
                .invalidValue, at: node, keyPath,
                """
                \(ConfigurationProblem.quoted(text)) is not an IP address (such as 192.0.2.10 or 2001:db8::10); a host name \
                would be resolved, not pinned: put the name in the URL and the address here
                """)
            return nil
        }
        if let refusal = ResolvedAddress.refusal(of: address) {
            report(.invalidValue, at: node, keyPath, refusal)
            return nil
        }
        return (address, node)
    }

    /// `send`: the text a `tcp://` probe sends after connecting.
    func sendText(_ node: Node, _ keyPath: String) -> String? {
        guard let text = string(node, keyPath, "text to send") else { return nil }
        guard !text.isEmpty else {
            report(.invalidValue, at: node, keyPath, "the text is empty; remove send to connect only")
            return nil
        }
        return text
    }

    /// `body_file`, read now (at most 1 MiB): the HTTP request's body, sent with `method`.
    func bodyFile(_ node: Node, _ keyPath: String) -> [UInt8]? {
        guard let path = string(node, keyPath, "a file path") else { return nil }
        let resolved = resolve(path: path)
        do {
            let bytes = try readWholeFile(resolved)
            guard bytes.count <= EndpointConfiguration.maximumBodyFileSize else {
                report(
                    .unusableFile, at: node, keyPath, "\(resolved) is larger than 1 MiB; a probe's body should be small")
                return nil
            }
            return bytes
        } catch {
            report(.unusableFile, at: node, keyPath, "cannot read \(resolved): \(error)")
            return nil
        }
    }

    /// `client_certificate`, `client_key` and `client_key_password`, checked now: readable PEM, the key
    /// decrypted, the key the certificate's. The password is read from the environment (`${NAME}`) and is
    /// secret from then on; no message carries it.
    func clientCertificate(_ certificateNode: Node, _ keyPath: String, _ fields: ConfigurationMapping)
        -> EndpointConfiguration.ClientCertificateFiles?
    {
        let keyNode = fields["client_key"]
        let passwordNode = fields["client_key_password"]
        guard let certificateText = string(certificateNode, keyPath, "a PEM file path") else { return nil }
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

    /// `client_key` and `client_key_password` are read with `client_certificate`; without it they are reported.
    /// When the certificate was written but refused (an included file's), they would only add a second, misleading
    /// problem.
    func requireClientCertificate(for key: String, at node: Node, _ fields: ConfigurationMapping) {
        guard fields["client_certificate"] == nil, !fields.isWithdrawn("client_certificate") else { return }
        report(.missingKey, at: node, fields.path(key), "\(key) is given without client_certificate")
    }
}
