import Foundation
import PinpathTestSupport
import Testing

@testable import PinpathSecurity

/// Client certificates: checked before use (``ClientIdentity``), and `pinpath audit` / `pinpath request`
/// with `--cert`/`--key` against `openssl s_server -Verify 1`, which requires one issued under the test root.
@Suite("Mutual TLS: client certificates, audit and request", .serialized)
struct MutualTLSTests {
    let pki = TestPKI.shared
    let clients = ClientCertificatePKI.shared

    /// A server for the `ip` leaf; with `requiring`, it demands a client certificate from the test PKI and
    /// names the test root and intermediate in its request.
    func server(requiring: Bool) throws -> TLSServer {
        try TLSServer(
            certificate: pki.path("ip"), key: pki.path("ip", "key"), chain: [pki.path("inter")], in: pki.directory,
            extraArguments: requiring ? ["-Verify", "1", "-verify_return_error", "-CAfile", clients.path("client-ca")] : [])
    }

    @Test("ClientIdentity accepts a matching pair and names what is wrong otherwise, never the password")
    func identityChecks() throws {
        let certificate = clients.path("client")
        try ClientIdentity.check(certificatePath: certificate, keyPath: clients.path("client", "key"), password: nil)
        try ClientIdentity.check(
            certificatePath: certificate, keyPath: clients.path("client-encrypted", "key"), password: ClientCertificatePKI.password)
        let cases: [(String?, String?, String)] = [
            (clients.path("client-encrypted", "key"), nil, "encrypted and no password was given"),
            (clients.path("client-encrypted", "key"), "wrong horse", "cannot be decrypted"),
            (clients.path("stranger", "key"), nil, "does not belong to the certificate"),
            ("/nonexistent/client.key", nil, "cannot read the client key"),
            (certificate, nil, "holds no PEM private key"),
        ]
        for (key, password, reason) in cases {
            #expect {
                try ClientIdentity.check(certificatePath: certificate, keyPath: key, password: password)
            } throws: { error in
                let message = (error as? SecurityError)?.message ?? ""
                return message.contains(reason) && !message.contains("wrong horse")
            }
        }
    }

    @Test("audit shows that the server asked for a client certificate and the CAs it named; --cert sends one")
    func auditShowsRequest() throws {
        let server = try server(requiring: true)
        defer { server.stop() }
        let base = [Shell.pinpath, "audit", "127.0.0.1:\(server.port)", "--ca-file", pki.path("store")]
        let json = try Shell.run(base + ["--json"])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any], "\(json.stderr)")
        let request = try #require(object["client_certificate"] as? [String: Any], "\(object)")
        #expect(request["requested"] as? Bool == true)
        #expect(request["authorities"] as? [String] == ["CN=Pinpath Test Root", "CN=Pinpath Test Intermediate"])
        #expect(request["sent"] as? Bool == false)

        let sent = try Shell.run(base + ["--cert", clients.path("client"), "--key", clients.path("client", "key"), "--json"])
        let sentObject = try #require(try JSONSerialization.jsonObject(with: Data(sent.stdout.utf8)) as? [String: Any], "\(sent.stderr)")
        #expect((sentObject["client_certificate"] as? [String: Any])?["sent"] as? Bool == true)

        let text = try Shell.run(base)
        #expect(
            text.stdout.contains(#"requested, naming "CN=Pinpath Test Root", "CN=Pinpath Test Intermediate"; none sent"#), "\(text.stdout)")
    }

    @Test("audit of a server that asks for no client certificate says so")
    func auditWithoutRequest() throws {
        let server = try server(requiring: false)
        defer { server.stop() }
        let json = try Shell.run([Shell.pinpath, "audit", "127.0.0.1:\(server.port)", "--ca-file", pki.path("store"), "--json"])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any], "\(json.stderr)")
        #expect((object["client_certificate"] as? [String: Any])?["requested"] as? Bool == false)
    }

    @Test("request --cert/--key passes a server that requires a client certificate; without them it fails in TLS")
    func requestWithCertificate() throws {
        let server = try server(requiring: true)
        defer { server.stop() }
        let base = [Shell.pinpath, "request", "https://127.0.0.1:\(server.port)/", "--ca-file", pki.path("store"), "--timeout", "10"]
        let with = try Shell.run(base + ["--cert", clients.path("client"), "--key", clients.path("client", "key")])
        #expect(with.status == 0, "\(with.stderr)")
        let without = try Shell.run(base)
        #expect(without.status != 0 && without.stderr.contains("tls_failed"), "\(without.stderr)")
        let stranger = try Shell.run(base + ["--cert", clients.path("stranger"), "--key", clients.path("stranger", "key")])
        #expect(stranger.status != 0 && stranger.stderr.contains("tls_failed"), "\(stranger.stderr)")
    }

    @Test("--key without --cert, a mismatched, encrypted or missing key, a missing certificate: usage errors naming the option (exit 64)")
    func certificateOptionsRefused() throws {
        let base = [Shell.pinpath, "request", "https://127.0.0.1:1/"]
        let cases: [([String], String)] = [
            (["--key", clients.path("client", "key")], "--key is given without --cert"),
            (["--cert", clients.path("client"), "--key", clients.path("stranger", "key")], "--key:"),
            (["--cert", clients.path("client"), "--key", clients.path("client-encrypted", "key")], "--key: "),
            // The option is named from the error's code, not its text: a certificate path with "key" in it is --cert's.
            (
                ["--cert", "/nonexistent/keys/client.pem", "--key", clients.path("client", "key")],
                "--cert: cannot read the client certificate"
            ),
            (["--cert", clients.path("client"), "--key", "/nonexistent/client.key"], "--key: cannot read the client key"),
        ]
        for (arguments, message) in cases {
            let result = try Shell.run(base + arguments)
            #expect(result.status == 64 && result.stderr.contains(message), "\(arguments): \(result.stderr)")
        }
    }
}
