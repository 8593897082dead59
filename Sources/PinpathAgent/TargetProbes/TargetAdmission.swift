import FoundationEssentials
import PinpathHTTP
import PinpathReachability
import PinpathSecurity

/// Whether a target probe may connect, and where. Whoever can reach `/probe` can make the agent connect, so a
/// target is checked before any connection, and the probe connects to an address that was checked:
///
/// - The host is resolved once; every address it resolves to is checked, and the probe is pinned to the first
///   of them (``EndpointConfiguration/address``, the `address:` mechanism), so a second DNS answer (rebinding)
///   cannot send the connection elsewhere.
/// - With `targets:`, a host matching one of its patterns, or a host whose every address is in one of its ranges,
///   is admitted. An address refused by default (below) is admitted only by a range that contains it: a host
///   pattern names hosts, not the metadata service one of them may resolve to.
/// - Without `targets:`, an address refused by default refuses the target: loopback, link-local, the unspecified
///   addresses, the cloud metadata services, this machine's own addresses (every address of every interface:
///   traffic to them goes over `lo`, past firewall rules written for loopback), and their IPv4-mapped forms.
/// - The agent's own listener is refused whatever `targets:` says: `/probe` probing `/probe` would recurse.
/// - Through a proxy the proxy resolves the name, so no address of a name can be checked: a name is admitted only
///   by a host pattern; an address literal is checked as above.
struct TargetAdmission: Sendable {
    /// What the admission decided.
    enum Decision: Equatable {
        /// Probe, connecting to `address` (`nil`: through the proxy, which connects); `resolved` is every address
        /// the host resolved to.
        case admitted(address: IPAddress?, resolved: [IPAddress])
        /// Nothing is connected to: the reason, on one line.
        case refused(String)
        /// The host did not resolve (or not to an address of the family asked): the probe fails without connecting.
        case unresolved(String)
    }

    /// The module's name, for messages.
    let module: String
    /// The module's `targets:`.
    let allowList: TargetAllowList?
    /// Where the agent's own listener is, when on TCP: a probe of it would make the agent scrape itself.
    let listener: (address: IPAddress, port: Int)?
    /// This machine's own addresses, every interface's, IPv4 and IPv6: refused by default (a connection to one of
    /// them is a connection to this machine, over `lo`); with a listener on the unspecified address, they are the
    /// listener too.
    let localAddresses: [IPAddress]

    /// The ranges refused when a module has no `targets:`, with what each is.
    static let refusedByDefault: [(network: IPNetwork, what: String)] = [
        (range("127.0.0.0", 8), "a loopback address"),
        (range("::1", 128), "the loopback address"),
        (range("0.0.0.0", 8), "an unspecified (this-network) address"),
        (range("::", 128), "the unspecified address"),
        (range("169.254.169.254", 32), "the cloud metadata service's address (AWS, GCP, Azure, OpenStack, Oracle, DigitalOcean)"),
        (range("fd00:ec2::254", 128), "the AWS metadata service's IPv6 address"),
        // Google Compute Engine's metadata server over IPv6 (Google Cloud's docs, "About VM metadata": fd20:ce::254).
        (range("fd20:ce::254", 128), "the GCP metadata service's IPv6 address"),
        (range("100.100.100.200", 32), "the Alibaba Cloud metadata service's address"),
        (range("168.63.129.16", 32), "the Azure platform (WireServer) address"),
        (range("169.254.0.0", 16), "a link-local address"),
        (range("fe80::", 10), "a link-local address"),
    ]

    private static func range(_ text: String, _ length: Int) -> IPNetwork {
        // Literals above: a typo would be caught by the tests of these refusals.
        IPNetwork(IPAddress(text)!, length)
    }

    /// Decides for `endpoint` (the module read with the target), resolving its host within `timeout`.
    func decide(_ endpoint: EndpointConfiguration, timeout: Duration) async -> Decision {
        let url = endpoint.url
        let host = HostPattern.canonicalHost(url.host(percentEncoded: false) ?? "")
        let port = url.port ?? endpoint.kind.defaultPort ?? 0
        let literal = IPAddress(host)
        let byPattern = allowList?.admitsHost(host) ?? false
        if endpoint.proxy.settings.proxy(for: url) != nil {
            if let literal {
                if let refusal = refusal(of: [literal], host: host, port: port, byPattern: byPattern) { return .refused(refusal) }
                return .admitted(address: nil, resolved: [literal])
            }
            guard byPattern else {
                return .refused(
                    """
                    \(host) is probed through a proxy, which resolves it itself, so its addresses cannot be checked; only a host \
                    pattern in module \(quoted(module))'s targets: admits a name through a proxy
                    """)
            }
            return .admitted(address: nil, resolved: [])
        }
        let resolved: [IPAddress]
        if let literal {
            resolved = [literal]
        } else {
            guard let addresses = await HostResolver.addresses(of: host, timeout: timeout) else {
                return .unresolved("\(host) did not resolve")
            }
            resolved = addresses
        }
        // Every address is checked, those of the other family too: the answer is the host's, whatever is dialled.
        if let refusal = refusal(of: resolved, host: host, port: port, byPattern: byPattern) { return .refused(refusal) }
        let usable = endpoint.ipFamily.map { family in resolved.filter { $0.family == family } } ?? resolved
        guard let address = usable.first else {
            return .unresolved("\(host) has no \(endpoint.ipFamily?.rawValue ?? "") address (it resolved to \(list(resolved)))")
        }
        // An IPv4-mapped answer connects over IPv4: the gate judges, and the socket dials, the IPv4 form.
        return .admitted(address: address.unmapped, resolved: resolved)
    }

    /// Why `addresses` (those of `host`) may not be probed, or `nil`.
    private func refusal(of addresses: [IPAddress], host: String, port: Int, byPattern: Bool) -> String? {
        let resolvedFrom = IPAddress(host) == nil ? " (\(host) resolved to \(list(addresses)))" : ""
        for address in addresses {
            // Whatever targets: says: `/probe` probing `/probe` would recurse, each scrape a chain of probes.
            if isListener(address, port: port) {
                return "\(address) port \(port) is this agent's own listener\(resolvedFrom); a module never probes it"
            }
            if let allowList, allowList.admitsAddress(address) { continue }
            if let (_, what) = Self.refusedByDefault.first(where: { $0.network.contains(address) }) {
                return "\(address) is \(what)\(resolvedFrom); \(allowedOnly)"
            }
            if isLocal(address) {
                return "\(address) is an address of this machine, reached over loopback\(resolvedFrom); \(allowedOnly)"
            }
            if allowList != nil, !byPattern {
                return "\(address) is outside module \(quoted(module))'s targets:\(resolvedFrom)"
            }
        }
        return nil
    }

    /// The end of a refusal of an address refused by default.
    private var allowedOnly: String {
        "a module probes it only when an address range of its targets: contains it (module \(quoted(module)))"
    }

    /// Whether a connection to `address` port `port` may reach the agent's own listener. Any address that reaches
    /// this host counts for a listener on a wildcard or loopback address: a loopback address (all of 127.0.0.0/8
    /// and ::1), the unspecified addresses (0.0.0.0 and ::, which Linux connects to this host), this machine's own
    /// addresses, and their IPv4-mapped forms. A listener on one specific address is reached by that address and by
    /// the loopback and unspecified forms (refused too: only what cannot reach it is let through).
    private func isListener(_ address: IPAddress, port: Int) -> Bool {
        guard let listener, listener.port == port else { return false }
        let address = address.unmapped
        if Self.reachesThisHostAlone(address) { return true }
        let bound = listener.address.unmapped
        if bound.bytes.allSatisfy({ $0 == 0 }) || Self.reachesThisHostAlone(bound) { return isLocal(address) }
        return bound == address
    }

    /// Whether `address` (not IPv4-mapped) is a loopback or unspecified address: one that only ever reaches this host.
    private static func reachesThisHostAlone(_ address: IPAddress) -> Bool {
        address.bytes.allSatisfy { $0 == 0 } || range("127.0.0.0", 8).contains(address) || range("::1", 128).contains(address)
    }

    /// Whether `address` (or the IPv4 address it maps) is one of this machine's.
    private func isLocal(_ address: IPAddress) -> Bool {
        let address = address.unmapped
        return localAddresses.contains { $0.unmapped == address }
    }

    private func list(_ addresses: [IPAddress]) -> String { addresses.map(\.description).joined(separator: ", ") }

    private func quoted(_ text: String) -> String { ConfigurationProblem.quoted(text) }
}
