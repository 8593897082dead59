import FoundationEssentials
import PinpathSecurity
import PinpathSupport
import PinpathYAML

/// One named entry of `policies:`: a validated ``SecurityPolicy`` and what it applies to. Compares by value
/// (the policy, its hosts, its CA file's certificates), so a reload sees any change to it.
package struct PolicyConfiguration: Sendable, Equatable {
    /// The name endpoints refer to (`policy: api-pins`).
    package let name: String
    /// The policy, already accepted by ``SecurityPolicy``'s refusals (pins present, a backup pin, …).
    package let policy: SecurityPolicy
    /// Hosts this policy applies to when an endpoint names no policy (OkHttp / TrustKit patterns).
    package let hosts: [HostPattern]
    /// Whether exact host patterns also cover subdomains. Default `false`.
    package let includeSubdomains: Bool
    /// The CA file to verify chains against, resolved against the configuration's directory; `nil` means
    /// the system store.
    package let caFile: String?
    /// The store read from ``caFile`` at load time (so an unreadable file is a configuration error, not a
    /// probe failure); `nil` means the system store.
    package let trustStore: TrustStore?
    /// Collectors that pin failure reports under this policy are POSTed to (`report_uri`, TrustKit's key), in
    /// file order. They may hold credentials (user info, a query token): show them through ``DisplayURL`` only.
    package let reportURIs: [URL]

    /// Whether the policy trusts anchors of its own rather than only the system store: a `ca_file`, or the
    /// certificates it pins in `certificate` mode (they are the anchors there).
    var bringsAnchors: Bool { trustStore != nil || policy.mode == .certificate }

    /// The entry as PinpathSecurity matches hosts (``HostPolicySet``).
    package var hostPolicy: HostPolicy {
        HostPolicy(patterns: hosts, includeSubdomains: includeSubdomains, policy: policy, trustStore: trustStore)
    }

    static let keys = [
        "mode", "pins", "certificates", "ca_file", "hosts", "include_subdomains", "enforce", "expires",
        "allow_invalid_certificates", "validates_domain_name", "require_backup_pin", "profile", "max_chain_depth",
        "crl_files", "revocation", "soft_fail", "report_uri",
    ]

}

extension PolicyConfiguration: ConfigurationReadable {
    /// Reads one policy, `name` written at `key` (where problems of the whole policy are reported); `nil` after
    /// reporting its problems.
    init?(reading value: Node, at keyPath: String, in named: (name: String, key: Node), _ decoder: ConfigurationDecoder) {
        let (name, key) = named
        guard let fields = decoder.mapping(value, keyPath, known: Self.keys) else { return nil }
        let before = decoder.problems.count

        let mode: PinningMode?
        if let node = fields["mode"] {
            mode = decoder.choice(node, fields.path("mode"), PinningMode.self)
        } else {
            mode = nil
            decoder.report(.missingKey, at: key, keyPath, "mode is missing (none, public_key or certificate); pinning is never implied")
        }
        let pins = decoder.elements(fields, "pins", of: "pins (sha256/…)") { node, path in
            decoder.parse(node, path, "a pin (sha256/…)") { try SPKIPin(parsing: $0) }
        }
        let certificates = decoder.elements(fields, "certificates", of: "certificate files") { node, path in
            decoder.readFile(node, path) { try Certificate.certificates(contentsOf: $0) }
        }.flatMap { $0 }
        let hosts = decoder.elements(fields, "hosts", of: "host patterns") { node, path in
            decoder.parse(node, path, "a host pattern") { try HostPattern(parsing: $0) }
        }
        let caFile = fields["ca_file"].flatMap { node in
            decoder.readFile(node, fields.path("ca_file")) { path in (path, try TrustStore(caFile: path)) }
        }
        let includeSubdomains = fields["include_subdomains"].flatMap { decoder.bool($0, fields.path("include_subdomains")) } ?? false
        let enforce = fields["enforce"].flatMap { decoder.bool($0, fields.path("enforce")) } ?? true
        let allowInvalid =
            fields["allow_invalid_certificates"].flatMap { decoder.bool($0, fields.path("allow_invalid_certificates")) } ?? false
        let validatesName = fields["validates_domain_name"].flatMap { decoder.bool($0, fields.path("validates_domain_name")) } ?? true
        let backupPin = fields["require_backup_pin"].flatMap { decoder.bool($0, fields.path("require_backup_pin")) } ?? true
        let expires = fields["expires"].flatMap { decoder.date($0, fields.path("expires")) }
        let profile = fields["profile"].flatMap { decoder.choice($0, fields.path("profile"), ProfileSelection.self) } ?? .auto
        let maximumDepth = fields["max_chain_depth"].flatMap { decoder.integer($0, fields.path("max_chain_depth"), in: 1...100) }
        let crls = decoder.elements(fields, "crl_files", of: "CRL files") { node, path in
            decoder.readFile(node, path) { try CertificateRevocationList.lists(contentsOf: $0) }
        }.flatMap { $0 }
        let revocation =
            fields["revocation"].flatMap { decoder.choice($0, fields.path("revocation"), RevocationMode.self) } ?? RevocationMode.none
        let softFail = fields["soft_fail"].flatMap { decoder.bool($0, fields.path("soft_fail")) } ?? false
        if softFail, revocation != .ocsp, let node = fields["soft_fail"] {
            decoder.report(
                .invalidValue, at: node, fields.path("soft_fail"),
                "soft_fail applies to revocation: ocsp only (this policy has revocation: \(revocation.rawValue)); remove it or set revocation: ocsp"
            )
        }
        let reportURIs = fields["report_uri"].map { decoder.reportURIs($0, fields.path("report_uri")) } ?? []

        if mode == PinningMode.none, let node = fields["pins"] ?? fields["certificates"] {
            decoder.report(
                .invalidValue, at: node, keyPath, "pins and certificates are not checked in mode none; use mode public_key or certificate")
        }
        // A policy with problems of its own is not built: its refusals would only repeat them ("no pins"
        // after every pin was reported as invalid).
        guard let mode, decoder.problems.count == before else { return nil }
        let policy: SecurityPolicy
        do {
            policy = try SecurityPolicy(
                mode: mode, pins: pins, pinnedCertificates: certificates, allowInvalidCertificates: allowInvalid,
                validatesDomainName: validatesName, enforce: enforce, expires: expires, requiresBackupPin: backupPin,
                now: decoder.now, profile: profile, maximumChainDepth: maximumDepth, crls: crls, revocation: revocation,
                ocspSoftFail: softFail)
        } catch {
            var message = "\(error)"
            if (error as? SecurityError)?.code == .missingBackupPin { message += " with require_backup_pin: false" }
            decoder.report(.refusedPolicy, at: key, keyPath, message)
            return nil
        }
        // Still loaded, as TrustKit loads it: the host is then unpinned, its chain checked by the trust store.
        if mode != .none, let expires, expires <= decoder.now, let node = fields["expires"] {
            decoder.warn(
                .expiredPins, at: node, fields.path("expires"),
                """
                the pins expired on \(node.string ?? "\(expires)") and are no longer checked (the chain is still validated against \
                the trust store); renew the pins and move expires to a later date
                """
            )
        }
        if policy.acceptsAnyCertificate {
            decoder.warn(
                .acceptsAnyCertificate, at: key, keyPath,
                """
                allow_invalid_certificates with validates_domain_name: false and no pins accepts any certificate from anyone: TLS \
                then authenticates nothing; pin the server's key (mode public_key) or check its name
                """
            )
        }
        self.init(
            name: name, policy: policy, hosts: hosts, includeSubdomains: includeSubdomains, caFile: caFile?.0,
            trustStore: caFile?.1, reportURIs: reportURIs)
    }
}

extension ConfigurationDecoder {
    /// The elements of the list under `key` (absent: none), each read by `read`; failed ones are left out.
    func elements<T>(_ fields: ConfigurationMapping, _ key: String, of what: String, _ read: (Node, String) -> T?) -> [T] {
        guard let node = fields[key], let items = list(node, fields.path(key), of: what) else { return [] }
        return items.enumerated().compactMap { index, item in read(item, "\(fields.path(key))[\(index)]") }
    }

    /// Text parsed by a PinpathSecurity or PinpathReachability initializer, whose message becomes the problem.
    func parse<T>(_ node: Node, _ keyPath: String, _ what: String, _ make: (String) throws -> T) -> T? {
        guard let text = string(node, keyPath, what) else { return nil }
        do {
            return try make(text)
        } catch {
            report(.invalidValue, at: node, keyPath, "\(error)")
            return nil
        }
    }

    /// A file named at `node`, resolved against the configuration's directory and read by `load`; an
    /// unreadable or unusable file is a problem naming it. Read now, as the agent's own user, because the
    /// agent runs unprivileged: a file only root can read would otherwise fail every probe later.
    func readFile<T>(_ node: Node, _ keyPath: String, _ load: (String) throws -> T) -> T? {
        guard let text = string(node, keyPath, "a file path") else { return nil }
        let path = resolve(path: text)
        do {
            return try load(path)
        } catch {
            report(.unusableFile, at: node, keyPath, "\(error)")
            return nil
        }
    }

    /// `YYYY-MM-DD`, as midnight UTC at the start of that day: TrustKit's `expirationDate`, after which the
    /// pins no longer apply.
    func date(_ node: Node, _ keyPath: String) -> Date? {
        guard let text = string(node, keyPath, "a date (YYYY-MM-DD)") else { return nil }
        guard let date = UTCTime.day(text) else {
            report(
                .invalidValue, at: node, keyPath, "\(ConfigurationProblem.quoted(text)) is not a date (use YYYY-MM-DD, such as 2027-06-30)")
            return nil
        }
        return date
    }
}
