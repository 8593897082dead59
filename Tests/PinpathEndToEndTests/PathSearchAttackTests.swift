import Foundation
import PinpathSecurity
import PinpathTestSupport
import Testing

/// Path search end to end through `pinpath request`: `openssl s_server` on loopback sends an intermediate that
/// leads nowhere before the one that leads to the pinned root, which must still pass; and a server that tries to
/// ride the search (a forged leaf, or only dead-end issuers) must be refused in the handshake, with no request
/// sent (the server echoes what it receives into a transcript, which must stay empty).
@Suite("Path search, through pinpath request", .serialized)
struct PathSearchAttackTests {
    static let pki = NamesPKI.shared

    /// The trusted root, an unknown one, and one intermediate key certified twice under one name: by the unknown
    /// root (`orphan`, a dead end) and by the trusted one (`good`). The leaf is for 127.0.0.1; the forged leaf
    /// names the intermediate as its issuer but is signed by the attacker's own CA of that name.
    static let made = Result<Void, any Error> {
        let intermediate = NamesPKI.caExtensions + ["authorityKeyIdentifier=keyid"]
        try pki.root("search-root")
        try pki.root("search-unknown-root")
        _ = try pki.issue("search-orphan", issuer: "search-unknown-root", subject: "/CN=Shared Intermediate", extensions: intermediate)
        _ = try pki.issue(
            "search-good", issuer: "search-root", subject: "/CN=Shared Intermediate", extensions: intermediate, key: "search-orphan")
        try pki.leaf("search-leaf", issuer: "search-good", subject: "/CN=127.0.0.1", extensions: ["subjectAltName=IP:127.0.0.1"])
        try pki.root("search-attacker-ca", subject: "/CN=Shared Intermediate")
        try pki.leaf(
            "search-forged-leaf", issuer: "search-attacker-ca", subject: "/CN=127.0.0.1", extensions: ["subjectAltName=IP:127.0.0.1"])
    }

    static func request(port: UInt16) throws -> Shell.Result {
        try made.get()
        let pin = try Certificate.certificates(contentsOf: pki.path("search-root"))[0].spkiPin.description
        return try Shell.run([
            Shell.pinpath, "request", "https://127.0.0.1:\(port)/", "--ca-file", pki.path("search-root"), "--pin", pin,
            "--timeout", "5",
        ])
    }

    @Test("A dead-end intermediate sent first: the other issuer of the same name and key leads to the pinned root, exit 0")
    func deadEndFirst() throws {
        try Self.made.get()
        let server = try TLSServer(
            certificate: Self.pki.path("search-leaf"), key: Self.pki.path("search-leaf", "key"),
            chain: [Self.pki.path("search-orphan"), Self.pki.path("search-good")], in: Self.pki.directory)
        defer { server.stop() }
        let result = try Self.request(port: server.port)
        #expect(result.status == 0, "exit \(result.status): \(result.stderr)")
    }

    @Test(
        "Riding the search: a forged leaf before both issuers, or only the dead end, is refused in the handshake (exit 2), nothing sent",
        arguments: [("search-forged-leaf", ["search-orphan", "search-good"]), ("search-leaf", ["search-orphan"])])
    func forgedOrDeadEnd(_ leaf: String, _ chain: [String]) throws {
        try Self.made.get()
        let transcript = "\(Self.pki.directory)/transcript-\(UUID().uuidString)"
        let server = try TLSServer(
            certificate: Self.pki.path(leaf), key: Self.pki.path(leaf, "key"), chain: chain.map { Self.pki.path($0) },
            in: Self.pki.directory, www: false, transcript: transcript)
        defer { server.stop() }
        let result = try Self.request(port: server.port)
        #expect(result.status == 2, "exit \(result.status): \(result.stderr)")
        #expect(result.stderr.contains("tls_invalid"), "\(result.stderr)")
        let received = (try? String(contentsOfFile: transcript, encoding: .utf8)) ?? ""
        #expect(!received.contains("GET "), "the server received: \(received)")
    }
}
