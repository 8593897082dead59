import Foundation

/// An on-path attacker replaying a service's certificate without its key: a raw-socket Python server on 127.0.0.1
/// that reads each ClientHello and answers a TLS 1.2 ServerHello (ECDHE-ECDSA-AES128-GCM-SHA256, `c02b`, with the
/// renegotiation_info extension) and a Certificate message holding the chain it was given, then nothing: it cannot
/// sign a ServerKeyExchange. A client's verifier sees the certificate before the missing proof. Then it closes the
/// connection, or holds it open until the client ends it (a client waiting for the proof waits for its own
/// timeout). Every connection is a line in ``connections``. Killed by its PID in ``stop()``.
public final class ReplayTLSServer: Sendable {
    public let port: UInt16
    private let pid: pid_t
    private let logPath: String

    /// The script: `PORT_FILE LOG close|hold CERT.pem...`, the leaf first (an EC key's certificate, for the suite).
    static let script = #"""
        import os, socket, ssl, sys
        port_file, log, after, pems = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
        ders = [ssl.PEM_cert_to_DER_cert(open(p).read()) for p in pems]
        def handshake(kind, body): return bytes([kind]) + len(body).to_bytes(3, "big") + body
        def record(body): return b"\x16\x03\x03" + len(body).to_bytes(2, "big") + body
        def read(connection, count):
            data = b""
            while len(data) < count:
                chunk = connection.recv(count - len(data))
                if not chunk: raise EOFError
                data += chunk
            return data
        extensions = b"\xff\x01\x00\x01\x00"  # renegotiation_info, empty
        hello = handshake(2, b"\x03\x03" + os.urandom(32) + b"\x00" + b"\xc0\x2b" + b"\x00"
                          + len(extensions).to_bytes(2, "big") + extensions)
        chain = b"".join(len(d).to_bytes(3, "big") + d for d in ders)
        certificate = handshake(11, len(chain).to_bytes(3, "big") + chain)
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        with open(port_file + ".tmp", "w") as f: f.write(str(listener.getsockname()[1]))
        os.rename(port_file + ".tmp", port_file)
        while True:
            connection, _ = listener.accept()
            with open(log, "a") as f: f.write("connection\n")
            try:
                connection.settimeout(5)
                header = read(connection, 5)
                read(connection, int.from_bytes(header[3:5], "big"))  # the ClientHello
                connection.sendall(record(hello + certificate))
                if after == "hold":
                    connection.settimeout(60)
                    while connection.recv(4096): pass  # until the client ends it
            except Exception:
                pass
            finally:
                connection.close()
        """#

    /// Starts the server replaying `chain` (PEM files, leaf first); its files go into `directory`.
    /// - Parameter holds: whether each connection is held open after the Certificate message rather than closed.
    public init(chain: [String], holds: Bool = false, in directory: String) throws {
        let name = "replay-\(UUID().uuidString)"
        try Self.script.write(toFile: "\(directory)/\(name).py", atomically: true, encoding: .utf8)
        logPath = "\(directory)/\(name).log"
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        (pid, port) = try Shell.spawnServer(
            ["/usr/bin/python3", "\(directory)/\(name).py", "\(directory)/\(name).port", logPath, holds ? "hold" : "close"] + chain,
            portFile: "\(directory)/\(name).port", what: "the replay server")
    }

    /// How many connections it accepted so far.
    public var connections: Int {
        ((try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "").split(separator: "\n").count
    }

    /// Kills the server and reaps it. Safe to call twice.
    public func stop() { Shell.stopIfRunning(pid) }
}
