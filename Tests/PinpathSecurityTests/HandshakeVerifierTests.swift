import COpenSSL
import Foundation
import PinpathTestSupport
import Testing

@testable import PinpathSecurity

/// The verifier inside a real handshake: an in-process OpenSSL client against `openssl s_server` on loopback.
@Suite("Handshake verification", .serialized)
struct HandshakeVerifierTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        var leaf: String
        var chain: [String]
        var pinned: [String]
        var enforce = true
        var connects: Bool
        var reason: String?
        var testDescription: String { name }
    }

    @Test(
        "The policy decides the handshake; the detailed result reaches the caller",
        arguments: [
            Case(name: "pinned intermediate", leaf: "valid", chain: ["inter"], pinned: ["inter"], connects: true),
            Case(name: "pinned root from the store", leaf: "valid", chain: ["inter"], pinned: ["root"], connects: true),
            Case(name: "unrelated pin", leaf: "valid", chain: ["inter"], pinned: ["otherroot"], connects: false, reason: "pin_mismatch"),
            Case(name: "unrelated pin, report-only", leaf: "valid", chain: ["inter"], pinned: ["otherroot"], enforce: false, connects: true, reason: "pin_mismatch"),
            Case(name: "rogue leaf with the pinned intermediate appended", leaf: "rogue", chain: ["otherinter", "inter"], pinned: ["inter"], connects: false, reason: "pin_mismatch"),
            Case(name: "expired leaf, pinned", leaf: "expired", chain: ["inter"], pinned: ["inter"], connects: false, reason: "chain_invalid"),
        ])
    func handshake(_ row: Case) throws {
        let pki = TestPKI.shared
        let server = try TLSServer(certificate: pki.path(row.leaf), key: pki.path(row.leaf, "key"), chain: row.chain.map { pki.path($0) }, in: pki.directory)
        defer { server.stop() }
        let policy = try SecurityPolicy(
            mode: .publicKey, pins: try pki.chain(row.pinned).map(\.spkiPin), enforce: row.enforce, requiresBackupPin: false)
        let verifier = HandshakeVerifier(policy: policy, host: "valid.test", port: Int(server.port), trustStore: try pki.trustStore())

        let (connected, verifyResult) = try Self.connect(port: server.port, verifier: verifier)
        #expect(connected == row.connects)
        let evaluation = try #require(try verifier.lastResult?.get())
        #expect(evaluation.failure?.reason.description == row.reason)
        #expect(evaluation.servedChain.map(\.subject) == (try pki.chain([row.leaf] + row.chain)).map(\.subject))
        if !row.connects {
            #expect(verifyResult == Int(X509_V_ERR_APPLICATION_VERIFICATION))
        }
    }

    /// Connects with an OpenSSL client whose only certificate check is the verifier; returns whether the
    /// handshake completed and `SSL_get_verify_result`.
    static func connect(port: UInt16, verifier: HandshakeVerifier) throws -> (Bool, Int) {
        let context = try #require(SSL_CTX_new(TLS_client_method()))
        defer { SSL_CTX_free(context) }
        SSL_CTX_set_verify(context, SSL_VERIFY_PEER, nil)
        verifier.install(on: context)
        let ssl = try #require(SSL_new(context))
        defer { SSL_free(ssl) }
        let fd = try TLSServer.connectLoopback(port: port)
        defer { close(fd) }
        #expect(SSL_set_fd(ssl, fd) == 1)
        let connected = SSL_connect(ssl) == 1
        ERR_clear_error()
        return (connected, SSL_get_verify_result(ssl))
    }
}

/// `openssl s_server` on 127.0.0.1, killed by its PID when the test ends.
final class TLSServer {
    let port: UInt16
    private let process: Process

    init(certificate: String, key: String, chain: [String], in directory: String) throws {
        let chainFile = "\(directory)/served-chain-\(UUID().uuidString).pem"
        let text = try chain.map { try String(contentsOfFile: $0, encoding: .utf8) }.joined()
        try text.write(toFile: chainFile, atomically: true, encoding: .utf8)
        port = try Self.freePort()
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        var arguments = ["s_server", "-accept", "127.0.0.1:\(port)", "-cert", certificate, "-key", key, "-quiet", "-www"]
        if !chain.isEmpty { arguments += ["-cert_chain", chainFile] }
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        // Wait for the listener; s_server takes a few milliseconds to load its keys.
        for _ in 0..<200 {
            if let fd = try? Self.connectLoopback(port: port) {
                close(fd)
                return
            }
            usleep(10_000)
        }
        stop()
        throw ShellError(description: "openssl s_server did not listen on 127.0.0.1:\(port)")
    }

    func stop() {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    /// A port the kernel just handed out; s_server binds it a moment later (a race that is harmless here).
    static func freePort() throws -> UInt16 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw ShellError(description: "socket: \(errno)") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(fd, pointer, length) == 0 && getsockname(fd, pointer, &length) == 0
            }
        }
        guard bound else { throw ShellError(description: "bind: \(errno)") }
        return UInt16(bigEndian: address.sin_port)
    }

    static func connectLoopback(port: UInt16) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw ShellError(description: "socket: \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
        guard connected else {
            close(fd)
            throw ShellError(description: "connect 127.0.0.1:\(port): \(errno)")
        }
        return fd
    }
}
