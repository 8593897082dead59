import Foundation
import PinpathSecurity
import Synchronization
import Testing

/// A PKI whose leaves name OCSP responders on loopback (AIA `OCSP;URI:`), and those responders, for the
/// `revocation: ocsp` tests: generated once per test run with the openssl CLI into a temporary directory, its
/// servers started with it and killed at exit (their ports are written into the certificates).
///
/// The responders:
/// - a real one, `openssl ocsp -index inter.index -rsigner responder.pem -CA inter.pem -port P` (it listens on all
///   addresses: OpenSSL 3.0 takes no host there), answering about
///   `good` (good), `revoked` (revoked), `unknown` (not in its index, so "unknown");
/// - a bound port that does not listen (`unreachable`);
/// - a canned HTTP server (Python's standard library) that answers by path: `/forged` a "good" about `forged`
///   (revoked in the index) signed by `forger`, whom nobody delegated; `/othercert` the real responder's answer
///   about `good`; `/stale` an answer about `stale` whose dates were moved to 2020-01-01 and re-signed by
///   `responder`; `/replayed` the real responder's answer about `replayed` to another request (another nonce);
///   `/huge` 200 KiB; `/slow` headers, then one byte a second; `/redirect` a 302 to the real responder;
///   `/error` a 500; `/counted` the real responder's "good" about `counted`, without a nonce (as pre-signed
///   answers come), counting its requests (``cannedHits(_:)``).
///
/// Leaves (`<name>.pem`, `<name>.key`, EC P-256, DNS:valid.test and IP:127.0.0.1, issued by `inter` under
/// `root`): `good`, `revoked`, `unknown`, `unreachable`, `noaia` (no AIA extension), and one per canned path
/// (`forged`, `othercert`, `stale`, `replayed`, `huge`, `slow`, `redirect`, `error`, `counted`) naming it.
public final class OCSPResponderPKI: Sendable {
    /// The PKI and its servers, started on first use; `nil` (with a test issue) when they cannot start.
    public static let shared: OCSPResponderPKI? = {
        do {
            return try OCSPResponderPKI()
        } catch {
            Issue.record("cannot start the OCSP responders: \(error)")
            return nil
        }
    }()

    /// The directory holding the files named above.
    public let directory: String
    /// The real responder's port.
    public let responderPort: UInt16
    /// The canned server's port.
    public let cannedPort: UInt16
    /// The port that refuses connections.
    public let deadPort: UInt16
    private static let running = Mutex<(pids: [pid_t], directories: [String])>(([], []))

    private init() throws {
        let (deadSocket, deadPort) = try TLSServer.bindLoopback()
        _ = deadSocket  // held open, never listening, until the process exits: connections to it are refused
        self.deadPort = deadPort
        responderPort = try TLSServer.freePort()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pinpath-ocsp-\(getpid())").path
        try? FileManager.default.removeItem(atPath: directory)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        // The canned server picks its port first: the leaves name it.
        let cannedPortFile = "\(directory)/canned.port"
        let cannedScript = "\(directory)/canned.py"
        try Self.cannedServer.write(toFile: cannedScript, atomically: true, encoding: .utf8)
        let (cannedPID, cannedPort) = try Shell.spawnServer(
            ["/usr/bin/python3", cannedScript, cannedPortFile, directory, "\(responderPort)"], portFile: cannedPortFile,
            what: "the canned OCSP server")
        Self.keep(cannedPID, directory: directory)
        self.cannedPort = cannedPort
        self.directory = directory
        try Shell.check(["/bin/bash", "-c", Self.script, "ocsp-pki", directory, "\(responderPort)", "\(cannedPort)", "\(deadPort)"])
        let devNull = open("/dev/null", O_WRONLY)
        defer { close(devNull) }
        let logPath = "\(directory)/responder.log"
        let log = open(logPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        defer { close(log) }
        let responder = try Shell.spawn(
            [
                "/usr/bin/openssl", "ocsp", "-index", "\(directory)/inter.index", "-CA", "\(directory)/inter.pem",
                "-rsigner", "\(directory)/responder.pem", "-rkey", "\(directory)/responder.key", "-port",
                "\(responderPort)", "-ndays", "1", "-ignore_err",
            ], stdout: devNull, stderr: log)
        Self.keep(responder, directory: directory)
        // Ready when it says so: a connection opened and closed to test the port wedges it (it serves one
        // connection at a time and waits on that one for ever).
        for _ in 0..<500 {
            if let text = try? String(contentsOfFile: logPath, encoding: .utf8), text.contains("waiting for OCSP client connections") {
                return
            }
            usleep(10_000)
        }
        throw ShellError(description: "openssl ocsp did not listen on port \(responderPort)")
    }

    /// Kills `pid` and removes `directory` when the process exits (also after a failed start: the shared PKI's
    /// initializer fails once, and the servers it started must not outlive the run).
    private static func keep(_ pid: pid_t, directory: String) {
        let first = running.withLock { running in
            defer {
                running.pids.append(pid)
                if !running.directories.contains(directory) { running.directories.append(directory) }
            }
            return running.pids.isEmpty
        }
        if first {
            atexit {
                let running = OCSPResponderPKI.running.withLock { $0 }
                for pid in running.pids { Shell.stopIfRunning(pid) }
                for directory in running.directories { try? FileManager.default.removeItem(atPath: directory) }
            }
        }
    }

    /// A file in the directory, by its full name (`good.pem`).
    public func file(_ name: String) -> String { "\(directory)/\(name)" }

    /// The store with `root` as its only anchor.
    public func trustStore() throws -> TrustStore { try TrustStore(caFile: file("root.pem")) }

    /// The canned paths, each with a leaf of the same name naming it.
    public static let cannedPaths = ["forged", "othercert", "stale", "replayed", "huge", "slow", "redirect", "error", "counted"]

    /// How many requests the canned server got for `path`.
    public func cannedHits(_ path: String) -> Int {
        let log = (try? String(contentsOfFile: file("hits.log"), encoding: .utf8)) ?? ""
        return log.split(separator: "\n").filter { $0 == path }.count
    }

    static let cannedServer = #"""
        import http.server, os, sys, time
        port_file, directory, responder_port = sys.argv[1], sys.argv[2], sys.argv[3]
        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            def log_message(self, *args): pass
            def do_POST(self):
                request = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                path = self.path.strip("/")
                if path.isalpha(): open(os.path.join(directory, path + ".request"), "wb").write(request)
                with open(os.path.join(directory, "hits.log"), "a") as log: log.write(path + "\n")
                def answer(status, body, kind="application/ocsp-response", extra=()):
                    self.send_response(status)
                    self.send_header("Content-Type", kind)
                    self.send_header("Content-Length", str(len(body)))
                    for name, value in extra: self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(body)
                if path == "huge": return answer(200, b"\x30" * (200 << 10))
                if path == "error": return answer(500, b"")
                if path == "redirect":
                    return answer(302, b"", extra=[("Location", "http://127.0.0.1:%s/" % responder_port)])
                if path == "slow":
                    self.send_response(200)
                    self.send_header("Content-Type", "application/ocsp-response")
                    self.send_header("Content-Length", "1000")
                    self.end_headers()
                    for _ in range(60):
                        self.wfile.write(b"\x30"); self.wfile.flush(); time.sleep(1)
                    return
                name = os.path.join(directory, path + ".ocsp")
                if path.isalpha() and os.path.exists(name): return answer(200, open(name, "rb").read())
                answer(404, b"")
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        with open(port_file + ".tmp", "w") as f: f.write(str(server.server_address[1]))
        os.rename(port_file + ".tmp", port_file)
        server.serve_forever()
        """#

    static let script = #"""
        set -euo pipefail
        cd "$1"
        RESPONDER=http://127.0.0.1:$2/ CANNED=http://127.0.0.1:$3 DEAD=http://127.0.0.1:$4/
        mkdir -p newcerts
        cat > ca.cnf <<'CNF'
        \#(OpenSSLCAFiles.commonConfiguration)
        [ v3_leaf ]
        basicConstraints = CA:false
        keyUsage = critical, digitalSignature
        extendedKeyUsage = serverAuth
        subjectKeyIdentifier = hash
        authorityKeyIdentifier = keyid:always
        subjectAltName = DNS:valid.test, IP:127.0.0.1
        authorityInfoAccess = OCSP;URI:$ENV::AIA
        [ v3_leaf_noaia ]
        basicConstraints = CA:false
        keyUsage = critical, digitalSignature
        extendedKeyUsage = serverAuth
        subjectKeyIdentifier = hash
        authorityKeyIdentifier = keyid:always
        subjectAltName = DNS:valid.test, IP:127.0.0.1
        [ v3_responder ]
        basicConstraints = CA:false
        keyUsage = critical, digitalSignature
        extendedKeyUsage = OCSPSigning
        subjectKeyIdentifier = hash
        authorityKeyIdentifier = keyid:always
        CNF
        echo 3000 > serial
        export CA=root AIA=none
        key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1.key" 2>/dev/null; }
        rsakey() { openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$1.key" 2>/dev/null; }
        csr() { openssl req -new -config ca.cnf -key "$1.key" -subj "/CN=$2" -out "$1.csr"; }
        : > root.index; : > inter.index
        key root; csr root "OCSP Test Root"
        openssl ca -batch -selfsign -config ca.cnf -keyfile root.key -in root.csr -out root.pem -extensions v3_ca \
          -startdate 20190101000000Z -enddate 20460101000000Z -notext 2>/dev/null
        sign() { # name CN issuer extensions [AIA]
          key "$1"; csr "$1" "$2"
          AIA=${5:-none} CA=$3 openssl ca -batch -config ca.cnf -cert "$3.pem" -keyfile "$3.key" -in "$1.csr" -out "$1.pem" \
            -extensions "$4" -startdate 20200101000000Z -enddate 20450101000000Z -notext 2>/dev/null
        }
        sign inter "OCSP Test Intermediate" root v3_ca
        # The responder signs with RSA so that the re-signed answer below keeps one signature algorithm.
        rsakey responder; csr responder "OCSP Test Responder"
        CA=inter openssl ca -batch -config ca.cnf -cert inter.pem -keyfile inter.key -in responder.csr -out responder.pem \
          -extensions v3_responder -startdate 20200101000000Z -enddate 20450101000000Z -notext 2>/dev/null
        sign good valid.test inter v3_leaf "$RESPONDER"
        sign revoked valid.test inter v3_leaf "$RESPONDER"
        sign unreachable valid.test inter v3_leaf "$DEAD"
        sign noaia valid.test inter v3_leaf_noaia
        for path in forged othercert stale replayed huge slow redirect error counted; do
          sign "$path" valid.test inter v3_leaf "$CANNED/$path"
        done
        CA=inter openssl ca -batch -config ca.cnf -cert inter.pem -keyfile inter.key -revoke revoked.pem 2>/dev/null
        CA=inter openssl ca -batch -config ca.cnf -cert inter.pem -keyfile inter.key -revoke forged.pem 2>/dev/null
        # Not in the responder's index: it answers "unknown".
        key unknown; csr unknown valid.test
        AIA=$RESPONDER openssl x509 -req -in unknown.csr -CA inter.pem -CAkey inter.key -set_serial 0x7e57 -days 3650 \
          -extfile ca.cnf -extensions v3_leaf -out unknown.pem 2>/dev/null
        answer() { # leaf output signer-cert signer-key [index]
          openssl ocsp -index "${5:-inter.index}" -CA inter.pem -issuer inter.pem -cert "$1.pem" -rsigner "$3.pem" -rkey "$4.key" \
            -ndays 1 -no_nonce -respout "$2" >/dev/null 2>&1
        }
        # A forger, self-signed under the responder's name, saying "good" of the revoked `forged` leaf.
        key forger
        openssl req -new -x509 -config ca.cnf -key forger.key -subj "/CN=OCSP Test Responder" -days 3650 -out forger.pem
        sed 's/^R\t\([^\t]*\)\t[^\t]*\t/V\t\1\t\t/' inter.index > forged.index
        cp inter.index.attr forged.index.attr  # unique_subject = no, as in inter's own
        answer forged forged.ocsp forger forger forged.index
        answer good othercert.ocsp responder responder
        answer counted counted.ocsp responder responder
        # The real responder's answer to another request about `replayed` (openssl sends a nonce by default).
        openssl ocsp -issuer inter.pem -cert replayed.pem -reqout replayed.req >/dev/null 2>&1
        openssl ocsp -index inter.index -CA inter.pem -rsigner responder.pem -rkey responder.key -reqin replayed.req \
          -ndays 1 -respout replayed.ocsp >/dev/null 2>&1
        # An answer about `stale` from 2020: its dates moved back, re-signed by the responder.
        answer stale stale-now.ocsp responder responder
        cat > der.py <<'PY'
        \#(OpenSSLCAFiles.derPython)
        PY
        python3 - <<'PY'
        import re, subprocess
        from der import content, elements, wrap
        _, response_bytes = elements(content(open("stale-now.ocsp", "rb").read()))
        _, octets = elements(content(content(response_bytes)))
        basic = elements(content(content(octets)))
        tbs = re.sub(rb"\x18\x0f\d{14}Z", b"\x18\x0f20200101000000Z", basic[0])
        open("stale.tbs", "wb").write(tbs)
        signature = subprocess.run(["openssl", "dgst", "-sha256", "-sign", "responder.key", "stale.tbs"], check=True, capture_output=True).stdout
        basic_der = wrap(0x30, tbs + basic[1] + wrap(0x03, b"\0" + signature) + b"".join(basic[3:]))
        basic_oid = wrap(0x06, bytes.fromhex("2b0601050507300101"))
        open("stale.ocsp", "wb").write(wrap(0x30, wrap(0x0a, b"\0") + wrap(0xa0, wrap(0x30, basic_oid + wrap(0x04, basic_der)))))
        PY
        """#
}
