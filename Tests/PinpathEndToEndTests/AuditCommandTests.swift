import Foundation
import PinpathTestSupport
import Testing

/// `pinpath audit`, run as a user would, against `openssl s_server` on loopback serving the test PKI. Every run
/// trusts only the PKI's store (`--ca-file`), so nothing depends on the system store.
@Suite("pinpath audit")
struct AuditCommandTests {
    static let pinpath = Shell.pinpath

    /// One served chain and what audit must conclude.
    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        var served: [String]
        var serverName = "valid.test"
        var exit: Int32
        var result: String
        /// OpenSSL's X509_V_ERR for the chain alone, or for the host alone when the host is what fails.
        var verifyError: Int?
        /// The profile rule that rejects the chain (OpenSSL alone would accept it).
        var rule: String?
        /// Debian's s_server refuses to load RSA-1024 keys and SHA-1 signatures at its default level.
        var weak = false
        /// The profile forced with `--profile`, or `nil` for the default (`auto`: `rfc5280`, the anchor comes
        /// from `--ca-file`).
        var profile: String?
        /// Whether the path OpenSSL builds reaches the store (auto gives `webpki` to a path with no anchor).
        var anchored = true
        var testDescription: String { name }
        var profileOptions: [String] { profile.map { ["--profile", $0] } ?? [] }
        /// What `--json` says of the profile applied, and why.
        var expectedProfile: (name: String, reason: String) {
            profile.map { ($0, "profile: \($0)") } ?? (anchored ? ("rfc5280", "anchor from ca_file") : ("webpki", "no anchor"))
        }
    }

    static let cases: [Case] = [
        Case(name: "valid", served: ["valid", "inter"], exit: 0, result: "trusted"),
        Case(name: "expired", served: ["expired", "inter"], exit: 2, result: "chain_invalid", verifyError: 10),
        Case(name: "not yet valid", served: ["notyet", "inter"], exit: 2, result: "chain_invalid", verifyError: 9),
        Case(name: "wrong host", served: ["wronghost", "inter"], exit: 2, result: "host_mismatch", verifyError: 62),
        Case(name: "self-signed", served: ["selfsigned"], exit: 2, result: "chain_invalid", verifyError: 18, anchored: false),
        Case(
            name: "untrusted root", served: ["untrusted", "rogueroot"], exit: 2, result: "chain_invalid", verifyError: 19,
            anchored: false),
        Case(name: "incomplete chain", served: ["valid"], exit: 2, result: "chain_invalid", verifyError: 20, anchored: false),
        Case(
            name: "SHA-1-signed intermediate", served: ["sha1leaf", "sha1inter"], exit: 2, result: "chain_invalid", verifyError: 68,
            weak: true),
        // OpenSSL refuses the leaf's key before it builds a path.
        Case(
            name: "RSA-1024 leaf", served: ["rsa1024", "inter"], exit: 2, result: "chain_invalid", verifyError: 66, weak: true,
            anchored: false),
        // The webpki profile never takes the subject CN for the host name; rfc5280, which auto applies to the
        // anchor of --ca-file, does.
        Case(
            name: "CN-only", served: ["cnonly", "inter"], serverName: "cnonly.test", exit: 2, result: "chain_invalid",
            rule: "webpki.san_required", profile: "webpki"),
        Case(name: "CN-only, auto", served: ["cnonly", "inter"], serverName: "cnonly.test", exit: 0, result: "trusted"),
        Case(name: "IP SAN", served: ["ip", "inter"], serverName: "127.0.0.1", exit: 0, result: "trusted"),
        Case(name: "wildcard", served: ["wildcard", "inter"], serverName: "a.wild.test", exit: 0, result: "trusted"),
    ]

    @Test("Verdicts and exit codes for the test PKI's leaves; details are shown even when verification fails", arguments: cases)
    func verdicts(_ row: Case) throws {
        let pki = TestPKI.shared
        let server = try Self.serve(row.served, weak: row.weak)
        defer { server.stop() }
        let result = try Self.audit(
            [
                "\(row.serverName):\(server.port)", "--connect", "127.0.0.1:\(server.port)", "--ca-file", pki.path("store"), "--json",
            ] + row.profileOptions)
        #expect(result.status == row.exit, "\(result.stdout)\(result.stderr)")
        try Self.expectVerdicts(try Self.object(result.stdout), row)
    }

    /// What `audit --json` and `verify --json` must both say of a row's chain.
    static func expectVerdicts(_ object: [String: Any], _ row: Case) throws {
        let pki = TestPKI.shared
        #expect(object["result"] as? String == row.result)
        #expect(object["exit_code"] as? Int == Int(row.exit))
        let served = try #require(object["served_chain"] as? [[String: Any]])
        #expect(served.compactMap { $0["subject"] as? String } == (try pki.chain(row.served)).map(\.subject))
        #expect(served.first?["pin"] as? String == "sha256/\(try pki.opensslPin(row.served[0]))")
        let chain = try #require(object["chain"] as? [String: Any])
        let host = try #require(object["host_check"] as? [String: Any])
        if let rule = row.rule {
            #expect(chain["valid"] as? Bool == false)
            #expect((chain["message"] as? String)?.contains("rule \(rule) at depth 0") == true, "\(chain)")
            let failure = try #require(object["failure"] as? [String: Any])
            #expect((failure["message"] as? String)?.contains("rule \(rule)") == true)
        } else if row.result == "host_mismatch" {
            #expect(chain["valid"] as? Bool == true)
            #expect(host["verify_error"] as? Int == row.verifyError)
        } else {
            #expect(chain["valid"] as? Bool == (row.verifyError == nil))
            #expect(chain["verify_error"] as? Int == row.verifyError)
            #expect(host["valid"] as? Bool == true)
        }
    }

    @Test("Text: protocol and cipher, one block per certificate, the verified chain with the store's root, verdicts")
    func text() throws {
        let pki = TestPKI.shared
        let server = try Self.serve(["valid", "inter"])
        defer { server.stop() }
        let result = try Self.audit(["valid.test:\(server.port)", "--connect", "127.0.0.1:\(server.port)", "--ca-file", pki.path("store")])
        #expect(result.status == 0, "\(result.stderr)")
        let fingerprint = try Shell.check(["openssl", "x509", "-in", pki.path("valid"), "-noout", "-fingerprint", "-sha256"])
            .replacingOccurrences(of: "sha256 Fingerprint=", with: "").trimmingCharacters(in: .whitespacesAndNewlines)
        for expected in [
            "valid.test:\(server.port) via 127.0.0.1:\(server.port)\n", "  tls        TLSv1.", "    depth 0\n",
            "      subject    CN=valid.test\n", "      issuer     CN=Pinpath Test Intermediate\n",
            "      SANs       DNS:valid.test, DNS:www.valid.test\n",
            "      validity   2020-01-01T00:00:00Z to 2045-01-01T00:00:00Z (", " days left)\n",
            "      key        RSA 2048\n", "      signature  sha256WithRSAEncryption\n",
            "      pin        sha256/\(try pki.opensslPin("valid"))\n", "      SHA-256    \(fingerprint)\n", "    depth 1\n",
            "    2 sha256/\(try pki.opensslPin("root")) CN=Pinpath Test Root (from the trust store)\n",
            "  chain      valid\n", "  host       valid for valid.test\n", "  result     trusted (exit 0)\n",
        ] {
            #expect(result.stdout.contains(expected), "missing \(expected.debugDescription) in\n\(result.stdout)")
        }
    }

    @Test("Pins: which pin matched at which depth; a mismatch is exit 1 with OkHttp's message; certificate mode")
    func pins() throws {
        let pki = TestPKI.shared
        let server = try Self.serve(["valid", "inter"])
        defer { server.stop() }
        let base = ["valid.test:\(server.port)", "--connect", "127.0.0.1:\(server.port)", "--ca-file", pki.path("store")]

        let matched = try Self.audit(base + ["--pin", "sha256/\(try pki.opensslPin("root"))"])
        #expect(matched.status == 0, "\(matched.stdout)\(matched.stderr)")
        #expect(matched.stdout.contains("  pins       sha256/\(try pki.opensslPin("root")) matched at depth 2 (CN=Pinpath Test Root)\n"))

        let mismatch = try Self.audit(base + ["--pin-file", pki.path("otherroot")])
        #expect(mismatch.status == 1, "\(mismatch.stdout)\(mismatch.stderr)")
        for expected in [
            "certificate pinning failure!", "sha256/\(try pki.opensslPin("valid")): CN=valid.test",
            "sha256/\(try pki.opensslPin("inter")): CN=Pinpath Test Intermediate", "Pinned certificates for valid.test:",
            "      sha256/\(try pki.opensslPin("otherroot"))\n", "  result     pin_mismatch (exit 1)",
        ] {
            #expect(mismatch.stdout.contains(expected), "missing \(expected.debugDescription) in\n\(mismatch.stdout)")
        }

        let certificate = try Self.audit(base + ["--mode", "certificate", "--pin-file", pki.path("inter"), "--json"])
        #expect(certificate.status == 0, "\(certificate.stdout)\(certificate.stderr)")
        let pins = try #require(try Self.object(certificate.stdout)["pins"] as? [String: Any])
        #expect(pins["mode"] as? String == "certificate")
        #expect((pins["matched"] as? [[String: Any]])?.compactMap { $0["depth"] as? Int } == [1])
    }

    @Test("Certificate mode: a pinned self-signed leaf is the anchor, so the chain is valid to it and the audit passes")
    func pinnedSelfSigned() throws {
        let pki = TestPKI.shared
        let server = try Self.serve(["selfsigned"])
        defer { server.stop() }
        let base = ["valid.test:\(server.port)", "--connect", "127.0.0.1:\(server.port)", "--ca-file", pki.path("store")]
        let unpinned = try Self.audit(base)
        #expect(unpinned.status == 2)
        let pinned = try Self.audit(base + ["--mode", "certificate", "--pin-file", pki.path("selfsigned")])
        #expect(pinned.status == 0, "\(pinned.stdout)\(pinned.stderr)")
        #expect(pinned.stdout.contains("  chain      valid (to a pinned certificate)\n"), "\(pinned.stdout)")
        #expect(pinned.stdout.contains("matched at depth 0 (CN=valid.test)"))
    }

    @Test("Nothing listening: exit 3, and no pin anywhere (not even the hash of empty input)")
    func nothingListening() throws {
        let port = try TLSServer.freePort()
        for extra in [[], ["--json"]] {
            let result = try Self.audit(
                ["valid.test:\(port)", "--connect", "127.0.0.1:\(port)", "--ca-file", TestPKI.shared.path("store")] + extra)
            #expect(result.status == 3)
            #expect(result.stdout.contains("connection refused"), "\(result.stdout)")
            #expect(!(result.stdout + result.stderr).contains("sha256/"))
            #expect(!(result.stdout + result.stderr).contains("47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="))
        }
    }

    @Test("A plain-TCP listener is not a TLS handshake: exit 3, whether it answers in HTTP or stays silent")
    func notTLS() throws {
        let store = TestPKI.shared.path("store")
        let http = try PlainListener(reply: "HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n")
        defer { http.stop() }
        let answered = try Self.audit(["127.0.0.1:\(http.port)", "--ca-file", store])
        #expect(answered.status == 3, "\(answered.stdout)\(answered.stderr)")
        #expect(answered.stdout.contains("TLS handshake failed"), "\(answered.stdout)")
        #expect(!answered.stdout.contains("sha256/"))

        let silent = try PlainListener(reply: nil)
        defer { silent.stop() }
        let waited = try Self.audit(["127.0.0.1:\(silent.port)", "--ca-file", store, "--timeout", "0.3"])
        #expect(waited.status == 3, "\(waited.stdout)\(waited.stderr)")
        #expect(waited.stdout.contains("no TLS handshake within the timeout"), "\(waited.stdout)")
    }

    @Test(
        "--json: one object; for several hosts every audit in the order given, with every field, the worst exit code and its error"
    )
    func jsonAndWorst() throws {
        let pki = TestPKI.shared
        let valid = try Self.serve(["valid", "inter"])
        defer { valid.stop() }
        let expired = try Self.serve(["expired", "inter"])
        defer { expired.stop() }
        let closed = try TLSServer.freePort()
        let hosts = ["127.0.0.1:\(valid.port)", "127.0.0.1:\(expired.port)", "127.0.0.1:\(valid.port)"]
        let arguments = ["--servername", "valid.test", "--ca-file", pki.path("store"), "--json"]

        let two = try Self.audit(hosts + arguments)
        #expect(two.status == 2, "\(two.stdout)\(two.stderr)")
        #expect(two.stdout.split(separator: "\n").count == 1, "one object, one line: \(two.stdout)")
        let summary = try Self.object(two.stdout)
        #expect(summary["exit_code"] as? Int == 2)
        #expect((summary["error"] as? [String: Any])?["category"] as? String == "tls_expired", "\(summary)")
        let objects = try #require(summary["audits"] as? [[String: Any]], "\(summary)")
        #expect(objects.compactMap { $0["port"] as? Int } == [Int(valid.port), Int(expired.port), Int(valid.port)])
        #expect(objects.compactMap { $0["result"] as? String } == ["trusted", "chain_invalid", "trusted"])
        let single = try Self.audit([hosts[0]] + arguments)
        let prefix = "{\"host\":\"127.0.0.1\",\"port\":\(valid.port),\"server_name\":\"valid.test\","
        #expect(single.stdout.hasPrefix(prefix), "\(single.stdout)")
        #expect(try Self.object(single.stdout)["result"] as? String == "trusted")
        for key in [
            "host", "port", "server_name", "address", "result", "exit_code", "error", "verified_at", "tls_version", "cipher",
            "served_chain", "verified_chain", "chain", "host_check", "pins", "failure",
        ] {
            #expect(objects[0][key] != nil, "missing \(key)")
        }
        let certificate = try #require((objects[0]["served_chain"] as? [[String: Any]])?.first)
        #expect(
            Set(certificate.keys) == [
                "depth", "subject", "issuer", "sans", "not_before", "not_after", "days_left", "key", "signature_algorithm", "pin",
                "sha256_fingerprint",
            ])
        #expect(certificate["sans"] as? [String] == ["DNS:valid.test", "DNS:www.valid.test"])
        #expect(certificate["not_after"] as? String == "2045-01-01T00:00:00Z")

        // A failed connection, which anyone on the path can cause, never hides a chain or pin failure.
        let three = try Self.audit(hosts + ["127.0.0.1:\(closed)"] + arguments)
        #expect(three.status == 2)
        let threeSummary = try Self.object(three.stdout)
        #expect((threeSummary["audits"] as? [Any])?.count == 4 && threeSummary["exit_code"] as? Int == 2, "\(three.stdout)")
        #expect((threeSummary["error"] as? [String: Any])?["category"] as? String == "tls_expired", "\(threeSummary)")
        let pinnedAndClosed = try Self.audit(
            ["127.0.0.1:\(valid.port)", "127.0.0.1:\(closed)", "--pin-file", pki.path("p256")] + arguments)
        #expect(pinnedAndClosed.status == 1, "ATTACK: a reset elsewhere hid the pin failure: \(pinnedAndClosed.stdout)")
        let pinnedSummary = try Self.object(pinnedAndClosed.stdout)
        #expect((pinnedSummary["error"] as? [String: Any])?["category"] as? String == "policy_rejected", "\(pinnedSummary)")
        let onlyClosed = try Self.audit([hosts[0], "127.0.0.1:\(closed)"] + arguments)
        #expect(onlyClosed.status == 3, "\(onlyClosed.stdout)")

        let pinned = try Self.audit(["127.0.0.1:\(valid.port)", "--pin-file", pki.path("p256")] + arguments)
        #expect(pinned.status == 1)
    }

    @Test("--file: HOST[:PORT] lines, comments and blank lines ignored; with --at an expired chain audits as valid then")
    func hostFileAndTime() throws {
        let pki = TestPKI.shared
        let server = try Self.serve(["expired", "inter"])
        defer { server.stop() }
        let list = pki.file("audit-hosts-\(server.port).txt")
        try "# hosts\n\n  127.0.0.1:\(server.port)  # the expired one\n".write(toFile: list, atomically: true, encoding: .utf8)
        let arguments = ["--file", list, "--servername", "valid.test", "--ca-file", pki.path("store")]
        let now = try Self.audit(arguments)
        #expect(now.status == 2, "\(now.stdout)\(now.stderr)")
        #expect(now.stdout.contains("certificate has expired"))
        let then = try Self.audit(arguments + ["--at", "2020-06-01"])
        #expect(then.status == 0, "\(then.stdout)\(then.stderr)")
        #expect(then.stdout.contains("2020-01-01T00:00:00Z to 2021-01-01T00:00:00Z (214 days left)"), "\(then.stdout)")
    }

    @Test(
        "Usage errors: exit 64 with one line naming the input, before any connection",
        arguments: [
            (["--pin", "sha256/abc"], "--pin: pin \"sha256/abc\" is not valid base64"),
            (["--pin", "md5/AAAA"], "--pin: pin \"md5/AAAA\" is not sha256/<base64>, sha256//<base64> or pin-sha256=\"<base64>\""),
            (["--pin-file", "/nonexistent/pins.pem"], "--pin-file /nonexistent/pins.pem: cannot open: No such file or directory"),
            (["--file", "/nonexistent/hosts"], "--file /nonexistent/hosts: cannot open: No such file or directory"),
            (["--ca-file", "/nonexistent/ca.pem"], "--ca-file /nonexistent/ca.pem: cannot open"),
            (["--at", "yesterday"], "--at \"yesterday\" is not a time"),
            (["--mode", "certificate"], "--mode needs pins"),
            (["--timeout", "0"], "--timeout must be more than 0"),
        ])
    func usage(arguments: [String], message: String) throws {
        let result = try Self.audit(["127.0.0.1:1"] + arguments)
        #expect(result.status == 64)
        #expect(result.stderr.hasPrefix("pinpath: error: \(message)"), "\(result.stderr)")
        #expect(result.stderr.split(separator: "\n").count == 1)
        #expect(result.stdout.isEmpty)
    }

    @Test("A bad HOST[:PORT] and no host at all are usage errors")
    func badHosts() throws {
        #expect(try Self.audit(["valid.test:99999"]).status == 64)
        #expect(try Self.audit(["https://valid.test/"]).status == 64)
        #expect(try Self.audit([]).status == 64)
    }

    // MARK: - Helpers

    static func audit(_ arguments: [String]) throws -> Shell.Result {
        try Shell.run([pinpath, "audit"] + arguments)
    }

    static func serve(_ served: [String], weak: Bool = false) throws -> TLSServer {
        let pki = TestPKI.shared
        return try TLSServer(
            certificate: pki.path(served[0]), key: pki.path(served[0], "key"), chain: served.dropFirst().map { pki.path($0) },
            in: pki.directory, extraArguments: weak ? ["-cipher", "DEFAULT:@SECLEVEL=0"] : [])
    }

    static func object(_ line: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "not a JSON object: \(line)")
    }
}

/// A TCP listener on 127.0.0.1 that is not TLS: it answers each connection with `reply` and closes it, or,
/// with `nil`, accepts nothing and says nothing (the kernel completes the TCP handshake from its backlog).
final class PlainListener {
    let port: UInt16
    private let fd: Int32

    init(reply: String?) throws {
        let (fd, port) = try TLSServer.bindLoopback()
        guard listen(fd, 16) == 0 else {
            close(fd)
            throw ShellError(description: "listen: \(errno)")
        }
        self.fd = fd
        self.port = port
        guard let reply else { return }
        Thread.detachNewThread { [fd] in
            // Ends when stop() shuts the listening socket down and accept fails.
            while true {
                let connection = accept(fd, nil, nil)
                if connection < 0 { return }
                _ = reply.withCString { write(connection, $0, strlen($0)) }
                close(connection)
            }
        }
    }

    func stop() {
        shutdown(fd, Int32(SHUT_RDWR))
        close(fd)
    }
}
