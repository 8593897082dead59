import Foundation
import PinpathTestSupport
import Testing

@testable import PinpathHTTP

/// `no_proxy` as the peer reads it: for each row the real `curl` command (Debian 12's 7.88.1), given the
/// variables and an `http_proxy` pointing at a recording ``ProxyServer``, decides whether the host goes through
/// the proxy; pinpath's ``ProxySettings/environment(_:)`` must decide the same. Nothing listens at the origins
/// (port 1 on loopback, names that do not resolve), so a direct attempt fails at once (curl exits 6 or 7) and the
/// proxy's log says whether curl went through it.
@Suite("no_proxy decided as curl decides it", .serialized)
struct NoProxyCurlTableTests {
    /// One host and the proxy variables; `curlDiffers` marks the IPv6 rows where pinpath reads addresses as curl
    /// does since 8.18 and 7.88 compares text (``NoProxyList``): there pinpath goes `direct` when curl 7.88 does not.
    struct Row: Sendable, CustomTestStringConvertible {
        var variables: [String: String]
        var url: String
        var curlDiffers = false
        var testDescription: String { "\(variables.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value.debugDescription)" }) \(url)" }

        init(_ noProxy: String, _ url: String, curlDiffers: Bool = false) {
            self.init(["no_proxy": noProxy], url, curlDiffers: curlDiffers)
        }

        init(_ variables: [String: String], _ url: String, curlDiffers: Bool = false) {
            self.variables = variables
            self.url = url
            self.curlDiffers = curlDiffers
        }
    }

    static let rows: [Row] = [
        // Separators: commas, spaces, tabs, in any mix; a newline is not one.
        Row("a.test b.test", "http://b.test:1/"), Row("a.test b.test", "http://a.test:1/"), Row("a.test,b.test", "http://b.test:1/"),
        Row("a.test, b.test", "http://c.test:1/"), Row("a.test\tb.test", "http://b.test:1/"), Row(" a.test ,, b.test ", "http://b.test:1/"),
        Row("a.test\nb.test", "http://b.test:1/"), Row("a.test,\nb.test", "http://b.test:1/"), Row(" ", "http://a.test:1/"),
        Row("b.test,\u{301}", "http://b.test:1/"),
        // `*` only as the whole value.
        Row("*", "http://x.test:1/"), Row(" *", "http://x.test:1/"), Row("*,a.test", "http://x.test:1/"),
        Row("a.test *", "http://x.test:1/"),
        Row("*.test", "http://x.test:1/"),
        // Names: subdomains, dots, case, ports.
        Row(".example.test", "http://example.test:1/"), Row(".example.test", "http://www.example.test:1/"),
        Row("example.test", "http://notexample.test:1/"), Row("example.test.", "http://www.example.test:1/"),
        Row("EXAMPLE.test", "http://Sub.Example.TEST:1/"), Row("example.test", "http://example.test.:1/"),
        Row("..example.test", "http://www.example.test:1/"), Row("example.test:1", "http://example.test:1/"),
        Row("test", "http://example.test:1/"), Row("xn--bcher-kva.test", "http://bücher.test:1/"),
        Row("bücher.test", "http://bücher.test:1/"),
        // IPv4: addresses, networks, curl's atoi on the bits, the forms its URL parser normalizes.
        Row("127.0.0.1", "http://127.0.0.1:1/"), Row("127.0.0.0/8", "http://127.0.0.2:1/"), Row("127.0.0.0/24", "http://127.0.1.2:1/"),
        Row("127.0.0.0/0", "http://127.0.0.2:1/"), Row("127.0.0.2/32", "http://127.0.0.2:1/"), Row("127.0.0.0/33", "http://127.0.0.2:1/"),
        Row("127.0.0.0/8x", "http://127.0.0.2:1/"), Row("127.0.0.2/x", "http://127.0.0.2:1/"), Row("127.0.0.0/-8", "http://127.0.0.2:1/"),
        Row("127.0.0.1:1", "http://127.0.0.1:1/"), Row("localhost", "http://127.0.0.1:1/"), Row("127.0.0.0/8", "http://localhost:1/"),
        Row("127.0.0.0/8", "http://2130706433:1/"), Row("127.0.0.0/8", "http://127.1:1/"), Row("127.0.0.0/8", "http://0x7f.0.0.1:1/"),
        Row("127.0.0.1", "http://127.0.0.1.:1/"), Row("127.0.0.0/8", "http://127.0.0.1.:1/"), Row("0177.0.0.1", "http://127.0.0.1:1/"),
        Row("[127.0.0.1]", "http://127.0.0.1:1/"), Row("127.0.0.0/8 a.test", "http://127.0.0.3:1/"),
        // IPv6: the same address as text agrees; networks and other spellings are where curl 7.88 differs.
        Row("::1", "http://[::1]:1/"), Row("[::1]", "http://[::1]:1/"), Row("::2/127", "http://[::1]:1/"),
        Row("::1/129", "http://[::1]:1/"),
        Row("127.0.0.0/8", "http://[::ffff:127.0.0.1]:1/"), Row("::/127", "http://[::1]:1/", curlDiffers: true),
        Row("::1/128", "http://[::1]:1/", curlDiffers: true), Row("0:0::1", "http://[::1]:1/", curlDiffers: true),
        // Which variable: no_proxy, else NO_PROXY; empty is unset, blanks are not.
        Row(["NO_PROXY": "a.test"], "http://a.test:1/"), Row(["no_proxy": "", "NO_PROXY": "a.test"], "http://a.test:1/"),
        Row(["no_proxy": " ", "NO_PROXY": "a.test"], "http://a.test:1/"),
        Row(["no_proxy": "b.test", "NO_PROXY": "a.test"], "http://a.test:1/"),
    ]

    static let curlVersion = (try? Shell.run(["/usr/bin/curl", "--version"]).stdout) ?? ""

    @Test("pinpath sends a host through the proxy exactly when curl does", arguments: rows)
    func agreesWithCurl(_ row: Row) throws {
        let proxy = try ProxyServer(directory: TestPKI.shared.directory)
        defer { proxy.stop() }
        var variables = row.variables
        variables["http_proxy"] = proxy.url()

        // curl with only these variables (env -i: none of the test's own; a UTF-8 locale for its IDN conversion),
        // -g for the brackets of IPv6 URLs. Direct, it fails to resolve or connect (6, 7) and the proxy saw nothing.
        let assignments = ["LANG=C.UTF-8"] + variables.map { "\($0.key)=\($0.value)" }
        let curl = try Shell.run(
            ["/usr/bin/env", "-i"] + assignments + ["/usr/bin/curl", "-sSg", "-o", "/dev/null", "--max-time", "3", row.url])
        let curlDirect = !proxy.requests.contains { $0.method == "GET" }
        if curlDirect {
            try #require(
                [6, 7].contains(curl.status), "curl neither went direct nor through the proxy: exit \(curl.status), \(curl.stderr)")
        }

        let settings = try ProxySettings.environment { variables[$0] }
        let url = try #require(URL(string: row.url))
        let pinpathDirect = settings.proxy(for: url) == nil
        if row.curlDiffers {
            #expect(pinpathDirect, "pinpath reads IPv6 entries as addresses (curl ≥ 8.18)")
            if Self.curlVersion.hasPrefix("curl 7.88") { #expect(!curlDirect, "curl 7.88 compares IPv6 hosts as text") }
        } else {
            #expect(pinpathDirect == curlDirect, "curl went \(curlDirect ? "direct" : "through the proxy"), pinpath would not")
        }
    }
}
