import Foundation
import PinpathSecurity
import PinpathTestSupport
import Testing

@testable import PinpathAgent

/// `report_uri` in a policy: what loads, what is refused at its line and column, and whose policy a collector's
/// host gets.
@Suite("Configuration: report_uri")
struct ReportURIConfigurationTests {
    /// A pinning policy with `report_uri` written as `value` (line 6, column 17), and an endpoint it applies to.
    static func policy(_ value: String) -> String {
        """
        policies:
          pins:
            mode: public_key
            pins: ["\(pinA)", "\(pinB)"]
            hosts: ["api.example.org"]
            report_uri: \(value)
        endpoints:
          - { name: api, url: "https://api.example.org/" }
        """
    }

    @Test("One URL or a list; an endpoint gets the collectors of every policy that applies to it, once each")
    func loads() throws {
        let single = try loadConfiguration(Self.policy("https://reports.example.net/pin"))
        #expect(single.policies[0].reportURIs.map(\.absoluteString) == ["https://reports.example.net/pin"])
        #expect(single.endpoints[0].reportCollectors.map(\.displayURL) == ["https://reports.example.net/pin"])

        let configuration = try loadConfiguration(
            """
            policies:
              pins:
                mode: public_key
                pins: ["\(pinA)", "\(pinB)"]
                report_uri: ["https://a.example.net/r", "https://b.example.net/r"]
              wide: { mode: none, hosts: ["**.example.org"], report_uri: ["https://b.example.net/r", "https://c.example.net/r"] }
              unrelated: { mode: none, hosts: ["example.com"], report_uri: "https://d.example.net/r" }
            endpoints:
              - { name: api, url: "https://api.example.org/", policy: pins }
              - { name: plain, url: "https://example.net/" }
            """)
        #expect(
            configuration.endpoints[0].reportCollectors.map(\.displayURL) == [
                "https://a.example.net/r", "https://b.example.net/r", "https://c.example.net/r",
            ])
        #expect(configuration.endpoints[1].reportCollectors.isEmpty)
        #expect(configuration.warnings.isEmpty)
    }

    @Test("A collector's host is held to the policies whose hosts match it, as any request there")
    func collectorPolicy() throws {
        let configuration = try loadConfiguration(
            """
            policies:
              pins:
                mode: public_key
                pins: ["\(pinA)", "\(pinB)"]
                hosts: ["api.example.org"]
                report_uri: ["https://reports.example.net/r", "https://elsewhere.example.com/r"]
              collector: { mode: public_key, pins: ["\(pinC)", "\(pinB)"], hosts: ["reports.example.net"] }
            endpoints:
              - { name: api, url: "https://api.example.org/" }
            """)
        let collectors = configuration.endpoints[0].reportCollectors
        #expect(collectors[0].security?.names == ["collector"])
        #expect(collectors[0].security?.policy.pins.count == 2)
        #expect(collectors[1].security == nil, "no policy matches: chain and host name against the system store")
    }

    @Test(
        "Each bad report_uri is reported at its line and column, with the key path",
        arguments: [
            (
                "ftp://reports.example.net/",
                #"test.yaml:6:17: policies.pins.report_uri: "ftp://reports.example.net/" is not an http or https URL (such as https://reports.example.com/pin-failure)"#
            ),
            (
                "reports.example.net/pin",
                #"test.yaml:6:17: policies.pins.report_uri: "reports.example.net/pin" is not an http or https URL (such as https://reports.example.com/pin-failure)"#
            ),
            ("\"https:///pin\"", #"test.yaml:6:17: policies.pins.report_uri: "https:///pin" has no host"#),
            (
                "\"\"",
                "test.yaml:6:17: policies.pins.report_uri: the URL is empty; give the collector's https URL (such as https://reports.example.com/pin-failure)"
            ),
            (
                "{ url: https://r.example.net/ }",
                "test.yaml:6:17: policies.pins.report_uri: expected a list of collector URLs (https://…), found a mapping"
            ),
            ("[[https://r.example.net/]]", "test.yaml:6:18: policies.pins.report_uri[0]: expected an https URL, found a list"),
            (
                "[\"https://r.example.net/\", \"ftp://x/\"]",
                #"test.yaml:6:44: policies.pins.report_uri[1]: "ftp://x/" is not an http or https URL (such as https://reports.example.com/pin-failure)"#
            ),
            (
                "[\"https://r.example.net/a?k=1\", \"https://r.example.net/a?k=1\"]",
                "test.yaml:6:49: policies.pins.report_uri[1]: https://r.example.net/a is already a report_uri of this policy"
            ),
            (
                "\"https://${TOKEN}@r.example.net/\"",
                #"test.yaml:6:17: policies.pins.report_uri: "https://r.example.net/" uses ${…}, which only header values may"#
            ),
        ])
    func problems(_ value: String, _ expected: String) {
        #expect(configurationProblems(Self.policy(value)) == [expected])
    }

    @Test("Plain http loads with a warning at its position; credentials never appear in problems or warnings")
    func plainHTTPWarning() throws {
        let configuration = try loadConfiguration(Self.policy("\"http://user:hunter2@reports.example.net/pin?token=s3cret\""))
        #expect(configuration.policies[0].reportURIs.count == 1)
        #expect(
            configuration.warnings.map(\.description) == [
                """
                test.yaml:6:17: policies.pins.report_uri: reports to http://reports.example.net/pin cross the network unencrypted \
                and unauthenticated (the chains, the host names and any credentials in the URL); use https
                """
            ])
        #expect(configuration.warnings.map(\.code) == [.plainHTTPReportURI])
        let refused = configurationProblems(Self.policy("\"ftp://user:hunter2@reports.example.net/pin?token=s3cret\""))
        #expect(refused.count == 1)
        #expect(!refused.joined().contains("hunter2") && !refused.joined().contains("s3cret"), "\(refused)")
    }

    @Test("check-config shows each policy's collectors without their credentials, in text and JSON")
    func checkConfig() throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("pinpath.yaml")
        try Self.policy("[\"https://user:hunter2@reports.example.net/pin?token=s3cret\", \"https://b.example.net/r\"]")
            .write(toFile: file, atomically: true, encoding: .utf8)
        let text = try Shell.run([Shell.pinpath, "check-config", "--config", file])
        #expect(text.status == 0, "\(text.stderr)")
        #expect(
            text.stdout.contains(
                "  pins: public_key, 2 pins, hosts api.example.org, reports to https://reports.example.net/pin https://b.example.net/r"),
            "\(text.stdout)")
        let json = try Shell.run([Shell.pinpath, "check-config", "--json", "--config", file])
        #expect(json.stdout.contains(#""report_uri":["https://reports.example.net/pin","https://b.example.net/r"]"#), "\(json.stdout)")
        for output in [text.stdout, text.stderr, json.stdout, json.stderr] {
            #expect(!output.contains("hunter2") && !output.contains("s3cret"), "\(output)")
        }
    }

    @Test("check-config refuses a bad report_uri with exit 78 and the problem at its line and column, credentials left out")
    func checkConfigRefuses() throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("pinpath.yaml")
        try Self.policy("[\"https://reports.example.net/pin\", \"gopher://user:hunter2@reports.example.net/?token=s3cret\"]")
            .write(toFile: file, atomically: true, encoding: .utf8)
        let result = try Shell.run([Shell.pinpath, "check-config", "--config", file])
        #expect(result.status == 78)
        #expect(
            result.stderr == """
                pinpath: error: \(file):6:53: policies.pins.report_uri[1]: "gopher://reports.example.net/" is not an http or https \
                URL (such as https://reports.example.com/pin-failure)

                """, "\(result.stderr)")
    }
}
