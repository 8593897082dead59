import Foundation
import PinpathTestSupport
import Testing

/// The contract scripts rely on, checked on the binary for every subcommand: with `--json`, exactly one JSON
/// object on stdout, success or failure (a usage error ArgumentParser finds included), with `error.category` and
/// `error.message`; at most one line on stderr per error unless `--verbose`.
@Suite("Script contract: --json and stderr for every subcommand")
struct ScriptContractTests {
    static let missing = "/nonexistent/pinpath-script-contract"

    /// Each subcommand on an input that fails (after parsing), with the exit code it documents and the failure
    /// category (the README's table) it names.
    static let failingInputs: [(arguments: [String], status: Int32, category: String)] = [
        (["check-config", "--config", "\(missing).yaml"], 78, "config"),
        (["status", "--netns", "pinpath-no-such-namespace"], 69, "unavailable"),
        (["watch", "--netns", "pinpath-no-such-namespace"], 69, "unavailable"),
        (["request", "http://127.0.0.1:\(closedPort)/"], 3, "connect_failed"),
        (["audit", "127.0.0.1:\(closedPort)", "--timeout", "2s"], 3, "connect_failed"),
        (["verify", "\(missing).pem"], 65, "data"),
        (["pins", "\(missing).pem"], 65, "data"),
    ]

    /// Each subcommand with a value its flag refuses, or an option it does not have (`run` has no `--json`:
    /// the contract still holds for the usage error).
    static let badFlagValues: [[String]] = [
        ["check-config", "--config"],
        ["status", "--target", "a,b"],
        ["watch", "--target", "a,b"],
        ["request", "http://127.0.0.1:1/", "--timeout", "soon"],
        ["audit", "127.0.0.1:1", "--timeout", "5 minutes"],
        ["verify", "chain.pem", "--mode", "public-pin"],
        ["pins", "key.pem", "--format", "der"],
        ["modules", "--from-blackbox"],
        ["run", "--once", "--no-such-flag"],
    ]

    /// A port nothing listens on: bound, then closed, by the kernel's choice.
    static let closedPort: UInt16 = (try? TLSServer.freePort()) ?? 9

    /// The one JSON object stdout must hold, and its `error` member.
    static func errorObject(_ result: Shell.Result, _ arguments: [String]) throws -> [String: Any] {
        let lines = result.stdout.split(separator: "\n", omittingEmptySubsequences: false).filter { !$0.isEmpty }
        #expect(lines.count == 1, "\(arguments): stdout must be one line: \(result.stdout)")
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any], "\(arguments): \(result.stdout)")
        return try #require(object["error"] as? [String: Any], "\(arguments): no error object in \(result.stdout)")
    }

    static func stderrLines(_ result: Shell.Result) -> Int {
        result.stderr.split(separator: "\n").count
    }

    @Test("A failing input: one JSON object on stdout with error.category and error.message, stderr at most one line")
    func failingInputs() throws {
        for (arguments, status, category) in Self.failingInputs {
            let result = try Shell.run([Shell.pinpath] + arguments + ["--json"])
            #expect(result.status == status, "\(arguments): \(result.stderr)")
            let error = try Self.errorObject(result, arguments)
            #expect(error["category"] as? String == category, "\(arguments): \(error)")
            #expect((error["message"] as? String)?.isEmpty == false, "\(arguments): \(error)")
            #expect(Self.stderrLines(result) <= 1, "\(arguments): \(result.stderr)")
        }
    }

    @Test("A bad flag value or unknown option: one JSON object, category usage, exit 64, one line on stderr")
    func badFlagValues() throws {
        for arguments in Self.badFlagValues {
            let result = try Shell.run([Shell.pinpath] + arguments + ["--json"])
            #expect(result.status == 64, "\(arguments): \(result.stderr)")
            let error = try Self.errorObject(result, arguments)
            #expect(error["category"] as? String == "usage", "\(arguments): \(error)")
            #expect((error["message"] as? String)?.isEmpty == false, "\(arguments): \(error)")
            #expect(error["exit_code"] as? Int == 64, "\(arguments): \(error)")
            #expect(Self.stderrLines(result) == 1, "\(arguments): \(result.stderr)")
        }
    }

    @Test("audit and verify keep their result and name the category; a trusted chain has error null")
    func auditCategory() throws {
        let pki = TestPKI.shared
        let refused = try Shell.run([Shell.pinpath, "audit", "127.0.0.1:\(Self.closedPort)", "--json"])
        let refusedObject = try #require(try JSONSerialization.jsonObject(with: Data(refused.stdout.utf8)) as? [String: Any])
        #expect(refusedObject["result"] as? String == "no_handshake")
        #expect((refusedObject["error"] as? [String: Any])?["category"] as? String == "connect_failed", "\(refused.stdout)")

        let chain = pki.file("script-contract-chain.pem")
        try [pki.path("ip"), pki.path("inter")].map { try String(contentsOfFile: $0, encoding: .utf8) }.joined()
            .write(toFile: chain, atomically: true, encoding: .utf8)
        let wrongPin = "sha256/\(try pki.opensslPin("valid"))"
        let cases: [([String], String, Any?)] = [
            (["--ca-file", pki.path("store")], "trusted", nil),
            (["--ca-file", pki.path("store"), "--pin", wrongPin], "pin_mismatch", "policy_rejected"),
            (["--ca-file", pki.path("valid")], "chain_invalid", "tls_invalid"),
        ]
        for (options, result, category) in cases {
            let verified = try Shell.run([Shell.pinpath, "verify", chain, "--host", "127.0.0.1", "--json"] + options)
            let object = try #require(try JSONSerialization.jsonObject(with: Data(verified.stdout.utf8)) as? [String: Any])
            #expect(object["result"] as? String == result, "\(options): \(verified.stdout)")
            if let category = category as? String {
                let error = try #require(object["error"] as? [String: Any], "\(options): \(verified.stdout)")
                #expect(error["category"] as? String == category && (error["message"] as? String)?.isEmpty == false, "\(error)")
            } else {
                #expect(object["error"] is NSNull, "\(verified.stdout)")
            }
        }
    }

    @Test("audit HOST…: each host reported, a bad one named after the others, the exit the worst")
    func auditSeveralHosts() throws {
        let good = "127.0.0.1:\(Self.closedPort)"
        let text = try Shell.run([Shell.pinpath, "audit", good, "not a host!", "--timeout", "2s"])
        #expect(text.status == 64, "\(text.stderr)")
        #expect(text.stdout.hasPrefix("\(good)\n") && text.stdout.contains("no_handshake (exit 3)"), "\(text.stdout)")
        #expect(Self.stderrLines(text) == 1 && text.stderr.contains("not a host!"), "\(text.stderr)")

        let json = try Shell.run([Shell.pinpath, "audit", good, "not a host!", "--json"])
        #expect(json.status == 64)
        #expect(json.stdout.split(separator: "\n").count == 1, "one object: \(json.stdout)")
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        #expect(summary["exit_code"] as? Int == 64 && (summary["error"] as? [String: Any])?["category"] as? String == "usage")
        let objects = try #require(summary["audits"] as? [[String: Any]], "\(json.stdout)")
        #expect(objects.count == 2, "\(json.stdout)")
        #expect(objects.first?["result"] as? String == "no_handshake")
        #expect(objects.last?["host"] as? String == "not a host!")
        #expect((objects.last?["error"] as? [String: Any])?["category"] as? String == "usage", "\(json.stdout)")
        #expect(Self.stderrLines(json) == 1, "\(json.stderr)")
    }

    @Test("A pin mismatch in request is one line on stderr; -v keeps the details; --json holds them in error.message")
    func pinMismatchOneLine() throws {
        let pki = TestPKI.shared
        let server = try TLSServer(
            certificate: pki.path("ip"), key: pki.path("ip", "key"), chain: [pki.path("inter")], in: pki.directory)
        defer { server.stop() }
        let wrongPin = "sha256/\(try pki.opensslPin("valid"))"
        let base = [Shell.pinpath, "request", "https://127.0.0.1:\(server.port)/", "--ca-file", pki.path("store"), "--pin", wrongPin]

        let plain = try Shell.run(base)
        #expect(plain.status == 1, "\(plain.stderr)")
        #expect(Self.stderrLines(plain) == 1, "\(plain.stderr)")
        #expect(plain.stderr.hasPrefix("pinpath: error: policy_rejected: "), "\(plain.stderr)")

        let verbose = try Shell.run(base + ["-v"])
        #expect(verbose.status == 1)
        #expect(Self.stderrLines(verbose) > 2, "the details stay available with -v: \(verbose.stderr)")

        let json = try Shell.run(base + ["--json"])
        #expect(json.status == 1)
        let error = try Self.errorObject(json, base)
        #expect(error["category"] as? String == "policy_rejected", "\(error)")
        #expect((error["message"] as? String)?.contains(wrongPin.dropFirst(7)) == true, "the expected pin is in the message: \(error)")
        #expect(Self.stderrLines(json) == 1, "\(json.stderr)")
    }

    @Test("Durations in flags as in the configuration (5s, 1500ms, 1m30s), a bare number still seconds")
    func durationFlags() throws {
        for value in ["5s", "1500ms", "1m30s", "2", "2.5"] {
            let audit = try Shell.run([Shell.pinpath, "audit", "127.0.0.1:\(Self.closedPort)", "--timeout", value])
            #expect(audit.status == 3, "--timeout \(value) is accepted and the host refused: \(audit.stderr)")
            let request = try Shell.run([Shell.pinpath, "request", "http://127.0.0.1:\(Self.closedPort)/", "--timeout", value])
            #expect(request.status == 3, "--timeout \(value): \(request.stderr)")
        }
        let waited = try Shell.run(
            [Shell.pinpath, "request", "http://127.0.0.1:\(Self.closedPort)/", "--wait-for-connectivity", "500ms"])
        #expect(waited.status == 3, "\(waited.stderr)")
        for value in ["5 minutes", "5x", "-5s", "0s"] {
            let audit = try Shell.run([Shell.pinpath, "audit", "127.0.0.1:1", "--timeout", value])
            #expect(audit.status == 64, "--timeout \(value) is refused: \(audit.stderr)")
            #expect(audit.stderr.contains("--timeout"), "the refusal names the flag: \(audit.stderr)")
        }
    }

    @Test("Flag values as the configuration spells them (public_key, require_stapled), the hyphenated ones still accepted")
    func configurationSpellings() throws {
        let pki = TestPKI.shared
        let pin = "sha256/\(try pki.opensslPin("ip"))"
        for mode in ["public_key", "public-key"] {
            let result = try Shell.run([
                Shell.pinpath, "verify", pki.path("ip"), "--ca-file", pki.path("store"), "--mode", mode, "--pin", pin,
            ])
            #expect(result.status != 64, "--mode \(mode): \(result.stderr)")
        }
        for revocation in ["require_stapled", "require-stapled"] {
            let result = try Shell.run([Shell.pinpath, "audit", "127.0.0.1:\(Self.closedPort)", "--revocation", revocation])
            #expect(result.status != 64, "--revocation \(revocation): \(result.stderr)")
        }
        let help = try Shell.run([Shell.pinpath, "audit", "--help"])
        #expect(help.stdout.contains("public_key"), "the help spells the value as the configuration does")
    }

    @Test("A mistyped subcommand gets \"did you mean\"; a word far from any gets none")
    func didYouMean() throws {
        for (typed, meant) in [("reqest", "request"), ("chek-config", "check-config"), ("audti", "audit"), ("pin", "pins")] {
            let result = try Shell.run([Shell.pinpath, typed, "x"])
            #expect(result.status == 64)
            #expect(result.stderr == "pinpath: error: unknown command \"\(typed)\"; did you mean \"\(meant)\"? (see 'pinpath --help')\n")
        }
        let far = try Shell.run([Shell.pinpath, "xyzzyplugh"])
        #expect(far.status == 64)
        #expect(far.stderr == "pinpath: error: unknown command \"xyzzyplugh\" (see 'pinpath --help')\n", "\(far.stderr)")
    }
}
