import Foundation
import PinpathHTTP
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
            ("proxy: http://${MISSING}:3128\n", "test.yaml:1:8: proxy: the environment variable MISSING is not set"),
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
}
