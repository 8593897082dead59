import Foundation
import PinpathHTTP
import PinpathTestSupport
import Testing

@testable import PinpathAgent

/// `proxy:` at the top and per endpoint, and the environment's proxies (issue 13, item 5).
@Suite("Proxy configuration")
struct ProxyConfigurationTests {
    static let endpoints = """
        endpoints:
          - name: api
            url: https://api.example.com/health
          - name: own
            url: https://own.example.com/
            proxy: http://own-proxy.example.com:8080

        """

    @Test("The top-level proxy is the default, an endpoint's own wins, and none ignores the environment")
    func precedence() throws {
        let environment = ["https_proxy": "http://env-proxy.example.com:3128"]
        let configured = try loadConfiguration("proxy: https://proxy.example.com:8443\n" + Self.endpoints, environment: environment)
        #expect(
            configured.endpoints.map { $0.proxy.summary(for: $0.url) } == [
                "https://proxy.example.com:8443 (configuration)", "http://own-proxy.example.com:8080 (endpoint)",
            ])
        #expect(configured.endpoints[0].proxy.source == .configuration)

        let fromEnvironment = try loadConfiguration(Self.endpoints, environment: environment)
        #expect(
            fromEnvironment.endpoints[0].proxy.summary(for: fromEnvironment.endpoints[0].url)
                == "http://env-proxy.example.com:3128 (environment)")

        let none = try loadConfiguration("proxy: none\n" + Self.endpoints, environment: environment)
        #expect(none.endpoints[0].proxy.settings == .direct)
        #expect(none.endpoints[1].proxy.settings != .direct)
        #expect(try loadConfiguration(Self.endpoints).endpoints[0].proxy.settings == .direct)
    }

    @Test("An endpoint through a proxy is watched at the proxy's host; no_proxy hosts at their own")
    func watchedTargets() throws {
        let configuration = try loadConfiguration(
            Self.endpoints,
            environment: ["https_proxy": "http://10.0.0.8:3128", "no_proxy": "own.example.com"])
        #expect(configuration.endpoints.map(EndpointTracker.host(of:)) == ["10.0.0.8", "own-proxy.example.com"])
        let noProxy = try loadConfiguration(
            "endpoints:\n  - name: a\n    url: https://a.internal.test/\n",
            environment: ["https_proxy": "http://10.0.0.8:3128", "no_proxy": ".internal.test"])
        #expect(noProxy.endpoints.map(EndpointTracker.host(of:)) == ["a.internal.test"])
    }

    @Test("Through an https proxy, the policies matching the proxy's host travel with the probe even when redirects are off")
    func httpsProxyPolicies() throws {
        let yaml = """
            policies:
              proxy-pins: { mode: none, hosts: [proxy.example.com] }
            endpoints:
              - name: api
                url: https://api.example.com/health
                follow_redirects: false
                proxy: PROXY

            """
        let https = try loadConfiguration(yaml.replacingOccurrences(of: "PROXY", with: "https://proxy.example.com:8443"))
        #expect(https.endpoints[0].redirectPolicies.map(\.name) == ["proxy-pins"])
        let plain = try loadConfiguration(yaml.replacingOccurrences(of: "PROXY", with: "http://proxy.example.com:3128"))
        #expect(plain.endpoints[0].redirectPolicies.isEmpty)
    }

    @Test("A proxy password may come from the environment and never shows")
    func password() throws {
        let configuration = try loadConfiguration(
            "proxy: http://agent:${PROXY_PASSWORD}@10.0.0.8:3128\n" + Self.endpoints, environment: ["PROXY_PASSWORD": "hunter2"])
        let proxy = try #require(configuration.endpoints[0].proxy.settings.httpsProxy)
        #expect(proxy.password == "hunter2")
        #expect(!configuration.endpoints[0].proxy.summary(for: configuration.endpoints[0].url).contains("hunter2"))
    }

    @Test(
        "Bad proxies are refused at their line and column, without their credentials",
        arguments: [
            (
                "proxy: socks5://u:secret@10.0.0.8:1080\n",
                #"test.yaml:1:8: proxy: "socks5://10.0.0.8:1080": socks proxies are not supported"#
            ),
            ("proxy: [a]\n", "test.yaml:1:8: proxy: expected a proxy URL"),
            ("proxy: http://10.0.0.8:3128/path\n", "test.yaml:1:8: proxy: \"http://10.0.0.8:3128/path\": a proxy URL has no path"),
            ("proxy: http://u:${MISSING}@10.0.0.8:3128\n", "test.yaml:1:8: proxy: the environment variable MISSING is not set"),
        ])
    func refused(yaml: String, expected: String) {
        let problems = configurationProblems(yaml + Self.endpoints)
        #expect(problems.count == 1, "\(problems)")
        #expect(problems.first?.hasPrefix(expected) == true, "\(problems)")
        #expect(!problems.joined().contains("secret"))
    }

    @Test("An endpoint's bad proxy names the endpoint's key")
    func endpointKey() {
        let problems = configurationProblems(Self.endpoints.replacingOccurrences(of: "http://own-proxy", with: "ftp://own-proxy"))
        #expect(problems.count == 1, "\(problems)")
        #expect(problems.first?.hasPrefix("test.yaml:6:12: endpoints[1].proxy: ") == true, "\(problems)")
    }

    @Test("A bad proxy variable in the environment names the variable, unless proxy: overrides it")
    func badEnvironment() {
        let environment = ["https_proxy": "socks5://u:secret@10.0.0.8:1080"]
        let problems = configurationProblems(Self.endpoints, environment: environment)
        #expect(problems.count == 1, "\(problems)")
        #expect(problems.first?.contains("proxy: environment variable https_proxy:") == true, "\(problems)")
        #expect(!problems.joined().contains("secret"))
        #expect(configurationProblems("proxy: none\n" + Self.endpoints, environment: environment).isEmpty)
    }

    /// Round 2, finding 7: `${…}` anywhere in a proxy URL was expanded, and only the user information is kept out
    /// of what is shown; `proxy: "${PROBE_TOKEN}"` made the token the proxy's host, printed in full by
    /// `check-config` (text and JSON) and sent to DNS.
    @Test(
        "${…} is refused outside a proxy URL's user name and password, before anything is read",
        arguments: [
            "\"${PROXY_TOKEN}\"", "http://${PROXY_TOKEN}:3128", "http://proxy.example:${PROXY_TOKEN}",
            "\"${PROXY_TOKEN}://proxy.example:3128\"", "\"http://u:p@proxy.example:3128/${PROXY_TOKEN}\"",
            "\"http://proxy.example:3128#@${PROXY_TOKEN}\"",
        ])
    func variableOutsideUserInformation(proxy: String) {
        for (yaml, prefix) in [
            ("proxy: \(proxy)\n" + Self.endpoints, "test.yaml:1:8: proxy: "),
            (Self.endpoints + "    proxy: \(proxy)\n", "test.yaml:6:12: endpoints[1].proxy: "),
        ] {
            let problems = configurationProblems(
                yaml.replacingOccurrences(of: "    proxy: http://own-proxy.example.com:8080\n", with: ""),
                environment: ["PROXY_TOKEN": "ghp_SECRETproxytoken"])
            #expect(
                problems == [
                    prefix
                        + "${…} may only give a proxy URL's user name or password (http://user:${PASSWORD}@host:port): its "
                        + "host and port are shown in check-config and events, and looked up in DNS"
                ], "\(yaml)")
        }
    }

    @Test("A variable's value is the password as it is: @, /, : and % in it never move the host")
    func passwordCharacters() throws {
        let configuration = try loadConfiguration(
            "proxy: http://agent:${PROXY_PASSWORD}@10.0.0.8:3128\n" + Self.endpoints,
            environment: ["PROXY_PASSWORD": "p@ss/w:rd%41#x?y"])
        let proxy = try #require(configuration.endpoints[0].proxy.settings.httpsProxy)
        #expect(proxy.host == "10.0.0.8" && proxy.port == 3128)
        #expect(proxy.username == "agent" && proxy.password == "p@ss/w:rd%41#x?y")
    }

    @Test("check-config never shows a token written as a proxy's host; a password with @, / and %41 reaches the proxy intact")
    func proxyTokenEndToEnd() throws {
        let directory = try TemporaryDirectory()
        let token = "ghp_SECRETproxytoken0123456789"
        let main = directory.file("pinpath.yaml")
        try "proxy: \"${PROBE_TOKEN}\"\nendpoints:\n  - { name: api, url: \"https://api.example/\" }\n".write(
            toFile: main, atomically: true, encoding: .utf8)
        for options in [[], ["--json"], ["--effective"]] {
            let check = try Shell.run(["/usr/bin/env", "PROBE_TOKEN=\(token)", Shell.pinpath, "check-config", "--config", main] + options)
            #expect(check.status == 78, "\(options): \(check.stdout)")
            #expect(!(check.stdout + check.stderr).contains("SECRET"), "\(options): \(check.stdout)\(check.stderr)")
        }

        let password = "p@ss/w:rd%41"
        let proxy = try ProxyServer(credentials: "agent:\(password)", directory: directory.path)
        defer { proxy.stop() }
        let origin = try RecordingServer(directory: directory.path)
        defer { origin.stop() }
        try """
        events: { output: stdout, probes: all }
        endpoints:
          - { name: api, url: "\(origin.origin)/through", proxy: "http://agent:${PROXY_PASSWORD}@127.0.0.1:\(proxy.port)", timeout: 4s }

        """.write(toFile: main, atomically: true, encoding: .utf8)
        let run = try Shell.run(["/usr/bin/env", "PROXY_PASSWORD=\(password)", Shell.pinpath, "run", "--once", "--config", main])
        #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
        #expect(proxy.requests.map(\.authorized) == [true], "\(proxy.requests)")
        #expect(origin.requests.map(\.path) == ["/through"])
        #expect(!(run.stdout + run.stderr).contains(password))
    }
}
