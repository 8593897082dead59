import Foundation
import PinpathHTTP
import PinpathReachability
import PinpathTestSupport
import Testing

@testable import PinpathAgent

/// Issue 26, item 1: `modules:`, read with the endpoint key table (``EndpointReading`` in
/// ``EndpointKey/Place/module``), refused with positions as endpoints are; and item 2: a target read into the
/// endpoint a probe runs.
@Suite("Modules")
struct ModuleConfigurationTests {
    let pki = TestPKI.shared

    func module(_ yaml: String, named name: String = "web") throws -> ModuleConfiguration {
        try #require(try loadConfiguration(yaml).module(named: name))
    }

    @Test("A module loads with its kind, its keys, its targets; policies are chosen by each target's host")
    func loads() throws {
        let yaml = """
            policies:
              pinned: { mode: public_key, pins: ["\(try pki.chain(["inter"])[0].spkiPin)", "\(try pki.chain(["root"])[0].spkiPin)"], hosts: ["**.valid.test"], ca_file: \(pki.path("store")) }
            modules:
              web:
                kind: https
                timeout: 5s
                headers: { X-Team: core }
                expect: { status: [200, 204] }
                targets: ["**.valid.test", 10.0.0.0/8, "2001:db8::/32", 192.0.2.7]
            """
        let web = try module(yaml)
        #expect(web.kind == .https)
        #expect(web.targets?.hosts.map(\.description) == ["**.valid.test"])
        #expect(web.targets?.networks.map(\.description) == ["10.0.0.0/8", "2001:db8::/32", "192.0.2.7/32"])
        let endpoint = try web.endpoint(forTarget: "api.valid.test:8443")
        #expect(endpoint.url.absoluteString == "https://api.valid.test:8443")
        #expect(endpoint.timeout == .seconds(5))
        #expect(endpoint.security?.names == ["pinned"])
        #expect(endpoint.headers.map(\.name) == ["X-Team"])
        // Another host: no policy matches it (chain and host name are still verified).
        #expect(try web.endpoint(forTarget: "https://other.test/health").security == nil)
    }

    @Test(
        "A module read once per kind: each target gets what a fresh reading gives it (its host's policies, their collectors, redirects, its own refusal)"
    )
    func targetsOfOneKindReadOnce() throws {
        let pins = try pki.chain(["inter", "root"]).map(\.spkiPin)
        let yaml = """
            policies:
              wide: { mode: public_key, pins: ["\(pins[0])", "\(pins[1])"], hosts: ["**.valid.test"], ca_file: \(pki.path("store")), report_uri: "https://collector.test/report" }
              narrow: { mode: none, hosts: ["other.test"], ca_file: \(pki.path("otherroot")) }
              named: { mode: none, ca_file: \(pki.path("store")) }
            modules:
              web: { policy: named, follow_redirects: false, timeout: 3s }
            """
        let warmed = try module(yaml)
        let targets = [
            "https://api.valid.test/", "https://plain.test:8443/x", "https://other.test/", "https://deep.api.valid.test/",
            "https://127.0.0.1/", "tls://api.valid.test:443", "tls://other.test:443", "http://api.valid.test/",
        ]
        var outcomes: [String: String] = [:]
        for target in targets + targets.reversed() {
            // A module just loaded reads this target in full: what the warmed one must give, whatever came before.
            let loaded = try module(yaml)
            let fresh = Result { () throws(ModuleConfiguration.TargetProblem) in try loaded.endpoint(forTarget: target) }
            let reused = Result { () throws(ModuleConfiguration.TargetProblem) in try warmed.endpoint(forTarget: target) }
            switch (fresh, reused) {
            case (.success(let expected), .success(let got)):
                #expect(got == expected, "\(target)")
                outcomes[target] = expected.security?.names.joined(separator: "+") ?? "no policy"
            case (.failure(let expected), .failure(let got)):
                #expect(got.message == expected.message, "\(target)")
                outcomes[target] = got.message
            default:
                Issue.record("\(target): a fresh reading gave \(fresh), the warmed module \(reused)")
            }
        }
        // The cases differ, so the comparison above compared something.
        #expect(outcomes["https://api.valid.test/"] == "named+wide")
        #expect(outcomes["https://plain.test:8443/x"] == "named")
        #expect(outcomes["https://other.test/"]?.hasPrefix("modules.web.policy: policies \"named\"") == true, "\(outcomes)")
        #expect(outcomes["http://api.valid.test/"]?.contains("plain http") == true, "\(outcomes)")
        let reports = try warmed.endpoint(forTarget: "https://x.valid.test/").reportCollectors.map(\.url.absoluteString)
        #expect(reports == ["https://collector.test/report"])
        #expect(try warmed.endpoint(forTarget: "https://plain.test/").reportCollectors.isEmpty)
    }

    @Test(
        "The target's forms: a bare host:port takes the module's kind; an http module takes http:// and https:// URLs; IPv6 in brackets",
        arguments: [
            ("https", "127.0.0.1:8443", "https://127.0.0.1:8443"),
            ("http", "example.test:8080", "http://example.test:8080"),
            ("http", "https://example.test/health", "https://example.test/health"),
            ("tls", "[::1]:5432", "tls://[::1]:5432"),
            ("tcp", "tcp://db.test:5432", "tcp://db.test:5432"),
        ])
    func targetForms(kind: String, target: String, url: String) throws {
        let web = try module("modules:\n  web: { kind: \(kind) }\n")
        #expect(try web.endpoint(forTarget: target).url.absoluteString == url)
    }

    @Test(
        "A target that does not parse for its module is refused with one line naming what is wrong",
        arguments: [
            ("{ kind: tls }", "https://example.test/", #"module "web" probes tls://, and "https://example.test/" is a https:// URL"#),
            ("{ kind: tls }", "example.test", #""tls://example.test" has no port"#),
            ("{ kind: https }", "", "the target is empty"),
            ("{ timeout: 2s }", "example.test:443", #"module "web" has no kind:, so the target must be a URL"#),
            ("{ kind: https }", "https://user:secret@example.test/", "the URL holds a user name or password"),
            ("{ kind: tls }", "tls://example.test:443/path", "has a path"),
            // Past 65535 a port would wrap to another one (83979 is 18443): refused, never dialled.
            ("{ kind: tcp }", "127.0.0.1:83979", "port 83979 is out of range (1-65535)"),
            ("{ kind: tls }", "tls://example.test:65536", "port 65536 is out of range"),
        ])
    func refusedTargets(module text: String, target: String, message: String) throws {
        let web = try module("modules:\n  web: \(text)\n")
        #expect(throws: ModuleConfiguration.TargetProblem.self) { try web.endpoint(forTarget: target) }
        do {
            _ = try web.endpoint(forTarget: target)
        } catch {
            #expect(error.message.contains(message), "\(error.message)")
            #expect(!error.message.contains("secret"), "the credentials are not repeated: \(error.message)")
            #expect(!error.message.contains("test.yaml"), "the configuration's path is not the scraper's business")
        }
    }

    @Test("Without kind:, a key that does not apply to the target's kind answers with the configuration's own refusal")
    func kindChecksPerTarget() throws {
        let web = try module("modules:\n  web: { method: POST }\n")
        #expect(try web.endpoint(forTarget: "https://example.test/").method == .post)
        let refuse = try #require(EndpointKey.named("method")?.refusal)
        let refusal = refuse(.tls)
        do {
            _ = try web.endpoint(forTarget: "tls://example.test:443")
            Issue.record("method on a tls:// target was accepted")
        } catch {
            #expect(error.message == "modules.web.method: \(refusal)")
        }
    }

    @Test(
        "check-config's problems, with positions: endpoint-only keys, a key not for the kind, an unknown kind, bad targets, a proxy with ranges",
        arguments: [
            (
                "web: { kind: https, url: \"https://x/\" }",
                "test.yaml:2:23: modules.web.url: a module has no url: each probe's target (&target=) gives the URL"
            ),
            ("web: { kind: https, name: x }", "test.yaml:2:23: modules.web.name: a module has no name: its name is its key under modules:"),
            (
                "web: { kind: https, interval: 5s }",
                "test.yaml:2:23: modules.web.interval: a module has no interval: the scraper's scrape_interval decides when it probes"
            ),
            (
                "web: { kind: https, address: 192.0.2.1 }",
                "test.yaml:2:23: modules.web.address: a module has no address: each target is resolved and checked when it is probed (list the address ranges it may reach in targets:)"
            ),
            (
                "web: { kind: tcp, method: POST }",
                "test.yaml:2:29: modules.web.method: method applies to http:// and https:// URLs only; a tcp:// probe sends no HTTP request"
            ),
            ("web: { kind: htps }", #"test.yaml:2:16: modules.web.kind: "htps" is not one of http, https, tls, tcp"#),
            ("web: { kind: smtp }", "test.yaml:2:8: modules.web.starttls: starttls is missing: a probe of smtp:// upgrades to TLS"),
            (
                "web: { targets: [10.0.0.0/33] }",
                #"test.yaml:2:20: modules.web.targets[0]: "10.0.0.0/33" is not an address range: the length must be 0 to 32"#
            ),
            (
                "web: { targets: [10.0.0.1/8] }",
                #"test.yaml:2:20: modules.web.targets[0]: "10.0.0.1/8" has bits set after its first 8: write 10.0.0.0/8"#
            ),
            (
                "web: { targets: [\"fe80::/129\"] }",
                "test.yaml:2:20: modules.web.targets[0]: \"fe80::/129\" is not an address range: the length must be 0 to 128"
            ),
            ("web: { targets: [\"a.*.example\"] }", "test.yaml:2:20: modules.web.targets[0]: host pattern \"a.*.example\" has a wildcard"),
            ("web: { targets: [] }", "test.yaml:2:19: modules.web.targets: an empty list admits no target"),
            (
                "web: { kind: https, headers: { Authorization: \"Bearer x\" } }",
                "modules.web.headers.Authorization: the module sends credentials (headers.Authorization) to whatever target a scraper names; list the hosts it may send them to in targets:"
            ),
            (
                "web: { proxy: \"http://127.0.0.1:3128\", targets: [10.0.0.0/8] }",
                "modules.web.targets: the module's probes go through a proxy"
            ),
            (
                "\"a\\u202Eb\": { kind: https }",
                "test.yaml:2:3: modules.a\\u{202e}b: the name holds \\u{202e}, a control or bidi formatting character; a module name is one line of visible text"
            ),
        ])
    func problems(module text: String, problem: String) {
        let problems = configurationProblems("modules:\n  \(text)\n")
        #expect(problems.count == 1 && problems.first.map { $0.hasPrefix(problem) || $0.contains(problem) } == true, "\(problems)")
    }

    @Test("The endpoint-only keys named are exactly the table's keys an endpoint has and a module has not")
    func endpointOnlyKeys() {
        #expect(
            Set(ModuleConfiguration.endpointOnlyKeys.map(\.key))
                == Set(EndpointKey.names(in: .endpoint)).subtracting(EndpointKey.names(in: .module)))
    }

    @Test("Address ranges hold their addresses and IPv4-mapped forms; one address is a /32 or /128")
    func ranges() throws {
        let list = try #require(
            try module("modules:\n  web: { targets: [10.0.0.0/8, \"fd00::/8\", 192.0.2.7] }\n").targets)
        for (text, admitted) in [
            ("10.1.2.3", true), ("::ffff:10.1.2.3", true), ("11.0.0.1", false), ("fd12::1", true), ("fe80::1", false),
            ("192.0.2.7", true), ("192.0.2.8", false),
        ] {
            #expect(list.admitsAddress(try #require(IPAddress(text))) == admitted, "\(text)")
        }
    }
}
