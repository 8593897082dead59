import Foundation
import PinpathTestSupport
import Testing

/// `pinpath pins`, run as a user would: the binary SwiftPM built next to this test bundle.
@Suite("pinpath pins")
struct PinsCommandTests {
    static let pinpath = Shell.pinpath

    @Test("One line per certificate, equal to the openssl pipeline, for RSA, P-256, P-384 and Ed25519")
    func pins() throws {
        let pki = TestPKI.shared
        let names = ["valid", "p256", "p384", "ed25519"]
        let result = try Shell.run([Self.pinpath, "pins"] + names.map { pki.path($0) })
        #expect(result.status == 0, "\(result.stderr)")
        let expected = try names.map { "sha256/\(try pki.opensslPin($0)) CN=\($0 == "valid" ? "valid" : $0).test\n" }.joined()
        #expect(result.stdout == expected)
        #expect(result.stderr.isEmpty)
    }

    @Test("--format hpkp, keys and bundles")
    func hpkp() throws {
        let pki = TestPKI.shared
        let bundle = pki.file("cli-bundle.pem")
        let text = try ["valid", "inter"].map { try String(contentsOfFile: pki.path($0), encoding: .utf8) }.joined()
        try text.write(toFile: bundle, atomically: true, encoding: .utf8)
        let result = try Shell.run([Self.pinpath, "pins", "--format", "hpkp", bundle, pki.path("p256", "key")])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(
            result.stdout == """
                pin-sha256="\(try pki.opensslPin("valid"))" CN=valid.test
                pin-sha256="\(try pki.opensslPin("inter"))" CN=Pinpath Test Intermediate
                pin-sha256="\(try pki.opensslPin("p256"))" EC P-256 private key

                """)
    }

    @Test("Several files: the good ones printed, each bad one named on stderr in one line, exit 65")
    func badFile() throws {
        let pki = TestPKI.shared
        let garbage = pki.file("cli-garbage.txt")
        try "hello".write(toFile: garbage, atomically: true, encoding: .utf8)
        let missing = pki.file("nope.pem")
        let result = try Shell.run([Self.pinpath, "pins", pki.path("valid"), garbage, pki.path("p256"), missing])
        #expect(result.status == 65)
        #expect(
            result.stdout == "sha256/\(try pki.opensslPin("valid")) CN=valid.test\nsha256/\(try pki.opensslPin("p256")) CN=p256.test\n",
            "\(result.stdout)")
        #expect(
            result.stderr == """
                pinpath: error: \(garbage): not a PEM file, nor a DER certificate, public key, private key or CSR
                pinpath: error: \(missing): cannot open: No such file or directory

                """, "\(result.stderr)")
    }

    @Test("--json: one object, each file with its pins or its error, and the first error on top")
    func json() throws {
        let pki = TestPKI.shared
        let missing = pki.file("nope.pem")
        let result = try Shell.run([Self.pinpath, "pins", "--json", pki.path("valid"), missing])
        #expect(result.status == 65)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        let files = try #require(object["files"] as? [[String: Any]], "\(result.stdout)")
        #expect(files.map { $0["file"] as? String } == [pki.path("valid"), missing])
        let pins = try #require(files[0]["pins"] as? [[String: String]])
        let pin = try pki.opensslPin("valid")
        #expect(pins == [["pin": "sha256/\(pin)", "hpkp": "pin-sha256=\"\(pin)\"", "label": "CN=valid.test"]])
        let fileError = try #require(files[1]["error"] as? [String: Any])
        #expect(fileError["category"] as? String == "data")
        #expect(fileError["message"] as? String == "\(missing): cannot open: No such file or directory")
        let error = try #require(object["error"] as? [String: Any])
        #expect(error["category"] as? String == "data" && error["exit_code"] as? Int == 65, "\(error)")

        let good = try Shell.run([Self.pinpath, "pins", "--json", pki.path("valid")])
        #expect(good.status == 0, "\(good.stderr)")
        let goodObject = try #require(try JSONSerialization.jsonObject(with: Data(good.stdout.utf8)) as? [String: Any])
        #expect(goodObject["error"] is NSNull && good.stderr.isEmpty, "\(good.stdout)")
    }

    /// Found in review while fuzzing: `/dev/zero` was read until memory ran out (the agent aborted on a
    /// `ca_file: /dev/zero`), and a FIFO with no writer blocked `open` forever (a reload hung).
    @Test("A device is refused past 64 MiB, a FIFO with no writer reads as empty, a pipe works")
    func devicesAndPipes() throws {
        let pki = TestPKI.shared
        let zero = try Shell.run([Self.pinpath, "pins", "/dev/zero"])
        #expect(zero.status == 65)
        #expect(zero.stderr.hasPrefix("pinpath: error: /dev/zero: more than 64 MiB;"), "\(zero.stderr)")

        let fifo = pki.file("cli-fifo-\(getpid())")
        unlink(fifo)
        #expect(mkfifo(fifo, 0o600) == 0)
        defer { unlink(fifo) }
        let empty = try Shell.run([Self.pinpath, "pins", fifo])
        #expect(empty.status == 65)
        #expect(empty.stderr == "pinpath: error: \(fifo): not a PEM file, nor a DER certificate, public key, private key or CSR\n")

        let piped = try Shell.run(
            [Self.pinpath, "pins", "/dev/stdin"], input: try String(contentsOfFile: pki.path("valid"), encoding: .utf8))
        #expect(piped.status == 0, "\(piped.stderr)")
        #expect(piped.stdout == "sha256/\(try pki.opensslPin("valid")) CN=valid.test\n")
    }

    @Test("No file is a usage error, exit 64")
    func noFile() throws {
        let result = try Shell.run([Self.pinpath, "pins"])
        #expect(result.status == 64)
    }
}
