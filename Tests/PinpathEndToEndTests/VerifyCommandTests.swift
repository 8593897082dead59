import Foundation
import PinpathTestSupport
import Testing

/// `pinpath verify`, run as a user would, on chains written to files from the test PKI. Every run trusts only
/// the PKI's store (`--ca-file`), so nothing depends on the system store.
@Suite("pinpath verify")
struct VerifyCommandTests {
    @Test("Audit's table from files: the same verdicts, exit codes and details, with no connection", arguments: AuditCommandTests.cases)
    func verdicts(_ row: AuditCommandTests.Case) throws {
        let pki = TestPKI.shared
        let file = try Self.chainFile(row.served)
        let result = try Self.verify([file, "--host", row.serverName, "--ca-file", pki.path("store"), "--json"] + row.profileOptions)
        #expect(result.status == row.exit, "\(result.stdout)\(result.stderr)")
        let object = try AuditCommandTests.object(result.stdout)
        try AuditCommandTests.expectVerdicts(object, row)
        #expect(object["file"] as? String == file)
        #expect(object["server_name"] as? String == row.serverName)
        #expect(object["port"] is NSNull && object["tls_version"] is NSNull && object["address"] is NSNull)
        #expect(object["profile"] as? String == row.expectedProfile.name)
        #expect(object["profile_reason"] as? String == row.expectedProfile.reason)
    }

    @Test("Text: the file and host, each certificate, the verified chain with the store's root, verdicts; no protocol")
    func text() throws {
        let pki = TestPKI.shared
        let file = try Self.chainFile(["valid", "inter"])
        let result = try Self.verify([file, "--host", "valid.test", "--ca-file", pki.path("store")])
        #expect(result.status == 0, "\(result.stderr)")
        for expected in [
            "\(file) (host valid.test)\n", "    depth 0\n", "      subject    CN=valid.test\n",
            "      pin        sha256/\(try pki.opensslPin("valid"))\n",
            "    2 sha256/\(try pki.opensslPin("root")) CN=Pinpath Test Root (from the trust store)\n",
            "  chain      valid\n", "  host       valid for valid.test\n", "  result     trusted (exit 0)\n",
        ] {
            #expect(result.stdout.contains(expected), "missing \(expected.debugDescription) in\n\(result.stdout)")
        }
        #expect(!result.stdout.contains("\n  tls "))

        // Without --host the name is not checked: a leaf for another host passes, and says so.
        let unnamed = try Self.verify([try Self.chainFile(["wronghost", "inter"]), "--ca-file", pki.path("store")])
        #expect(unnamed.status == 0, "\(unnamed.stdout)\(unnamed.stderr)")
        #expect(unnamed.stdout.contains("(no host checked)\n") && unnamed.stdout.contains("  host       not checked\n"))
    }

    @Test("One DER certificate is a chain of one; with its intermediate in the CA file it verifies")
    func der() throws {
        let pki = TestPKI.shared
        let der = pki.file("verify-valid.der")
        try Shell.check(["openssl", "x509", "-in", pki.path("valid"), "-outform", "DER", "-out", der])
        let anchors = try LocalhostPKI.shared.chainFile("verify-root-and-inter.pem", [pki.path("root"), pki.path("inter")])
        let incomplete = try Self.verify([der, "--host", "valid.test", "--ca-file", pki.path("store"), "--json"])
        #expect(incomplete.status == 2)
        #expect((try AuditCommandTests.object(incomplete.stdout)["chain"] as? [String: Any])?["verify_error"] as? Int == 20)
        let complete = try Self.verify([der, "--host", "valid.test", "--ca-file", anchors])
        #expect(complete.status == 0, "\(complete.stdout)\(complete.stderr)")
    }

    @Test("--at: a chain valid now fails after its expiry, and an expired chain passes at a date inside its validity")
    func atTime() throws {
        let pki = TestPKI.shared
        let base = ["--host", "valid.test", "--ca-file", pki.path("store")]
        let valid = try Self.chainFile(["valid", "inter"])
        #expect(try Self.verify([valid] + base).status == 0)
        let later = try Self.verify([valid, "--at", "2045-03-01"] + base)
        #expect(later.status == 2, "\(later.stdout)")
        #expect(later.stdout.contains("certificate has expired"), "\(later.stdout)")
        #expect(later.stdout.contains("(expired 59 days ago)"), "\(later.stdout)")

        let expired = try Self.chainFile(["expired", "inter"])
        #expect(try Self.verify([expired] + base).status == 2)
        let then = try Self.verify([expired, "--at", "2020-06-01T12:00:00Z", "--json"] + base)
        #expect(then.status == 0, "\(then.stdout)\(then.stderr)")
        #expect(try AuditCommandTests.object(then.stdout)["verified_at"] as? String == "2020-06-01T12:00:00Z")
    }

    @Test("Will this rotation lock my users out? A new leaf under the pinned intermediate passes; a new key pinned by nobody fails")
    func rotation() throws {
        let pki = TestPKI.shared
        let localhost = LocalhostPKI.shared
        let base = ["--host", "localhost", "--ca-file", pki.path("store")]
        // The pins deployed clients hold, as `pinpath pins` prints them, with comments.
        let intermediatePins = localhost.path("pins-intermediate", "txt")
        let printed = try Shell.check([Shell.pinpath, "pins", pki.path("inter")])
        try "# pins shipped in the app, 2026-11\n\(printed)\n".write(toFile: intermediatePins, atomically: true, encoding: .utf8)
        let leafPins = localhost.path("pins-leaf", "txt")
        let leafPin = try Shell.check([Shell.pinpath, "pins", localhost.path("valid")])
        try "sha256/\(try pki.opensslPin("otherroot")) # a backup pin, not in this chain\n  \(leafPin)"
            .write(toFile: leafPins, atomically: true, encoding: .utf8)
        let otherRoot = localhost.path("pins-other-root", "txt")
        try "sha256/\(try pki.opensslPin("otherroot"))\n".write(toFile: otherRoot, atomically: true, encoding: .utf8)

        let current = try localhost.chainFile("current.pem", [localhost.path("valid"), pki.path("inter")])
        let rotated = try localhost.chainFile("rotated.pem", [localhost.path("rotated"), pki.path("inter")])
        // Pinning the intermediate: any new leaf it issues passes.
        #expect(try Self.verify([rotated, "--pin-file", intermediatePins] + base).status == 0)
        // Pinning the old leaf only: the old chain passes, the new key would lock the clients out.
        #expect(try Self.verify([current, "--pin-file", leafPins] + base).status == 0)
        let locked = try Self.verify([rotated, "--pin-file", leafPins] + base)
        #expect(locked.status == 1, "\(locked.stdout)\(locked.stderr)")
        #expect(locked.stdout.contains("certificate pinning failure!"))
        #expect(locked.stdout.contains("  result     pin_mismatch (exit 1)"))
        // Several files add up.
        #expect(try Self.verify([rotated, "--pin-file", otherRoot, "--pin-file", intermediatePins] + base).status == 0)
        #expect(try Self.verify([rotated, "--pin-file", otherRoot, "--mode", "public_key"] + base).status == 1)
    }

    @Test("Pins in curl's (sha256//) and HPKP's (pin-sha256=\"…\") spellings are read by --pin and --pin-file, and shown as sha256/")
    func pinSpellings() throws {
        let pki = TestPKI.shared
        let inter = try pki.opensslPin("inter")
        let backup = try pki.opensslPin("otherroot")
        let base = [try Self.chainFile(["valid", "inter"]), "--host", "valid.test", "--ca-file", pki.path("store")]
        let hpkpFile = LocalhostPKI.shared.path("pins-hpkp", "txt")
        try "pin-sha256=\"\(backup)\"  # the backup\npin-sha256=\"\(inter)\"\n".write(toFile: hpkpFile, atomically: true, encoding: .utf8)
        let curlFile = LocalhostPKI.shared.path("pins-curl", "txt")
        try "sha256//\(backup)\nsha256//\(inter)\n".write(toFile: curlFile, atomically: true, encoding: .utf8)
        for pins in [
            ["--pin", "sha256//\(inter)", "--pin", "pin-sha256=\"\(backup)\""], ["--pin-file", hpkpFile], ["--pin-file", curlFile],
        ] {
            let result = try Self.verify(base + pins)
            #expect(result.status == 0, "\(pins): \(result.stdout)\(result.stderr)")
        }
        let mismatch = try Self.verify(base + ["--pin", "pin-sha256=\"\(backup)\"", "--mode", "public_key"])
        #expect(mismatch.status == 1, "\(mismatch.stdout)\(mismatch.stderr)")
        #expect(mismatch.stdout.contains("    sha256/\(backup)\n"), "\(mismatch.stdout)")
    }

    @Test("--profile: the profile applied is reported; --max-depth within the path's length passes")
    func profile() throws {
        let pki = TestPKI.shared
        let base = [try Self.chainFile(["valid", "inter"]), "--host", "valid.test", "--ca-file", pki.path("store"), "--json"]
        let lenient = try Self.verify(base + ["--profile", "rfc5280"])
        #expect(lenient.status == 0, "\(lenient.stdout)\(lenient.stderr)")
        #expect(try AuditCommandTests.object(lenient.stdout)["profile"] as? String == "rfc5280")
        #expect(try Self.verify(base + ["--max-depth", "3"]).status == 0)
        let unknown = try Self.verify(base + ["--profile", "browser"])
        #expect(unknown.status == 64 && unknown.stderr.contains("browser"), "\(unknown.stderr)")
    }

    @Test("A rejection by a profile rule shows the rule and the certificate in the text (the maximum-depth rule)")
    func ruleInText() throws {
        let pki = TestPKI.shared
        // valid → inter → root is 3 certificates.
        let result = try Self.verify([
            try Self.chainFile(["valid", "inter"]), "--host", "valid.test", "--ca-file", pki.path("store"), "--max-depth", "2",
        ])
        #expect(result.status == 2, "\(result.stdout)\(result.stderr)")
        #expect(result.stdout.contains("  profile    rfc5280 (anchor from ca_file): rule "), "\(result.stdout)")
        #expect(result.stdout.contains(" at depth "), "\(result.stdout)")
    }

    @Test(
        "Bad input: exit 64 for options, 65 for the chain file, one line naming it, nothing on standard output",
        arguments: [
            (["--pin", "sha256/abc"], 64, "--pin: pin \"sha256/abc\" is not valid base64"),
            (["--pin-file", "/nonexistent/pins"], 64, "--pin-file /nonexistent/pins: cannot open: No such file or directory"),
            (["--at", "next tuesday"], 64, "--at \"next tuesday\" is not a time"),
            (["--at", "2026-13-45"], 64, "--at \"2026-13-45\" is not a time"),
            (["--host", "valid.test:443"], 64, "--host \"valid.test:443\" is a name, not NAME:PORT"),
            (["--ca-file", "/nonexistent/ca.pem"], 64, "--ca-file /nonexistent/ca.pem: cannot open"),
            (["--max-depth", "0"], 64, "--max-depth must be from 1 to 100"),
            (["--mode", "none", "--pin", "sha256/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="], 64, "--mode none checks no pins"),
        ] as [([String], Int32, String)])
    func badOptions(arguments: [String], status: Int32, message: String) throws {
        let file = try Self.chainFile(["valid", "inter"])
        let result = try Self.verify([file, "--ca-file", TestPKI.shared.path("store")] + arguments)
        #expect(result.status == status, "\(result.stderr)")
        #expect(result.stderr.hasPrefix("pinpath: error: \(message)"), "\(result.stderr)")
        #expect(result.stderr.split(separator: "\n").count == 1)
        #expect(result.stdout.isEmpty)
    }

    @Test("A bad line in a pin file names the file and the line")
    func badPinLine() throws {
        let pins = LocalhostPKI.shared.path("bad-pins", "txt")
        try "# ok\nsha256/\(try TestPKI.shared.opensslPin("inter"))\nsha256/short\n".write(toFile: pins, atomically: true, encoding: .utf8)
        let result = try Self.verify([try Self.chainFile(["valid", "inter"]), "--pin-file", pins])
        #expect(result.status == 64)
        #expect(result.stderr.hasPrefix("pinpath: error: --pin-file \(pins):3: pin \"sha256/short\""), "\(result.stderr)")
    }

    @Test("The chain file: missing, empty, not a certificate, or only a key is exit 65 naming the file")
    func badChainFile() throws {
        let pki = TestPKI.shared
        let directory = LocalhostPKI.shared.directory
        let empty = "\(directory)/empty.pem"
        let text = "\(directory)/notes.txt"
        try "".write(toFile: empty, atomically: true, encoding: .utf8)
        try "this is not a certificate\n".write(toFile: text, atomically: true, encoding: .utf8)
        for (file, message) in [
            ("/nonexistent/chain.pem", "/nonexistent/chain.pem: cannot open: No such file or directory"),
            (empty, "\(empty): "), (text, "\(text): "), (pki.path("valid", "key"), "\(pki.path("valid", "key")): no certificate"),
        ] {
            let result = try Self.verify([file, "--ca-file", pki.path("store")])
            #expect(result.status == 65, "\(file): \(result.stderr)")
            #expect(result.stderr.hasPrefix("pinpath: error: \(message)"), "\(result.stderr)")
            #expect(result.stderr.split(separator: "\n").count == 1)
            #expect(result.stdout.isEmpty)
        }
    }

    @Test("--crl: a revoked leaf exits 2 naming the revocation, a good one 0, a CRL missing for a certificate 2 (crl_missing)")
    func crl() throws {
        let pki = RevocationPKI.shared
        let scratch = try TemporaryDirectory("verify-crl")
        let directory = scratch.path
        func chain(_ names: [String]) throws -> String {
            let path = "\(directory)/\(names.joined(separator: "+")).pem"
            try names.map { try String(contentsOfFile: pki.file("\($0).pem"), encoding: .utf8) }.joined()
                .write(toFile: path, atomically: true, encoding: .utf8)
            return path
        }
        let common = ["--host", "valid.test", "--ca-file", pki.file("root.pem"), "--json"]
        let good = try Self.verify([try chain(["good", "inter"]), "--crl", pki.file("all.crl")] + common)
        #expect(good.status == 0, "\(good.stdout)\(good.stderr)")
        let revoked = try Self.verify([try chain(["revoked", "inter"]), "--crl", pki.file("all.crl")] + common)
        #expect(revoked.status == 2, "\(revoked.stdout)\(revoked.stderr)")
        #expect(revoked.stdout.contains("certificate revoked at depth 0"), "\(revoked.stdout)")
        let missing = try Self.verify([try chain(["good", "inter"]), "--crl", pki.file("rootonly.crl")] + common)
        #expect(missing.status == 2, "\(missing.stdout)\(missing.stderr)")
        #expect(missing.stdout.contains("crl_missing"), "\(missing.stdout)")
        let unreadable = try Self.verify([try chain(["good", "inter"]), "--crl", "\(directory)/none.crl"] + common)
        #expect(unreadable.status == 64, "\(unreadable.stderr)")
        #expect(unreadable.stderr.hasPrefix("pinpath: error: --crl "), "\(unreadable.stderr)")
        // A CRL without the CRLNumber RFC 5280 §5.2.3 requires is refused, naming the file, rather than trusted.
        let unnumbered = try Self.verify([try chain(["good", "inter"]), "--crl", pki.file("inter-nonumber.crl")] + common)
        #expect(unnumbered.status == 64, "\(unnumbered.stdout)\(unnumbered.stderr)")
        #expect(
            unnumbered.stderr.contains("--crl \(pki.file("inter-nonumber.crl")): X509 CRL block 1")
                && unnumbered.stderr.contains("has no CRLNumber extension"), "\(unnumbered.stderr)")
    }

    // MARK: - Helpers

    static func verify(_ arguments: [String]) throws -> Shell.Result {
        try Shell.run([Shell.pinpath, "verify"] + arguments)
    }

    /// The test PKI's certificates `names`, in order, in one PEM file.
    static func chainFile(_ names: [String]) throws -> String {
        try LocalhostPKI.shared.chainFile("verify-\(names.joined(separator: "+")).pem", names.map { TestPKI.shared.path($0) })
    }
}
