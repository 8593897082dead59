/// Hosts as a URL spells them, turned into the names the monitor, the policies, the gates and the CLI use.
public enum URLHost {
    /// `host` without the brackets a URL puts around an IPv6 literal (`[2001:db8::1]` → `2001:db8::1`); any
    /// other host unchanged. The monitor's targets, the gate's verdicts and host patterns all name the bare
    /// address.
    public static func withoutBrackets(_ host: String) -> String {
        host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
    }
}
