import Foundation
import PinpathTestSupport
import Testing

/// A TLS 1.2 server chooses the group of a DHE key exchange, and OpenSSL's client computes with any of up to 10,000
/// bits, prime or not (its quick check does not test primality): about 0.6 s of CPU a handshake (8,192 bits: 0.2 s),
/// on the one thread that runs every `tls://` probe's handshakes (or a batch audit's, or the https probes' libcurl
/// thread), so one hostile server slowed every other endpoint (attacker review 20). pinpath refuses a group above
/// 4,096 bits before computing with it, on each of its three paths, and offers TLS 1.3 no larger finite-field group.
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

    @Test(
        "A group of the server's above 4,096 bits is refused before it is computed with: audit, a tls:// probe on the engine, an https request",
        arguments: [10_000, 8_192])
    func hugeGroupRefused(_ bits: Int) throws {
        let directory = try TemporaryDirectory("dh-ceiling")
        let hostile = try server(try Self.hostileGroup(bits: bits, in: directory))
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

    @Test("Control: a 4,096-bit group (RFC 7919's ffdhe4096) is still computed with (audit and https)")
    func largestAcceptedGroup() throws {
        let directory = try TemporaryDirectory("dh-ceiling")
        let standard = try server(try Self.standardGroup("ffdhe4096", in: directory))
        defer { standard.stop() }
        let (report, text) = try audit(standard.port)
        #expect(report["result"] as? String == "trusted", "\(text)")
        #expect(report["cipher"] as? String == "DHE-RSA-AES128-GCM-SHA256", "\(text)")
        let request = try Shell.run([Shell.pinpath, "request", "https://127.0.0.1:\(standard.port)/", "--ca-file", pki.path("store")])
        #expect(request.status == 0, "\(request.stderr)")
    }

    @Test("TLS 1.3: a server that has only ffdhe8192 finds no group in common; one with ffdhe4096 does")
    func largeTLS13GroupsNotOffered() throws {
        for (group, completes) in [("ffdhe8192", false), ("ffdhe4096", true)] {
            let server = try TLSServer(
                certificate: pki.path("ip"), key: pki.path("ip", "key"), chain: [pki.path("inter")], in: pki.directory,
                extraArguments: ["-tls1_3", "-groups", group])
            defer { server.stop() }
            let (report, text) = try audit(server.port)
            #expect((report["result"] as? String == "trusted") == completes, "\(group): \(text)")
        }
    }
}
