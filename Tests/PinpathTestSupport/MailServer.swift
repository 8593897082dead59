import Foundation

/// Small mail servers (SMTP, IMAP, POP3), an FTP server's connect phase and a TCP banner server in Python's
/// standard library (`/usr/bin/python3`, its `ssl` module; no PyPI) on 127.0.0.1, for the connection-check
/// kinds. Each records every command it reads, marked `plain` or `tls` by whether it arrived before or after
/// the upgrade, so a test can prove what reached the server after a refused STARTTLS handshake; the hostile
/// modes record every byte that follows a STARTTLS they accepted without starting TLS. Killed by its PID when
/// stopped.
public final class MailServer {
    /// The protocol spoken.
    public enum Service: String, Sendable {
        case smtp, imap, pop3
        /// FTP's connect phase as libcurl runs it: `AUTH` (libcurl asks for `AUTH SSL` first), then `USER`, `PASS`,
        /// `PBSZ`, `PROT`, `PWD`.
        case ftp
        /// A bare TCP server: ``Mode/greet`` sends an SSH-style banner; ``Mode/answer`` reads a line and
        /// answers `+PONG <line>`.
        case tcp
    }

    /// How the server offers TLS.
    public enum Mode: String, Sendable {
        /// Plaintext greeting, `STARTTLS` (`STLS`) offered and honoured.
        case starttls
        /// Plaintext only: `STARTTLS` is neither offered nor accepted.
        case nostarttls
        /// TLS from the first byte (smtps, imaps, pop3s).
        case implicit
        /// ``Service/tcp`` only.
        case greet, answer
        /// Hostile: offers STARTTLS and answers the command with success, then, instead of a TLS handshake,
        /// goes on in plaintext with the protocol's next reply.
        case upgradeThenPlaintext = "upgrade-then-plaintext"
        /// Hostile: accepts STARTTLS, then closes the connection.
        case upgradeThenClose = "upgrade-then-close"
        /// Hostile: accepts STARTTLS, then sends bytes that are neither TLS nor the protocol.
        case upgradeThenGarbage = "upgrade-then-garbage"
    }

    public let port: UInt16
    public let pid: pid_t
    private let log: String

    /// Starts one.
    /// - Parameters:
    ///   - certificate: the leaf and its key (the leaf file may hold the chain after it); not needed for tcp.
    ///   - directory: where its script, log and port file go.
    public init(_ service: Service, _ mode: Mode, certificate: (chain: String, key: String)? = nil, directory: String) throws {
        let name = "mail-\(UUID().uuidString)"
        let script = "\(directory)/\(name).py"
        let portFile = "\(directory)/\(name).port"
        log = "\(directory)/\(name).log"
        try Self.script.write(toFile: script, atomically: true, encoding: .utf8)
        var arguments = ["/usr/bin/python3", script, service.rawValue, mode.rawValue, portFile, log]
        if let certificate { arguments += [certificate.chain, certificate.key] }
        (pid, port) = try Shell.spawnServer(arguments, portFile: portFile, what: "the \(service.rawValue) test server")
    }

    deinit { stop() }

    /// Kills it (and reaps it). Safe to call twice.
    public func stop() {
        var status: Int32 = 0
        if waitpid(pid, &status, WNOHANG) == 0 { Shell.kill(pid) }
    }

    /// The lines it logged so far: `plain EHLO x`, `tls EHLO x`, `error SSLError: …`.
    public var transcript: [String] {
        ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
    }

    /// The commands read after the TLS upgrade (or on an implicit-TLS connection).
    public var commandsOverTLS: [String] { transcript.filter { $0.hasPrefix("tls ") }.map { String($0.dropFirst(4)) } }

    /// The commands read in plaintext, in order (`EHLO x`, `STARTTLS`).
    public var plaintextCommands: [String] { transcript.filter { $0.hasPrefix("plain ") }.map { String($0.dropFirst(6)) } }

    /// In a hostile mode, every byte the client sent after the STARTTLS it was told succeeded, once the client
    /// has closed (or 5 s passed); `nil` until then, or when the server closed first (``Mode/upgradeThenClose``).
    public var bytesAfterUpgrade: [UInt8]? {
        guard let line = transcript.first(where: { $0.hasPrefix("after-upgrade ") }), !line.hasSuffix("closed-by-server") else {
            return nil
        }
        let hex = Array(line.dropFirst("after-upgrade ".count).utf8)
        return stride(from: 0, to: hex.count - 1, by: 2).compactMap { UInt8(String(decoding: hex[$0...$0 + 1], as: UTF8.self), radix: 16) }
    }

    /// Whether the hostile server has finished with the connection it betrayed (the client closed, 5 s passed,
    /// or it closed the connection itself).
    public var betrayalDone: Bool { transcript.contains { $0.hasPrefix("after-upgrade ") } }

    /// The content types of the TLS records in `bytes` (22 handshake, 21 alert, 23 application data), or `nil`
    /// when the bytes are not a whole sequence of TLS records: text, or a record cut short.
    public static func tlsRecordTypes(_ bytes: [UInt8]) -> [UInt8]? {
        var types: [UInt8] = []
        var index = 0
        while index < bytes.count {
            guard index + 5 <= bytes.count, (20...24).contains(bytes[index]), bytes[index + 1] == 3 else { return nil }
            let length = Int(bytes[index + 3]) << 8 | Int(bytes[index + 4])
            guard index + 5 + length <= bytes.count else { return nil }
            types.append(bytes[index])
            index += 5 + length
        }
        return types
    }

    /// argv: protocol, mode, port file, log file, [chain file, key file].
    static let script = #"""
        import os, socket, ssl, sys, threading, time
        # argv: protocol(smtp|imap|pop3|ftp|tcp) mode(starttls|nostarttls|implicit|upgrade-then-*; greet|answer for tcp)
        #       port_file log_file [cert key]
        proto, mode, port_file, log_file = sys.argv[1:5]
        hostile = mode.startswith("upgrade-then-")
        offers = mode == "starttls" or hostile
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        if len(sys.argv) > 6:
            ctx.load_cert_chain(sys.argv[5], sys.argv[6])
        lock = threading.Lock()
        def log(line):
            with lock, open(log_file, "a") as f:
                f.write(line + "\n")
        GREETING = {"smtp": b"220 mail.test ESMTP pinpath-test\r\n", "imap": b"* OK [CAPABILITY IMAP4rev1 STARTTLS] pinpath-test ready\r\n",
                    "pop3": b"+OK pinpath-test POP3 ready\r\n", "ftp": b"220 pinpath-test FTP ready\r\n"}
        # What a hostile server says in plaintext where the TLS handshake should start: the protocol's next reply.
        PLAINTEXT = {"smtp": b"250-mail.test still in plaintext\r\n250 8BITMIME\r\n", "imap": b"* CAPABILITY IMAP4rev1\r\n",
                     "pop3": b"+OK still in plaintext\r\n", "ftp": b"331 still in plaintext, password please\r\n"}
        class Betrayed(Exception):
            pass
        def upgrade(conn):
            if hostile:
                betray(conn)
                raise Betrayed()
            conn = ctx.wrap_socket(conn, server_side=True)
            return conn, conn.makefile("rwb", buffering=0), True
        def betray(conn):
            # The client was told STARTTLS succeeded: record every byte it sends from now on.
            if mode == "upgrade-then-close":
                log("after-upgrade closed-by-server")
                return
            conn.sendall(PLAINTEXT[proto] if mode == "upgrade-then-plaintext" else b"\x00\x01\x02\xff" * 16)
            conn.settimeout(0.2)
            received, deadline = b"", time.monotonic() + 5
            while time.monotonic() < deadline:
                try:
                    chunk = conn.recv(65536)
                except socket.timeout:
                    continue
                except OSError:
                    break
                if not chunk:
                    break
                received += chunk
            log("after-upgrade " + received.hex())
        def serve(conn):
            f = conn.makefile("rwb", buffering=0)
            tls = mode == "implicit"
            def send(b):
                f.write(b); f.flush()
            send(GREETING[proto])
            while True:
                line = f.readline()
                if not line:
                    return
                text = line.decode("utf-8", "replace").rstrip("\r\n")
                log(("tls " if tls else "plain ") + text)
                word = text.split(" ")
                if proto == "smtp":
                    cmd = word[0].upper()
                    if cmd in ("EHLO", "HELO"):
                        caps = [b"250-mail.test"] + ([b"250-STARTTLS"] if offers and not tls else []) + [b"250 8BITMIME"]
                        send(b"\r\n".join(caps) + b"\r\n")
                    elif cmd == "STARTTLS" and offers and not tls:
                        send(b"220 2.0.0 ready\r\n")
                        conn, f, tls = upgrade(conn)
                    elif cmd == "QUIT":
                        send(b"221 bye\r\n"); return
                    elif cmd in ("NOOP", "RSET", "VRFY"):
                        send(b"250 ok\r\n")
                    else:
                        send(b"502 not implemented\r\n")
                elif proto == "imap":
                    tag = word[0]; cmd = word[1].upper() if len(word) > 1 else ""
                    if cmd == "CAPABILITY":
                        send(b"* CAPABILITY IMAP4rev1" + (b" STARTTLS" if offers and not tls else b"") + b"\r\n" + tag.encode() + b" OK done\r\n")
                    elif cmd == "STARTTLS" and offers and not tls:
                        send(tag.encode() + b" OK begin TLS\r\n")
                        conn, f, tls = upgrade(conn)
                    elif cmd == "LOGOUT":
                        send(b"* BYE\r\n" + tag.encode() + b" OK\r\n"); return
                    elif cmd == "NOOP":
                        send(tag.encode() + b" OK\r\n")
                    else:
                        send(tag.encode() + b" BAD unknown\r\n")
                elif proto == "pop3":
                    cmd = word[0].upper()
                    if cmd == "CAPA":
                        send(b"+OK\r\n" + (b"STLS\r\n" if offers and not tls else b"") + b"USER\r\n.\r\n")
                    elif cmd == "STLS" and offers and not tls:
                        send(b"+OK begin TLS\r\n")
                        conn, f, tls = upgrade(conn)
                    elif cmd == "QUIT":
                        send(b"+OK bye\r\n"); return
                    elif cmd == "NOOP":
                        send(b"+OK\r\n")
                    else:
                        send(b"-ERR unknown\r\n")
                elif proto == "ftp":
                    cmd = word[0].upper()
                    if cmd == "AUTH" and offers and not tls:
                        send(b"234 AUTH TLS ok\r\n")
                        conn, f, tls = upgrade(conn)
                    elif cmd == "USER":
                        send(b"331 password please\r\n")
                    elif cmd == "PASS":
                        send(b"230 logged in\r\n")
                    elif cmd in ("PBSZ", "PROT", "TYPE"):
                        send(b"200 ok\r\n")
                    elif cmd == "PWD":
                        send(b'257 "/" is the current directory\r\n')
                    elif cmd == "SYST":
                        send(b"215 UNIX Type: L8\r\n")
                    elif cmd == "QUIT":
                        send(b"221 bye\r\n"); return
                    else:
                        send(b"502 not implemented\r\n")
        def run(conn):
            try:
                if proto == "tcp":
                    f = conn.makefile("rwb", buffering=0)
                    if mode == "greet":
                        f.write(b"SSH-2.0-pinpath-test\r\n")
                    else:  # answer: one line in, one line out
                        line = f.readline().decode("utf-8", "replace").rstrip("\r\n")
                        log("plain " + line)
                        f.write(b"+PONG " + line.encode() + b"\r\n")
                    return
                if mode == "implicit":
                    conn = ctx.wrap_socket(conn, server_side=True)
                serve(conn)
            except Betrayed:
                pass
            except Exception as e:
                log("error " + type(e).__name__ + ": " + str(e).replace("\n", " "))
            finally:
                try: conn.close()
                except Exception: pass
        s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", 0)); s.listen(16)
        with open(port_file + ".tmp", "w") as f: f.write(str(s.getsockname()[1]))
        os.rename(port_file + ".tmp", port_file)
        while True:
            c, _ = s.accept()
            threading.Thread(target=run, args=(c,), daemon=True).start()
        """#
}
