import Glibc

/// `webpki.cn_in_san`: a commonName of the leaf's subject is a character-for-character copy of one of its
/// subject alternative names (Baseline Requirements §7.1.4.3), so that the name a person reads is the name
/// the verifier checked:
/// - a commonName that reads as an IP address (anything `inet_aton` or `inet_pton` takes: `0xC0A80101`,
///   `192.168.001.001`, `2001:DB8::1`) must be the canonical text of an IP SAN: RFC 3986 dotted decimal,
///   RFC 5952 for IPv6 (`192.168.1.1`, `2001:db8::1`);
/// - any other commonName must be one of the dNSNames byte for byte, or the domain one of them lies in
///   (`CN=example.com` beside `DNS:*.example.com` or `DNS:www.example.com`): no case folding, no U-label for
///   an xn-- label.
///
/// Deliberately lenient, where the commonName cannot pass for a host the verifier checked (this profile
/// never matches the host against the subject): a commonName that is neither an address nor a dotted name
/// (`CN=Loopback`, `CN=Pinned Self-Signed Server`, as private PKIs write them) is not compared, nor is any
/// commonName that is not an address on a leaf whose SANs hold no dNSName (`CN=example.com` beside
/// `IP:127.0.0.1` only, which x509-limbo's `webpki::san::exact-localhost-ip-san` expects accepted). The
/// domain a SAN lies in is accepted for the same reason (x509-limbo's leaves read `CN=example.com` beside
/// `*.example.com`): such a commonName names no host beyond the SAN's own domain, and the host is never
/// matched against it.
struct CommonNameInSubjectAlternativeNames: ProfileRule {
    let name = "webpki.cn_in_san"
    let profiles: Set<VerificationProfile> = [.webpki]

    func evaluate(_ path: inout VerifiedPath) -> RuleResult<ProfileViolation> {
        let names = path.leafSubjectAlternativeNames?.value ?? []
        // A leaf has a few names: arrays searched in order cost less than sets hashed byte by byte.
        let dnsNames = names.compactMap { name -> [UInt8]? in
            if case .dns(let bytes) = name { return bytes }
            return nil
        }
        for commonName in path.leaf.commonNames {
            if Self.readsAsAddress(commonName) {
                let addresses = names.compactMap { name -> [UInt8]? in
                    guard case .ipAddress(let bytes) = name else { return nil }
                    return bytes.withUnsafeBytes(ipAddressText).map { Array($0.utf8) }
                }
                guard !addresses.contains(commonName) else { continue }
                return fails(
                    path, depth: 0,
                    "the commonName \(DNSNameSyntax.quoted(commonName)) is not one of the IP address SANs in "
                        + "canonical form")
            }
            if !dnsNames.isEmpty && commonName.contains(UInt8(ascii: "."))
                && !dnsNames.contains(where: { Self.lies($0, in: commonName) })
            {
                return fails(
                    path, depth: 0,
                    "the commonName \(DNSNameSyntax.quoted(commonName)) is neither a byte-for-byte copy of one of "
                        + "the DNS SANs nor the domain one of them lies in")
            }
        }
        return .meetsRule
    }

    /// Whether `name` is `domain`, or a name below it (`*.example.com` and `a.b.example.com` in `example.com`),
    /// byte for byte.
    static func lies(_ name: [UInt8], in domain: [UInt8]) -> Bool {
        name == domain
            || (name.count > domain.count + 1 && name[name.count - domain.count - 1] == UInt8(ascii: ".")
                && name.suffix(domain.count).elementsEqual(domain))
    }

    /// Whether a resolver would take `text` for an address. Wraps `inet_aton` (which also takes the hex,
    /// octal and short forms) and `inet_pton` for IPv6.
    static func readsAsAddress(_ text: [UInt8]) -> Bool {
        let string = String(decoding: text, as: UTF8.self)
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_aton(string, &v4) != 0 || inet_pton(AF_INET6, string, &v6) == 1
    }
}
