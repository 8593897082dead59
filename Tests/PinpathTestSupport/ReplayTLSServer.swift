import Foundation

/// An on-path attacker replaying a service's certificate without its key: a raw-socket Python server on 127.0.0.1
/// that reads each ClientHello and answers, in TLS 1.2, a ServerHello (ECDHE-ECDSA-AES128-GCM-SHA256, `c02b`, with
/// the renegotiation_info extension) and a Certificate message holding the chain it was given, then nothing: it
/// cannot sign a ServerKeyExchange. In TLS 1.3 it does the X25519 key exchange itself (the attacker chooses that
/// key) and sends ServerHello, then EncryptedExtensions and the Certificate under the handshake keys, and no
/// CertificateVerify, which needs the certificate's key. A client's verifier sees the certificate before the
/// missing proof. Then it closes the
/// connection, or holds it open until the client ends it (a client waiting for the proof waits for its own
/// timeout). Every connection is a line in ``connections``. Killed by its PID in ``stop()``.
public final class ReplayTLSServer: Sendable {
    public let port: UInt16
    private let pid: pid_t
    private let logPath: String

    /// The script: `PORT_FILE LOG close|hold tls12|tls13 CERT.pem...`, the leaf first (an EC key's certificate,
    /// for the TLS 1.2 suite). TLS 1.3 uses python3-cryptography for X25519 and AES-GCM; the key schedule is
    /// RFC 8446 §7.1 with the standard library's HMAC.
    static let script = #"""
        import hashlib, hmac, os, socket, ssl, sys
        port_file, log, after, version, pems = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]
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
        def expand_label(secret, label, context, length):
            info = length.to_bytes(2, "big") + bytes([6 + len(label)]) + b"tls13 " + label + bytes([len(context)]) + context
            out, block, n = b"", b"", 1
            while len(out) < length:
                block = hmac.new(secret, block + info + bytes([n]), hashlib.sha256).digest()
                out, n = out + block, n + 1
            return out[:length]
        def extract(salt, key): return hmac.new(salt, key, hashlib.sha256).digest()
        def tls13_flight(client_hello):
            from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
            from cryptography.hazmat.primitives.ciphers.aead import AESGCM
            from cryptography.hazmat.primitives import serialization
            body = client_hello[4:]
            at = 2 + 32
            session = body[at + 1:at + 1 + body[at]]; at += 1 + body[at]
            at += 2 + int.from_bytes(body[at:at + 2], "big")  # cipher suites
            at += 1 + body[at]  # compression
            end = at + 2 + int.from_bytes(body[at:at + 2], "big"); at += 2
            client_key = None
            while at < end:
                kind, size = int.from_bytes(body[at:at + 2], "big"), int.from_bytes(body[at + 2:at + 4], "big")
                data, at = body[at + 4:at + 4 + size], at + 4 + size
                if kind == 0x33:
                    shares = data[2:]
                    while shares:
                        group, length = int.from_bytes(shares[:2], "big"), int.from_bytes(shares[2:4], "big")
                        if group == 0x1d: client_key = shares[4:4 + length]
                        shares = shares[4 + length:]
            private = X25519PrivateKey.generate()
            public = private.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
            shared = private.exchange(X25519PublicKey.from_public_bytes(client_key))
            extensions = b"\x00\x2b\x00\x02\x03\x04" + b"\x00\x33\x00\x24\x00\x1d\x00\x20" + public
            server_hello = handshake(2, b"\x03\x03" + os.urandom(32) + bytes([len(session)]) + session + b"\x13\x01\x00"
                                     + len(extensions).to_bytes(2, "big") + extensions)
            early = extract(b"\x00" * 32, b"\x00" * 32)
            derived = expand_label(early, b"derived", hashlib.sha256(b"").digest(), 32)
            secret = expand_label(extract(derived, shared), b"s hs traffic",
                                  hashlib.sha256(client_hello + server_hello).digest(), 32)
            key, iv = expand_label(secret, b"key", b"", 16), expand_label(secret, b"iv", b"", 12)
            entries = b"".join(len(d).to_bytes(3, "big") + d + b"\x00\x00" for d in ders)
            inner = handshake(8, b"\x00\x00") + handshake(11, b"\x00" + len(entries).to_bytes(3, "big") + entries) + b"\x16"
            header = b"\x17\x03\x03" + (len(inner) + 16).to_bytes(2, "big")
            sealed = AESGCM(key).encrypt(iv, inner, header)  # sequence number 0: the nonce is the IV
            return record(server_hello) + b"\x14\x03\x03\x00\x01\x01" + header + sealed
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
                client_hello = read(connection, int.from_bytes(header[3:5], "big"))
                connection.sendall(tls13_flight(client_hello) if version == "tls13" else record(hello + certificate))
                if after == "hold":
                    connection.settimeout(60)
                    while connection.recv(4096): pass  # until the client ends it
            except Exception:
                pass
            finally:
                connection.close()
        """#

    /// Starts the server replaying `chain` (PEM files, leaf first); its files go into `directory`.
    /// - Parameters:
    ///   - holds: whether each connection is held open after the Certificate message rather than closed.
    ///   - tls13: whether it answers in TLS 1.3 rather than TLS 1.2.
    public init(chain: [String], holds: Bool = false, tls13: Bool = false, in directory: String) throws {
        let name = "replay-\(UUID().uuidString)"
        try Self.script.write(toFile: "\(directory)/\(name).py", atomically: true, encoding: .utf8)
        logPath = "\(directory)/\(name).log"
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        (pid, port) = try Shell.spawnServer(
            [
                "/usr/bin/python3", "\(directory)/\(name).py", "\(directory)/\(name).port", logPath, holds ? "hold" : "close",
                tls13 ? "tls13" : "tls12",
            ] + chain,
            portFile: "\(directory)/\(name).port", what: "the replay server")
    }

    /// How many connections it accepted so far.
    public var connections: Int {
        ((try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "").split(separator: "\n").count
    }

    /// Kills the server and reaps it. Safe to call twice.
    public func stop() { Shell.stopIfRunning(pid) }
}
