import PinpathReachability
import PinpathSecurity
import PinpathSupport

/// An address to connect to for one host and port instead of resolving the name (curl's
/// `--resolve HOST:PORT:ADDRESS`, blackbox_exporter's target-versus-hostname).
///
/// Only the connection goes to ``address``: the TLS server name, the `Host` field and the choice of the
/// per-host policy (pins, trust store, credentials scope) stay the URL's name, which the certificate must
/// still be valid for. A hop to another host or port (a redirect) is not affected, as in curl.
public struct ResolvedAddress: Hashable, Sendable, CustomStringConvertible {
    /// The host name requests name, canonical (``HostPattern/canonicalHost(_:)``: lowercase, no trailing dot).
    public let host: String
    /// The port requests name (the URL's, or its scheme's default).
    public let port: Int
    /// Where the connection goes: a numeric address, never a name (nothing is resolved).
    public let address: IPAddress

    /// Creates an entry from parts already checked; `host` is made canonical.
    public init(host: String, port: Int, address: IPAddress) {
        self.host = HostPattern.canonicalHost(host)
        self.port = port
        self.address = address
    }

    /// Parses curl's `HOST:PORT:ADDRESS`, where ADDRESS is an IPv4 or IPv6 address (the latter with or
    /// without brackets) and HOST a name or a bracketed IPv6 address.
    /// - Throws: ``HTTPError`` `invalidURL`, naming the text and what is wrong: a missing part, a port that is
    ///   not 1–65535, a host name as ADDRESS (nothing would be pinned: it would be resolved), several addresses,
    ///   or curl's wildcard host `*` (it would also pin every host a redirect leads to).
    public init(parsing text: String) throws(HTTPError) {
        func refuse(_ why: String) -> HTTPError {
            HTTPError(.invalidURL, "\"\(UntrustedText.escaped(text))\" is not HOST:PORT:ADDRESS: \(why)")
        }
        // The host ends at the first colon, or after the bracket of an IPv6 literal.
        let hostEnd: String.Index
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { throw refuse("the host has no closing \"]\"") }
            hostEnd = text.index(after: close)
        } else {
            hostEnd = text.firstIndex(of: ":") ?? text.endIndex
        }
        let host = String(text[..<hostEnd])
        guard hostEnd < text.endIndex, text[hostEnd] == ":" else { throw refuse("give the host, its port and the address to connect to") }
        let rest = text[text.index(after: hostEnd)...]
        guard let portEnd = rest.firstIndex(of: ":") else { throw refuse("give the port and the address after the host") }
        let portText = rest[..<portEnd]
        let addressText = String(rest[rest.index(after: portEnd)...])
        guard !host.isEmpty else { throw refuse("the host is empty") }
        guard host != "*" else {
            throw refuse("a wildcard host would connect every host a redirect names to that address; name the host")
        }
        let endpoint: TLSEndpoint
        do {
            endpoint = try TLSEndpoint(parsing: "\(host):\(portText)")
        } catch {
            throw refuse("\(error)")
        }
        guard !addressText.isEmpty else { throw refuse("the address is empty") }
        guard !addressText.contains(",") else { throw refuse("give one address (a --resolve each for others)") }
        guard let address = IPAddress(addressText) else {
            throw refuse("\"\(UntrustedText.escaped(addressText))\" is not an IPv4 or IPv6 address (a name would be resolved, not pinned)")
        }
        if let refusal = Self.refusal(of: address) { throw refuse(refusal) }
        self.init(host: endpoint.host, port: endpoint.port, address: address)
    }

    /// Why `address` cannot be pinned, or `nil` when it can; for `--resolve` and the agent's `address:` alike.
    ///
    /// An IPv4-mapped IPv6 address (`::ffff:192.0.2.66`) goes out over IPv4 while the reachability gate would
    /// judge it by the IPv6 routes, so a blackholed IPv4 address could pass through an IPv6 default route; and the
    /// unspecified address (`0.0.0.0`, `::`) connects to this machine. Both are refused, naming what to write
    /// instead, rather than mapped: the address pinned is then the one shown, judged and dialled.
    public static func refusal(of address: IPAddress) -> String? {
        let bytes = address.bytes
        if bytes.allSatisfy({ $0 == 0 }) {
            return """
                \(address) is the unspecified address, which connects to this machine; write 127.0.0.1 or ::1 to reach a \
                local server, or the server's own address
                """
        }
        if address.family == .ipv6, bytes.prefix(10).allSatisfy({ $0 == 0 }), bytes[10] == 0xff, bytes[11] == 0xff {
            let ipv4 = bytes.suffix(4).map(String.init).joined(separator: ".")
            return """
                \(address) is an IPv4-mapped IPv6 address, which goes out over IPv4 while the reachability gate would judge \
                IPv6 routes; write it as \(ipv4)
                """
        }
        return nil
    }

    /// Whether a request to `host` (as in a URL, brackets allowed) on `port` connects to ``address``.
    public func applies(toHost host: String, port: Int) -> Bool {
        port == self.port && HostPattern.canonicalHost(host) == self.host
    }

    /// `HOST:PORT:ADDRESS`, as curl writes it.
    public var description: String {
        let name = host.contains(":") ? "[\(host)]" : host
        return "\(name):\(port):\(address.family == .ipv6 ? "[\(address)]" : "\(address)")"
    }
}
