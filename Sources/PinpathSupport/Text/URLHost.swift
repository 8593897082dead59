/// Hosts as a URL spells them, turned into the names the monitor, the policies, the gates and the CLI use.
package enum URLHost {
    /// `host` without the brackets a URL puts around an IPv6 literal (`[2001:db8::1]` → `2001:db8::1`); any
    /// other host unchanged. The monitor's targets, the gate's verdicts and host patterns all name the bare
    /// address.
    package static func withoutBrackets(_ host: String) -> String {
        host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
    }

    /// Whether the host written in URL text (`scheme://host…` or `//host…`, past any user info, without the
    /// port) has only characters RFC 3986 allows in a host: letters, digits, `-._~!$&'()*+,;=`, `%` with two
    /// hex digits, and non-ASCII (a name to be encoded). Text without an authority, and an IP literal
    /// (`[…]`, left to the URL parser), pass.
    ///
    /// Full Foundation refused URLs with such hosts; FoundationEssentials alone percent-encodes a space or
    /// `|` even in the host, which would turn a typo into a host name nobody has.
    package static func isWellFormed(inURLText text: String) -> Bool {
        let scalars = Array(text.unicodeScalars)
        var start: Int?
        if let separator = (0..<scalars.count).first(where: { scalars[$0...].starts(with: "://".unicodeScalars) }),
            scalars[..<separator].allSatisfy({ $0 != "/" && $0 != "?" && $0 != "#" })
        {
            start = separator + 3
        } else if scalars.starts(with: "//".unicodeScalars) {
            start = 2
        }
        guard let start else { return true }
        let authority = scalars[start...].prefix { !"/?#".unicodeScalars.contains($0) }
        let hostAndPort = authority.lastIndex(of: "@").map { authority[($0 + 1)...] } ?? authority
        guard hostAndPort.first != "[" else { return true }
        let host = Array(hostAndPort.prefix { $0 != ":" })
        let allowed = Set("-._~!$&'()*+,;=".unicodeScalars)
        for (index, scalar) in host.enumerated() where scalar.isASCII {
            if scalar == "%" {
                guard index + 2 < host.count, host[index + 1].properties.isASCIIHexDigit,
                    host[index + 2].properties.isASCIIHexDigit
                else { return false }
            } else if !(("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar) || ("0"..."9").contains(scalar)
                || allowed.contains(scalar))
            {
                return false
            }
        }
        return true
    }
}
