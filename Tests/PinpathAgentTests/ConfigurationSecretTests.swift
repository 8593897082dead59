import Foundation
import Testing

@testable import PinpathAgent

@Suite("Configuration secrets")
struct ConfigurationSecretTests {
    static let secret = "s3cr3t-token-value"
    static let cookie = "session=literal-cookie"

    static let yaml = """
        endpoints:
          - name: api
            url: https://api.example.com/health
            headers:
              Authorization: "Bearer ${API_TOKEN}"
              Cookie: "\(cookie)"
              X-Trace: "on-${REGION}"
              Accept: application/json
        """

    @Test("${NAME} is read at load time; the request gets the real values")
    func expanded() throws {
        let configuration = try loadConfiguration(Self.yaml, environment: ["API_TOKEN": Self.secret, "REGION": "eu"])
        let endpoint = configuration.endpoints[0]
        #expect(endpoint.requestHeaders["Authorization"] == "Bearer \(Self.secret)")
        #expect(endpoint.requestHeaders["X-Trace"] == "on-eu")
        #expect(endpoint.headers.map(\.value.isSecret) == [true, true, true, false])
        #expect(endpoint.headers.map(\.value.variables) == [["API_TOKEN"], [], ["REGION"], []])
        #expect(endpoint.headers.map(\.value.description) == ["[redacted]", "[redacted]", "[redacted]", "application/json"])
    }

    @Test("No rendering of the model shows a secret: description, debug description, dump, JSON")
    func redacted() throws {
        let configuration = try loadConfiguration(Self.yaml, environment: ["API_TOKEN": Self.secret, "REGION": "eu"])
        var dumped = ""
        dump(configuration, to: &dumped)
        let header = configuration.endpoints[0].headers[0].value
        let json = String(decoding: try JSONEncoder().encode([header]), as: UTF8.self)
        let renderings = [
            String(describing: configuration), String(reflecting: configuration), dumped, json,
            "\(configuration.endpoints[0].headers)", String(reflecting: header),
        ]
        for rendering in renderings {
            #expect(!rendering.contains(Self.secret))
            #expect(!rendering.contains(Self.cookie))
        }
        #expect(json == #"["[redacted]"]"#)
        #expect(dumped.contains("[redacted]"))
    }

    @Test("A problem in a secret value never quotes it")
    func problemsDoNotQuote() {
        let problems = configurationProblems(Self.yaml, environment: ["API_TOKEN": "line\r\nInjected: \(Self.secret)", "REGION": "eu"])
        #expect(
            problems == [
                """
                test.yaml:5:22: endpoints[0].headers.Authorization: the value contains CR, LF or NUL after ${API_TOKEN} was read; \
                a header value is one line
                """
            ])
    }

    @Test("An unset variable is named; the values of set ones appear nowhere")
    func unset() {
        let problems = configurationProblems(Self.yaml, environment: ["API_TOKEN": Self.secret])
        #expect(
            problems == [
                """
                test.yaml:7:16: endpoints[0].headers.X-Trace: the environment variable REGION is not set (give it to pinpath, for \
                example with systemd's Environment= or EnvironmentFile=)
                """
            ])
    }
}
