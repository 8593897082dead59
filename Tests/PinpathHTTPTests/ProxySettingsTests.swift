import Foundation
import Testing

@testable import PinpathHTTP

/// Proxy URLs and the environment's proxy variables, read as curl reads them (pure logic).
@Suite("Proxy settings")
struct ProxySettingsTests {
    @Test(
        "Proxy URLs parse with curl's defaults",
        arguments: [
            ("http://proxy.test:3128", "http://proxy.test:3128"),
            ("proxy.test:3128", "http://proxy.test:3128"),
            ("HTTP://Proxy.Test:3128/", "http://proxy.test:3128"),
            ("http://proxy.test", "http://proxy.test:1080"),
            ("https://proxy.test", "https://proxy.test:443"),
            ("http://[fd00::1]:8080", "http://[fd00::1]:8080"),
            (" http://user:pa%40ss@10.0.0.1:3128 ", "http://10.0.0.1:3128"),
        ])
    func parses(text: String, shown: String) throws {
        #expect(try Proxy(parsing: text).description.lowercased() == shown)
    }

    @Test("Credentials are decoded and kept out of the description")
    func credentials() throws {
        let proxy = try Proxy(parsing: "http://us%65r:pa%40ss@10.0.0.1:3128")
        #expect(proxy.username == "user")
        #expect(proxy.password == "pa@ss")
        #expect(!proxy.description.contains("pa"))
    }

    @Test(
        "Unusable proxy URLs are refused with a reason and without their credentials",
        arguments: [
            ("socks5://user:secret@10.0.0.1:1080", "socks proxies are not supported"),
            ("socks5h://10.0.0.1:1080", "socks proxies are not supported"),
            ("ftp://10.0.0.1:21", "the scheme must be http or https"),
            ("http://:3128", "names no proxy host"),
            ("http://10.0.0.1:3128/path", "no path, query or fragment"),
            ("http://user:secret@10.0.0.1:99999", "must be 1 to 65535"),
            ("http://user:secret@10.0.0.1:port", "is not a proxy URL"),
            ("http://10.0.0.1:0", "must be 1 to 65535"),
        ])
    func refuses(text: String, reason: String) {
        #expect {
            _ = try Proxy(parsing: text)
        } throws: { error in
            let message = (error as? HTTPError)?.message ?? ""
            return message.contains(reason) && !message.contains("secret")
        }
    }

    @Test("The environment: https_proxy before HTTPS_PROXY, http_proxy only in lower case, no_proxy before NO_PROXY")
    func environment() throws {
        let variables = [
            "https_proxy": "http://lower.test:1", "HTTPS_PROXY": "http://upper.test:2", "HTTP_PROXY": "http://cgi.test:3",
            "NO_PROXY": "upper.invalid", "no_proxy": " .internal.test, 10.1.0.0/16 ,,",
        ]
        let settings = try ProxySettings.environment { variables[$0] }
        #expect(settings.httpsProxy?.host == "lower.test")
        #expect(settings.httpProxy == nil)  // HTTP_PROXY is not read: CGI puts a request's Proxy: header there
        #expect(settings.noProxy.entries == [".internal.test", "10.1.0.0/16"])
        let upper = try ProxySettings.environment { ["HTTPS_PROXY": "http://upper.test:2", "https_proxy": ""][$0] }
        #expect(upper.httpsProxy?.host == "upper.test")
        #expect(try ProxySettings.environment { _ in nil } == .direct)
    }

    /// Found in review: a value that does not parse as a URL (no scheme, a password with `/` or `#`) kept its
    /// credentials in the message, since the usual redaction needs a URL to find them in.
    @Test(
        "A proxy that does not parse is named without its credentials",
        arguments: [
            "svc:Pa55/word@proxy.corp:3128", "http://svc:Pa55/word@proxy.corp:3128", "svc:Pa55#word@proxy.corp:3128",
            "svc:Pa55@word@proxy.corp:99999",
        ])
    func unparsableCredentials(text: String) {
        #expect {
            _ = try Proxy(parsing: text)
        } throws: { error in
            let message = (error as? HTTPError)?.message ?? ""
            return message.contains("proxy.corp") && !message.contains("Pa55") && !message.contains("word")
        }
    }

    @Test("A bad environment value names its variable, not its credentials")
    func badEnvironment() {
        #expect {
            _ = try ProxySettings.environment { ["https_proxy": "socks5://u:hunter2@10.0.0.1:1080"][$0] }
        } throws: { error in
            let message = (error as? HTTPError)?.message ?? ""
            return message.hasPrefix("environment variable https_proxy:") && !message.contains("hunter2")
        }
    }

    @Test(
        "no_proxy matches names with their subdomains, addresses and networks, by curl's rules",
        arguments: [
            ("https://internal.test/", true), ("https://a.b.internal.test/", true), ("https://INTERNAL.TEST./", true),
            ("https://notinternal.test/", false), ("https://10.1.2.3/", true), ("https://10.2.0.1/", false),
            ("https://[fd00::5]:8443/", true), ("https://[fd01::5]/", false), ("http://exact.test/", true),
            ("http://sub.exact.test/", true), ("https://public.test/", false),
        ])
    func noProxy(url: String, direct: Bool) throws {
        let proxy = try Proxy(parsing: "http://proxy.test:3128")
        let settings = ProxySettings(
            httpsProxy: proxy, httpProxy: proxy, noProxy: NoProxyList(".internal.test 10.1.0.0/16,\tfd00::/64, exact.test"))
        #expect((settings.proxy(for: URL(string: url)!) == nil) == direct)
    }

    @Test("no_proxy is shown escaped, as a comma-separated list, with a note on a * that matches nothing")
    func noProxyShown() {
        #expect(NoProxyList(" a.test\tb.test ,c.test").description == "a.test,b.test,c.test")
        #expect(NoProxyList("a.test\u{1b}[2K\u{202e}").description == "a.test\\x1b[2K\\u{202e}")
        #expect(NoProxyList("*").description == "*")
        #expect(NoProxyList("a.test *").description == "a.test,* (a * among other entries matches no host)")
    }

    @Test("A lone * in no_proxy reaches every host directly, a * among entries none; an explicit proxy has no exceptions")
    func wildcard() throws {
        let proxy = try Proxy(parsing: "http://proxy.test:3128")
        #expect(ProxySettings(httpsProxy: proxy, noProxy: NoProxyList("*")).proxy(for: URL(string: "https://any.test/")!) == nil)
        #expect(ProxySettings(httpsProxy: proxy, noProxy: NoProxyList("*,a.test")).proxy(for: URL(string: "https://any.test/")!) == proxy)
        #expect(ProxySettings.through(proxy).proxy(for: URL(string: "http://any.test/")!) == proxy)
        #expect(ProxySettings.direct.proxy(for: URL(string: "https://any.test/")!) == nil)
    }
}
