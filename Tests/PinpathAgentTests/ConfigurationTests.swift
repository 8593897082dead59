import Foundation
import PinpathReachability
import PinpathSecurity
import PinpathTestSupport
import Testing

@testable import PinpathAgent

/// Validates YAML text as `test.yaml`, with relative paths under a directory that does not exist.
func loadConfiguration(
    _ yaml: String, environment: [String: String] = [:], directory: String = "/nonexistent"
) throws(ConfigurationError) -> AgentConfiguration {
    try AgentConfiguration.parse(yaml: yaml, file: "test.yaml", baseDirectory: directory, environment: environment)
}

/// The problems' descriptions, or none when the text is valid.
func configurationProblems(_ yaml: String, environment: [String: String] = [:]) -> [String] {
    do {
        _ = try loadConfiguration(yaml, environment: environment)
        return []
    } catch {
        return error.problems.map(\.description)
    }
}

/// The repository's example, found from this file so the test does not depend on the working directory.
let exampleConfiguration = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().appendingPathComponent("etc/pinpath.yaml").path

/// Two valid pins (32 bytes each).
let pinA = "sha256/" + String(repeating: "A", count: 43) + "="
let pinB = "sha256/" + String(repeating: "B", count: 43) + "="
let pinC = "sha256/" + String(repeating: "C", count: 43) + "="

@Suite("Configuration")
struct ConfigurationTests {
    @Test("The example file loads, with the values it documents")
    func example() throws {
        let configuration = try AgentConfiguration.load(path: exampleConfiguration, environment: [:])
        #expect(configuration.endpoints.map(\.name) == ["example", "google-204"])
        #expect(configuration.events == EventsConfiguration(probes: .all))  // the example shows every result
        #expect(configuration.policies.map(\.name) == ["system-store"])
        #expect(configuration.reachabilityTargets.map(\.description) == ["1.1.1.1", "2606:4700:4700::1111"])
        #expect(configuration.metricsTextfile == nil)
        let example = configuration.endpoints[0]
        #expect(example.expect.bodyContains == "Example Domain")
        #expect(example.security == nil)  // example.com is not under **.example.org
        #expect(example.requestHeaders["User-Agent"] == "pinpath")
        #expect(configuration.endpoints[1].expect.statuses == [204...204])
        #expect(configuration.endpoints[1].interval == .seconds(30))
    }

    @Test("Defaults apply to a minimal endpoint; the timeout never exceeds a short interval")
    func defaults() throws {
        let configuration = try loadConfiguration(
            """
            endpoints:
              - name: a
                url: https://a.example/
              - name: b
                url: http://b.example/
                interval: 5s
            """)
        let a = configuration.endpoints[0]
        #expect(a.method == .get)
        #expect(a.interval == .seconds(60))
        #expect(a.timeout == .seconds(10))
        #expect(a.failureThreshold == 2)
        #expect(a.successThreshold == 1)
        #expect(a.certExpiryWarnings == [.seconds(14 * 86_400), .seconds(7 * 86_400), .seconds(86_400)])
        #expect(a.followRedirects)
        #expect(a.ipFamily == nil)
        #expect(a.expect.statuses == [200...299])
        #expect(!a.expect.checksBody)
        #expect(a.headers.isEmpty)
        #expect(configuration.endpoints[1].timeout == .seconds(5))
        #expect(configuration.events.maxSize == 10 * 1024 * 1024)
        #expect(configuration.events.keep == 5)
    }

    @Test("An empty file is an empty configuration")
    func empty() throws {
        let configuration = try loadConfiguration("# nothing yet\n")
        #expect(configuration.endpoints.isEmpty)
        #expect(configuration.events.output == .stdout)
    }

    @Test("Every value is read: events, expectations, thresholds, families, dates")
    func values() throws {
        let configuration = try loadConfiguration(
            """
            events: { output: /tmp/pinpath-events.jsonl, max_size: 512KiB, keep: 0, probes: all }
            policies:
              report-only:
                mode: public_key
                pins: ["\(pinA)"]
                enforce: false
                expires: 2027-06-30
            endpoints:
              - name: api
                url: https://api.example.com/health?full=1
                method: post
                policy: report-only
                expect: { status: [204, "300-302", 4xx], body_contains: ok, body_matches: '"status":\\s*"up"' }
                interval: 1h30m
                timeout: 500ms
                ip_family: ipv6
                failure_threshold: 3
                success_threshold: 2
                cert_expiry_warning: 0s
                follow_redirects: false
            metrics: { textfile: pinpath.prom }
            """, directory: "/tmp")
        #expect(
            configuration.events
                == EventsConfiguration(output: .file("/tmp/pinpath-events.jsonl"), maxSize: 512 * 1024, keep: 0, probes: .all))
        let policy = try #require(configuration.policy(named: "report-only")).policy
        #expect(!policy.enforce)
        #expect(policy.expires == Date(timeIntervalSince1970: 1_814_313_600))  // 2027-06-30T00:00:00Z
        let api = configuration.endpoints[0]
        #expect(api.url.absoluteString == "https://api.example.com/health?full=1")
        #expect(api.method.rawValue == "POST")
        #expect(api.security?.names == ["report-only"])
        #expect(api.expect.statuses == [204...204, 300...302, 400...499])
        #expect(api.expect.accepts(status: 301) && !api.expect.accepts(status: 200))
        #expect(try api.expect.accepts(body: #"ok: {"status": "up"}"#))
        #expect(try !api.expect.accepts(body: #"ok: {"status": "down"}"#))
        #expect(api.interval == .seconds(5400))
        #expect(api.timeout == .milliseconds(500))
        #expect(api.ipFamily == .ipv6)
        #expect((api.failureThreshold, api.successThreshold) == (3, 2))
        #expect(api.certExpiryWarnings.isEmpty)
        #expect(!api.followRedirects)
        #expect(configuration.metricsTextfile == "/tmp/pinpath.prom")
    }

    @Test("Without a policy key, an https endpoint gets the policies whose hosts match, pins united")
    func hostMatching() throws {
        let configuration = try loadConfiguration(
            """
            policies:
              wide: { mode: public_key, pins: ["\(pinA)", "\(pinB)"], hosts: ["**.example.com"] }
              api: { mode: public_key, pins: ["\(pinC)"], require_backup_pin: false, hosts: ["api.example.com"] }
              plain: { mode: none }
            endpoints:
              - { name: one, url: "https://api.example.com/" }
              - { name: two, url: "https://www.example.com/" }
              - { name: three, url: "https://other.test/" }
              - { name: four, url: "https://other.test/", policy: plain }
              - { name: five, url: "http://api.example.com/" }
            """)
        let security = configuration.endpoints.map(\.security)
        #expect(security.map { $0?.names ?? [] } == [["wide", "api"], ["wide"], [], ["plain"], []])
        #expect(security[0]?.policy.pins.count == 3)
        #expect(security[0]?.policy.notedHostname == "**.example.com")
    }

    @Test("Relative paths are resolved against the configuration's directory; files are read at load")
    func relativePaths() throws {
        let pki = TestPKI.shared
        let scratch = try TemporaryDirectory("config")
        let directory = scratch.path
        try FileManager.default.createDirectory(atPath: "\(directory)/certs", withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: pki.path("root"), toPath: "\(directory)/certs/root.pem")
        try """
        events: { output: events.jsonl }
        policies:
          internal:
            mode: certificate
            certificates: [certs/root.pem]
            ca_file: certs/root.pem
        endpoints:
          - { name: internal, url: "https://valid.test/", policy: internal }
        """.write(toFile: "\(directory)/pinpath.yaml", atomically: true, encoding: .utf8)
        let configuration = try AgentConfiguration.load(path: "\(directory)/pinpath.yaml", environment: [:])
        #expect(configuration.events.output == .file("\(directory)/events.jsonl"))
        let policy = try #require(configuration.policies.first)
        #expect(policy.caFile == "\(directory)/certs/root.pem")
        #expect(policy.trustStore != nil)
        #expect(policy.policy.pinnedCertificates == [try pki.certificate("root")])
        #expect(configuration.endpoints[0].security?.caFile == "\(directory)/certs/root.pem")
    }

    static let endpoint = """
        endpoints:
          - name: api
            url: https://api.example.com/health

        """
    static let generalDuration = "use a whole number and a unit: 500ms, 30s, 5m, 2h or 14d"

    @Test(
        "Each problem is reported at its exact line and column, with key path and advice",
        arguments: [
            (endpoint + "    intervall: 30s", #"test.yaml:4:5: endpoints[0].intervall: unknown key "intervall"; did you mean "interval"?"#),
            (endpoint + "    interval: [30s]", "test.yaml:4:15: endpoints[0].interval: expected a duration (like 30s), found a list"),
            (
                endpoint + "    interval: 5 minutes",
                #"test.yaml:4:15: endpoints[0].interval: "5 minutes" is not a duration (use 300s or 5m)"#
            ),
            (endpoint + "    interval: 0s", "test.yaml:4:15: endpoints[0].interval: 0s is too short (it must be at least 1s)"),
            (endpoint + "    timeout: 0s", "test.yaml:4:14: endpoints[0].timeout: 0s is too short (it must be more than 0)"),
            (
                endpoint + "    interval: 5s\n    timeout: 10s",
                "test.yaml:5:14: endpoints[0].timeout: 10s is longer than the interval (5s); a probe must end before the next one starts"
            ),
            (
                endpoint + "    policy: pins",
                #"test.yaml:4:13: endpoints[0].policy: policy "pins" is not defined (there is no policies: section)"#
            ),
            (
                endpoint + "  - name: api\n    url: https://b.example/",
                #"test.yaml:4:11: endpoints[1].name: another endpoint is already named "api" (line 2); names must be unique"#
            ),
            (
                endpoint + "    timeout: 5s\n    timeout: 6s",
                #"test.yaml:5:5: endpoints[0].timeout: the key "timeout" is given twice (first on line 4)"#
            ),
            (
                endpoint + "    follow_redirects: yes",
                #"test.yaml:4:23: endpoints[0].follow_redirects: expected true or false, found "yes""#
            ),
            (
                endpoint + "    failure_threshold: 0",
                "test.yaml:4:24: endpoints[0].failure_threshold: 0 is out of range (expected a whole number, 1 or more)"
            ),
            (
                endpoint + "    ip_family: ipv5",
                #"test.yaml:4:16: endpoints[0].ip_family: "ipv5" is not one of any, ipv4, ipv6; did you mean "ipv4"?"#
            ),
            (endpoint + "    method: GET /", #"test.yaml:4:13: endpoints[0].method: "GET /" is not an HTTP method (GET, HEAD, POST, …)"#),
            (
                endpoint + "    expect: { status: [\"300-200\"] }",
                #"""
                test.yaml:4:24: endpoints[0].expect.status[0]: "300-200" is not a status code or range (use 200, "200-299" or \#
                "2xx", within 100-599, low to high)
                """#
            ),
            (
                endpoint + "    expect: { status: [600] }",
                #"""
                test.yaml:4:24: endpoints[0].expect.status[0]: "600" is not a status code or range (use 200, "200-299" or "2xx", \#
                within 100-599, low to high)
                """#
            ),
            (
                endpoint + "    expect: { body_matches: \"([a-z\" }",
                #"""
                test.yaml:4:29: endpoints[0].expect.body_matches: "([a-z" is not a valid regular expression (PCRE2 syntax): \#
                missing terminating ] for character class at offset 5 of the pattern
                """#
            ),
            (
                endpoint + "    headers:\n      Authorization: \"Bearer ${API_TOKEN}\"",
                """
                test.yaml:5:22: endpoints[0].headers.Authorization: the environment variable API_TOKEN is not set (give it to \
                pinpath, for example with systemd's Environment= or EnvironmentFile=)
                """
            ),
            (
                endpoint + "    headers:\n      X-Token: \"${API_TOKEN\"",
                #"test.yaml:5:16: endpoints[0].headers.X-Token: "${" has no closing "}" (write ${NAME})"#
            ),
            (
                endpoint + "    headers:\n      X-Token: \"${1X}\"",
                #"""
                test.yaml:5:16: endpoints[0].headers.X-Token: "${1X}" is not an environment variable reference (letters, digits \#
                and _, not starting with a digit)
                """#
            ),
            (
                endpoint + "    headers:\n      Bad Name: x",
                #"""
                test.yaml:5:7: endpoints[0].headers.Bad Name: header name "Bad Name" is not a valid token (letters, digits and \#
                !#$%&'*+-.^_`|~ only)
                """#
            ),
            (
                endpoint + "    headers:\n      Accept: a\n      accept: b",
                "test.yaml:6:7: endpoints[0].headers.accept: the header accept is given twice (names are compared without regard to case)"
            ),
            (
                "endpoints:\n  - name: api\n",
                "test.yaml:2:5: endpoints[0]: url is missing (a URL such as https://host/path or tls://host:port)"
            ),
            (
                "endpoints:\n  - { name: api, url: \"gopher://x/\" }",
                #"test.yaml:2:23: endpoints[0].url: "gopher://x/" is not a URL pinpath probes; use one of http://, https://, tls://, tcp://, smtp://, smtps://, imap://, imaps://, pop3://, pop3s://, ftp://, ldaps:// (such as https://api.example.com/health or tls://db.example.com:5432)"#
            ),
            (
                "endpoints:\n  - { name: api, url: \"https://u:p@x.test/\" }",
                """
                test.yaml:2:23: endpoints[0].url: the URL holds a user name or password, which would appear in events; use an \
                Authorization header with ${ENV} instead
                """
            ),
            (
                "endpoints:\n  - { name: api, url: \"http://x.test/\", policy: p }\npolicies:\n  p: { mode: none }",
                #"test.yaml:2:49: endpoints[0].policy: policy "p" checks TLS, but the URL is plain http; use https or remove the policy"#
            ),
            (
                "endpoints: { name: api }",
                "test.yaml:1:12: endpoints: expected a list of endpoints (mappings with name and url), found a mapping"
            ),
            (endpoint + "metrix: {}", #"test.yaml:4:1: metrix: unknown key "metrix"; did you mean "metrics"?"#),
            (
                endpoint + "metrics: { textfile: pinpath.txt }",
                #"""
                test.yaml:4:22: metrics.textfile: "pinpath.txt" does not end in .prom; node_exporter's textfile collector reads \#
                only *.prom files
                """#
            ),
            (endpoint + "events: { probes: every }", #"test.yaml:4:19: events.probes: "every" is not one of changes, all"#),
            (
                endpoint + "events: { max_size: 10 MB }",
                #"test.yaml:4:21: events.max_size: "10 MB" is not a size (use a whole number of bytes, or KiB, MiB, GiB: 10MiB)"#
            ),
            (
                endpoint + "reachability: { targets: [\"a b\"] }",
                #"test.yaml:4:27: reachability.targets[0]: "a b" is not an IP address or host name: it contains " ""#
            ),
            (
                endpoint + "policies:\n  p:\n    mode: public_key\n    pins: [\"sha256/AAAA\"]",
                #"test.yaml:7:12: policies.p.pins[0]: pin "sha256/AAAA" decodes to 3 bytes, a SHA-256 pin has 32"#
            ),
            (
                endpoint + "policies:\n  p:\n    mode: certificate\n    certificates: [missing.pem]",
                "test.yaml:7:20: policies.p.certificates[0]: /nonexistent/missing.pem: cannot open: No such file or directory"
            ),
            (
                endpoint + "policies:\n  p:\n    mode: certificate\n    certificates: [/]",
                "test.yaml:7:20: policies.p.certificates[0]: /: cannot read: Is a directory"
            ),
            (
                endpoint + "policies:\n  p:\n    mode: none\n    ca_file: ca.pem",
                "test.yaml:7:14: policies.p.ca_file: /nonexistent/ca.pem: cannot open: No such file or directory"
            ),
            (
                endpoint + "policies:\n  p:\n    mode: public_key\n    pins: [\"\(pinA)\"]",
                """
                test.yaml:5:3: policies.p: an enforcing public_key policy needs a backup pin (2 or more, it has 1); add one or \
                waive it explicitly with require_backup_pin: false
                """
            ),
            (
                endpoint + "policies:\n  p:\n    pins: [\"\(pinA)\", \"\(pinB)\"]",
                "test.yaml:5:3: policies.p: mode is missing (none, public_key or certificate); pinning is never implied"
            ),
            (
                endpoint + "policies:\n  p:\n    mode: none\n    pins: [\"\(pinA)\"]",
                "test.yaml:7:11: policies.p: pins and certificates are not checked in mode none; use mode public_key or certificate"
            ),
            (
                endpoint + "policies:\n  p:\n    mode: none\n    expires: 2027-02-30",
                #"test.yaml:7:14: policies.p.expires: "2027-02-30" is not a date (use YYYY-MM-DD, such as 2027-06-30)"#
            ),
            (
                endpoint + "policies:\n  p:\n    mode: none\n    hosts: [\"api.*.com\"]",
                #"""
                test.yaml:7:13: policies.p.hosts[0]: host pattern "api.*.com" has a wildcard that is not the whole first label \#
                (use *.domain or **.domain)
                """#
            ),
            (
                "endpoints: [\n",
                "test.yaml:2:1: invalid YAML: did not find expected node content (while parsing a flow node, line 2 column 1)"
            ),
            (
                "endpoints:\n\t- name: x\n",
                """
                test.yaml:2:1: invalid YAML: found character that cannot start any token (while scanning for the next token, line \
                2 column 1)
                """
            ),
            ("a: 1\n---\nb: 2\n", "test.yaml:2:1: a second YAML document starts here; the configuration is one document (remove the ---)"),
            (
                endpoint + "    <<: { interval: 5s }",
                """
                test.yaml:4:5: endpoints[0].<<: merge keys (<<) are not supported; repeat the keys, or use an alias (*name) for a \
                whole value
                """
            ),
            ("- just a list", "test.yaml:1:1: expected a mapping (key: value lines), found a list"),
        ])
    func problem(yaml: String, expected: String) {
        #expect(configurationProblems(yaml) == [expected])
    }

    @Test("A reference to a policy with problems of its own is not also called undefined")
    func brokenPolicyReference() {
        let problems = configurationProblems(Self.endpoint + "    policy: p\npolicies:\n  p:\n    mode: public_key\n    pins: [bad]")
        #expect(problems.count == 1)
        #expect(problems.first?.hasPrefix("test.yaml:8:12: policies.p.pins[0]: pin \"bad\"") == true)
    }

    @Test("An undefined policy suggests the closest defined one")
    func policySuggestion() {
        let problems = configurationProblems(Self.endpoint + "    policy: api-pin\npolicies:\n  api-pins: { mode: none }")
        #expect(problems == [#"test.yaml:4:13: endpoints[0].policy: policy "api-pin" is not defined; did you mean "api-pins"?"#])
    }

    @Test("Several problems are all reported, in file order")
    func several() {
        let problems = configurationProblems(
            """
            events: { probes: every }
            endpoints:
              - name: api
                url: https://api.example.com/
                intervall: 30s
                timeout: soon
              - name: api
                url: https://b.example/
                policy: nothing
            reachability: { targets: ["1.1.1.1", "1.1.1.1"] }
            """)
        #expect(
            problems.map { $0.split(separator: ":").prefix(3).joined(separator: ":") } == [
                "test.yaml:1:19", "test.yaml:5:5", "test.yaml:6:14", "test.yaml:7:11", "test.yaml:9:13", "test.yaml:10:38",
            ])
    }

    @Test("A file that cannot be read is one problem naming it, with no position")
    func unreadable() throws {
        let error = #expect(throws: ConfigurationError.self) {
            try AgentConfiguration.load(path: "/nonexistent/pinpath.yaml", environment: [:])
        }
        #expect(error?.problems.map(\.description) == ["/nonexistent/pinpath.yaml: cannot read the file: No such file or directory"])
        #expect(error?.problems.first?.code == .unreadableFile)
    }

    @Test("Problems render as event fields")
    func problemJSON() {
        let problem = ConfigurationProblem(file: "f.yaml", line: 3, column: 7, keyPath: "a.b", code: .invalidValue, message: "m")
        #expect(problem.jsonValue.encoded() == #"{"file":"f.yaml","line":3,"column":7,"key":"a.b","code":"invalid_value","message":"m"}"#)
    }
}
