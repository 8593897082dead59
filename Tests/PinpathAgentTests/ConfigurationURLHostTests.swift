import Foundation
import PinpathTestSupport
import Testing

@testable import PinpathAgent

/// Endpoint URLs read as they did while the agent linked all of Foundation (Yams brought it in): without it,
/// FoundationEssentials percent-encodes a space or `|` even in the host, and such a URL loaded.
///
/// This test bundle links all of Foundation, whose URL parser refuses such hosts by itself, so the in-process
/// tests cannot fail without the check; the `pinpath` binary, which links FoundationEssentials only, can.
@Suite("Configuration: endpoint URL hosts")
struct ConfigurationURLHostTests {
    static func endpoint(_ url: String) -> String {
        "endpoints:\n  - name: api\n    url: \"\(url)\"\n"
    }

    /// What the configuration says of a URL it cannot probe.
    static let refusal =
        "is not a URL pinpath probes; use one of http://, https://, tls://, tcp://, smtp://, smtps://, imap://, imaps://, "
        + "pop3://, pop3s://, ftp://, ldaps:// (such as https://api.example.com/health or tls://db.example.com:5432)"

    @Test(
        "A host with characters a host cannot have is not a URL",
        arguments: [
            "https://a.example.com&a health", "https://d.example.co| m/é", "http://c.example.co   .ex/", "https://a^b.test/",
            "https://a%zzb/",
        ])
    func refused(url: String) {
        #expect(
            configurationProblems(Self.endpoint(url)) == ["test.yaml:3:10: endpoints[0].url: \"\(url)\" \(Self.refusal)"])
    }

    @Test(
        "Characters invalid only outside the host are still encoded, and hosts RFC 3986 allows still load",
        arguments: [
            ("https://api.example.com/a b", "https://api.example.com/a%20b"),
            ("https://api.example.com/é?q=a|b", "https://api.example.com/%C3%A9?q=a%7Cb"),
            ("https://a_b.test/", "https://a_b.test/"), ("https://a%41b.test/", "https://a%41b.test/"),
            ("https://[::1]:8443/x", "https://[::1]:8443/x"),
        ])
    func accepted(url: String, absolute: String) throws {
        let configuration = try loadConfiguration(Self.endpoint(url))
        #expect(configuration.endpoints.map(\.url.absoluteString) == [absolute])
    }

    @Test("pinpath check-config, which links no Foundation, refuses them too")
    func refusedByTheBinary() throws {
        let url = "https://api.example.com health/"
        let directory = try TemporaryDirectory()
        let file = directory.file("pinpath.yaml")
        try Self.endpoint(url).write(toFile: file, atomically: true, encoding: .utf8)
        let result = try Shell.run([Shell.pinpath, "check-config", "--config", file])
        #expect(result.status == 78)
        #expect(
            result.stderr
                == "pinpath: error: \(file):3:10: endpoints[0].url: \"\(url)\" \(Self.refusal)\n"
        )
    }
}
