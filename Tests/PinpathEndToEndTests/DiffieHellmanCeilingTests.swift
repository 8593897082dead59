import Foundation
import PinpathTestSupport
import Testing

/// A TLS 1.2 server chooses the group of a DHE key exchange, and OpenSSL's client computes with any of up to 10,000
/// bits, prime or not (its quick check does not test primality): about 0.6 s of CPU a handshake, on the one thread
/// that runs every `tls://` probe's handshakes (or a batch audit's, or the https probes' libcurl thread), so one
/// hostile server slowed every other endpoint (attacker review 20). pinpath refuses a group above 8,192 bits, the
/// largest standard one (RFC 7919's ffdhe8192), before computing with it, on each of its three paths.
@Suite("Diffie-Hellman groups a server chooses are bounded", .serialized)
struct DiffieHellmanCeilingTests {
    let pki = TestPKI.shared

    /// Writes DH parameters whose "prime" is a random odd number of `bits` bits, generator 2 (PEM).
    static func hostileGroup(bits: Int, in directory: TemporaryDirectory) throws -> String {
        var prime = (0..<bits / 8).map { _ in UInt8.random(in: 0...255) }
        prime[0] |= 0x80
        prime[prime.count - 1] |= 1
        func integer(_ magnitude: [UInt8]) -> [UInt8] { [0x02] + length(magnitude.count + 1) + [0x00] + magnitude }
        func length(_ count: Int) -> [UInt8] {
            count < 0x80 ? [UInt8(count)] : [0x82, UInt8(count >> 8), UInt8(count & 0xff)]
        }
        let body = integer(prime) + [0x02, 0x01, 0x02]
        let der = [0x30] + length(body.count) + body
        let path = directory.file("dh\(bits).pem")
        let base64 = Data(der).base64EncodedString(options: .lineLength64Characters)
        try "-----BEGIN DH PARAMETERS-----\n\(base64)\n-----END DH PARAMETERS-----\n".write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// RFC 7919's named group `name` as DH parameters (PEM).
    static func standardGroup(_ name: String, in directory: TemporaryDirectory) throws -> String {
        let path = directory.file("\(name).pem")
        try Shell.check(["openssl", "genpkey", "-genparam", "-algorithm", "DH", "-pkeyopt", "group:\(name)", "-out", path])
        return path
    }

    /// s_server over TLS 1.2 with one DHE cipher suite and the group in `parameters`.
    func server(_ parameters: String) throws -> TLSServer {
        try TLSServer(
            certificate: pki.path("ip"), key: pki.path("ip", "key"), chain: [pki.path("inter")], in: pki.directory,
            extraArguments: ["-tls1_2", "-cipher", "DHE-RSA-AES128-GCM-SHA256", "-dhparam", parameters])
    }

    func audit(_ port: UInt16) throws -> (report: [String: Any], text: String) {
        let result = try Shell.run([Shell.pinpath, "audit", "--json", "--ca-file", pki.path("store"), "127.0.0.1:\(port)"])
        return (try InterceptionExpiryTests.json(result.stdout), result.stdout + result.stderr)
    }

    @Test("A 10,000-bit group is refused before it is computed with: audit, a tls:// probe on the engine, an https request")
    func hugeGroupRefused() throws {
        let directory = try TemporaryDirectory("dh-ceiling")
        let hostile = try server(try Self.hostileGroup(bits: 10_000, in: directory))
        defer { hostile.stop() }

        let (report, text) = try audit(hostile.port)
        #expect(report["result"] as? String == "no_handshake", "\(text)")
        #expect(text.contains("modulus too large"), "\(text)")

        let configuration = directory.file("pinpath.yaml")
        try """
        events: { probes: all }
        policies:
          local: { mode: none, ca_file: \(pki.path("store")) }
        endpoints:
          - { name: dh, url: "tls://127.0.0.1:\(hostile.port)", policy: local }

        """.write(toFile: configuration, atomically: true, encoding: .utf8)
        let run = try Shell.run([Shell.pinpath, "run", "--once", "--config", configuration])
        let probe = run.stdout.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }.first { $0["event"] as? String == "probe.completed" }
        #expect(probe?["outcome"] as? String == "failure", "\(run.stdout)")
        #expect((probe?["message"] as? String)?.contains("modulus too large") == true, "\(run.stdout)")

        let request = try Shell.run([Shell.pinpath, "request", "https://127.0.0.1:\(hostile.port)/", "--ca-file", pki.path("store")])
        #expect(request.status == 3, "\(request.stdout) \(request.stderr)")
        #expect(request.stderr.contains("modulus too large"), "\(request.stderr)")
    }

    @Test("Control: the largest standard group, RFC 7919's ffdhe8192, is still computed with (audit and https)")
    func largestStandardGroupAccepted() throws {
        let directory = try TemporaryDirectory("dh-ceiling")
        let standard = try server(try Self.standardGroup("ffdhe8192", in: directory))
        defer { standard.stop() }
        let (report, text) = try audit(standard.port)
        #expect(report["result"] as? String == "trusted", "\(text)")
        #expect(report["cipher"] as? String == "DHE-RSA-AES128-GCM-SHA256", "\(text)")
        let request = try Shell.run([Shell.pinpath, "request", "https://127.0.0.1:\(standard.port)/", "--ca-file", pki.path("store")])
        #expect(request.status == 0, "\(request.stderr)")
    }
}
