import Foundation
import PinpathTestSupport
import Testing

/// A hostile server's certificate names carry terminal escape sequences; `pinpath audit` must show them as
/// visible escapes, never let them act on the terminal (issue 11, rule 10).
@Suite("Certificate text cannot forge terminal output")
struct TerminalForgeryTests {
    /// Erase the line, then paint the verdict a victim hopes for in green; then a bidi override.
    static let forgedSAN = "a\u{1B}[2K\u{1B}[32mtrusted (exit 0)\u{1B}[0m.test"

    @Test("audit escapes control characters in SANs and errors as text, and keeps them exact in JSON")
    func auditEscapesCertificateText() throws {
        let evil = try EvilServer()
        defer { evil.stop() }
        let text = try Shell.run([Shell.pinpath, "audit", "127.0.0.1:\(evil.server.port)"])
        #expect(text.status == 2, "a self-signed certificate is not trusted: \(text.stdout)")
        for output in [text.stdout, text.stderr] {
            #expect(!output.unicodeScalars.contains("\u{1B}"), "a raw ESC reached the terminal")
            #expect(!output.unicodeScalars.contains("\u{202E}"), "a raw bidi override reached the terminal")
        }
        #expect(text.stdout.contains(#"a\x1b[2K\x1b[32mtrusted (exit 0)\x1b[0m.test"#), "\(text.stdout)")
        #expect(text.stdout.contains(#"b\u{202e}evil.test"#), "\(text.stdout)")

        let json = try Shell.run([Shell.pinpath, "audit", "127.0.0.1:\(evil.server.port)", "--json"])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        let served = try #require(object["served_chain"] as? [[String: Any]])
        let sans = try #require(served.first?["sans"] as? [String])
        #expect(sans.contains { $0.hasSuffix(Self.forgedSAN) }, "JSON keeps the exact name: \(sans)")
    }

    @Test("a pin failure naming the hostile certificate is escaped on stderr: one line, its line breaks kept with -v")
    func pinFailureEscapesServerText() throws {
        // Its DNS SANs would fail rfc5280.san_dns_syntax before any pin is checked: the subject alone is hostile.
        let evil = try EvilServer(sans: "IP:127.0.0.1")
        defer { evil.stop() }
        // The hostile certificate is the trust anchor here, so the chain and the IP pass and the pin check runs:
        // its message lists the chain's subjects, which the server chose.
        let result = try Shell.run([
            Shell.pinpath, "request", "https://127.0.0.1:\(evil.server.port)/", "--ca-file", evil.certificate,
            "--pin", "sha256/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=",
        ])
        #expect(result.status == 1, "\(result.stderr)")
        #expect(!result.stderr.unicodeScalars.contains("\u{1B}"), "\(result.stderr)")
        #expect(result.stderr.hasPrefix("pinpath: error: "), "\(result.stderr)")
        // RFC 2253 form (OpenSSL's) writes the subject's ESC as \1B.
        #expect(result.stderr.contains(#"CN=evil\1B[2Jsubject"#), "the subject's ESC is shown, escaped: \(result.stderr)")
        #expect(result.stderr.split(separator: "\n").count == 1, "one line per error: \(result.stderr)")
        let verbose = try Shell.run([
            Shell.pinpath, "request", "-v", "https://127.0.0.1:\(evil.server.port)/", "--ca-file", evil.certificate,
            "--pin", "sha256/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=",
        ])
        #expect(verbose.status == 1, "\(verbose.stderr)")
        #expect(!verbose.stderr.unicodeScalars.contains("\u{1B}"), "\(verbose.stderr)")
        #expect(verbose.stderr.contains(#"CN=evil\1B[2Jsubject"#), "\(verbose.stderr)")
        #expect(verbose.stderr.split(separator: "\n").count > 2, "-v keeps the pin failure's lines: \(verbose.stderr)")
    }

    /// `openssl s_server` with a self-signed certificate for 127.0.0.1 whose subject and SANs hold raw escape
    /// sequences and a bidi override, put there with bash's $'…' as a hostile self-signer would.
    final class EvilServer {
        let directory = "\(NSTemporaryDirectory())pinpath-forgery-\(UUID().uuidString)"
        var certificate: String { "\(directory)/evil.pem" }
        let server: TLSServer

        init(sans: String = #"DNS:a\x1b[2K\x1b[32mtrusted (exit 0)\x1b[0m.test,DNS:b\xe2\x80\xaeevil.test,IP:127.0.0.1"#) throws {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            _ = try Shell.check([
                "/bin/bash", "-c",
                #"cd "$1" && openssl req -x509 -newkey rsa:2048 -nodes -keyout evil.key -out evil.pem -days 30 "#
                    + #"-subj $'/CN=evil\x1b[2Jsubject' "#
                    + #"-addext $'subjectAltName=\#(sans)' 2>/dev/null"#,
                "make-evil", directory,
            ])
            server = try TLSServer(certificate: "\(directory)/evil.pem", key: "\(directory)/evil.key", chain: [], in: directory)
        }

        func stop() {
            server.stop()
            try? FileManager.default.removeItem(atPath: directory)
        }
    }
}
