import ArgumentParser
import Glibc
import PinpathAgent
import PinpathHTTP
import PinpathSecurity
import PinpathSupport

struct AuditCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "audit",
        abstract: "Connect to TLS servers and show their chains, certificate details and verdicts.",
        discussion: """
            For each HOST[:PORT] (port 443 by default): the protocol and cipher; each certificate the server \
            sent (subject, issuer, SANs, validity, key, signature algorithm, SPKI pin, SHA-256 fingerprint); \
            the chain OpenSSL verified, with the root from the trust store; the chain and host verdicts; and, \
            with pins, which pin matched at which depth. Details are shown even when verification fails. \
            Nothing is sent after the handshake.

            Pins: --pin and --pin-file give public-key pins (mode public_key, the default); with --mode \
            certificate the certificates of --pin-file are the only anchors. --profile chooses the rules a chain \
            must meet beyond OpenSSL's (webpki by default); a rejection by a rule names it and the certificate. \
            An audit is a diagnostic, so one pin is enough: the backup pin that enforcing policies need elsewhere in \
            pinpath is not required.

            Hosts are audited 8 at a time; the results are printed in the order given. With --json, one JSON \
            object: for one host its audit; for several, {"audits":[…],"exit_code":N,"error":…}, each host's audit \
            in the order given, the most serious exit code and its error (null when every host is trusted). A \
            HOST that is not HOST[:PORT] is named on stderr after the others were audited (with --json, an entry \
            {"host":…,"exit_code":64,"error":{…}} too) and makes the exit 64 unless a host failed its chain or pins.

            Exit codes: 0 trusted (and pinned, if pins were given); 1 pin mismatch; 2 chain or host invalid or revoked; \
            3 cannot connect or no TLS handshake. With several hosts, the most serious, in this order: 2, 1, 64, 3 \
            (a failed connection, which anyone on the path can cause, never hides a chain or pin failure). 64 \
            usage error (a bad option, an unreadable --file, --pin-file or --ca-file).
            """)

    @Argument(help: "HOST[:PORT] to audit; an IPv6 address in brackets when a port follows ([::1]:443).")
    var hosts: [String] = []

    @Option(name: .customLong("file"), help: "Also audit the HOST[:PORT] lines of this file (# comments and blank lines ignored).")
    var hostFile: String?

    @Option(help: "The name to send as SNI and check the certificate against (default: each HOST).")
    var servername: String?

    @Option(help: "Connect to this ADDR[:PORT] instead of resolving each HOST (the port defaults to HOST's).")
    var connect: ConnectAddress?

    @OptionGroup var chainPolicy: ChainPolicyOptions

    @OptionGroup var clientCertificate: ClientCertificateOptions

    @Option(help: "The time allowed for the TCP connection and the TLS handshake of each host: 5s, 1500ms, or seconds (2.5).")
    var timeout: Duration = .seconds(10)

    @Flag(help: "Print one JSON object per host.")
    var json = false

    func validate() throws {
        try ArgumentRefusal.checking { () throws(CommandFailure) in
            guard timeout > .zero, timeout <= .seconds(86_400) else {
                throw CommandFailure.usage("--timeout must be more than 0 and at most 86400 seconds (got \(timeout.inSeconds))")
            }
        }
    }

    func run() async throws {
        let (endpoints, refused) = try allEndpoints()
        var options = TLSAudit.Options(
            policy: try chainPolicy.policy(), trustStore: try chainPolicy.trustStore(),
            serverName: try servername.map { try parseServerName($0, option: "--servername") },
            verificationTime: chainPolicy.at?.date, timeout: timeout)
        options.clientCertificate = try clientCertificate.checked()
        let responders = try await OCSPResponderSession.start(for: options.policy, trustStore: options.trustStore)
        defer { responders?.stop() }
        options.ocspResponder = responders?.session
        var batch = TLSAuditBatch(endpoints) { endpoint in
            var options = options
            options.connectTo = connect?.endpoint(defaultPort: endpoint.port)
            return options
        }
        // Every connection on one thread, a handshake engine's, instead of a pool thread held per audit; no
        // reachability gate, as an audit never had one.
        let engine = AuditEngine()
        defer { engine.shutdown() }
        batch.connector = engine.connector
        let progress = AuditProgress(total: endpoints.count)
        // With --json, one object: a single host's audit, or, for several, every host's in the order given.
        let collectsJSON = json && endpoints.count + refused.count > 1
        var objects: [JSONValue] = []
        var worst = 0
        var worstError = JSONValue.null
        var first = true
        try await batch.run(progress: progress.show(done:)) { audit throws(CommandFailure) in
            progress.clear()
            if collectsJSON {
                objects.append(AuditText.json(audit))
            } else {
                try writeOutput(json ? AuditText.json(audit).encoded() + "\n" : AuditText.text(audit, first: first))
            }
            first = false
            if Self.rank(audit.outcome.severity) > Self.rank(worst) {
                worst = audit.outcome.severity
                worstError = AuditText.errorJSON(audit)
            }
        }
        progress.clear()
        // The HOST arguments that are not HOST[:PORT]: named after the others were audited, one line each (and
        // with --json one entry each), and the exit is 64 unless a host failed its chain or pins.
        for (host, message) in refused {
            let failure = CommandFailure.usage(message)
            let error = ScriptContract.errorFields(category: failure.category, message: message, exitCode: failure.exitCode.rawValue)
            if json {
                objects.append(.object([("host", .string(host)), ("exit_code", .int(64)), ("error", error)]))
            }
            try? LineOutput(descriptor: STDERR_FILENO).write(ScriptContract.errorLine(message))
            if Self.rank(Int(failure.exitCode.rawValue)) > Self.rank(worst) {
                worst = Int(failure.exitCode.rawValue)
                worstError = error
            }
        }
        if collectsJSON {
            let summary = JSONValue.object([("audits", .array(objects)), ("exit_code", .int(worst)), ("error", worstError)])
            try writeOutput(summary.encoded() + "\n")
        }
        if worst != 0 { throw ExitCode(Int32(worst)) }
    }

    /// How serious an exit code is among several hosts': a chain (2) or pin (1) failure, what an interception
    /// looks like, before a usage error (64), before a failed connection (3), which anyone on the path can cause and
    /// so must never hide the others.
    static func rank(_ exitCode: Int) -> Int {
        switch exitCode {
        case 2: 4
        case 1: 3
        case 64: 2
        case 3: 1
        default: 0
        }
    }

    /// The HOST arguments, then the lines of `--file`; and the HOST arguments that are not HOST[:PORT], with why.
    private func allEndpoints() throws(CommandFailure) -> ([TLSEndpoint], refused: [(host: String, message: String)]) {
        var endpoints: [TLSEndpoint] = []
        var refused: [(host: String, message: String)] = []
        for host in hosts {
            do {
                endpoints.append(try TLSEndpoint(parsing: host))
            } catch {
                refused.append((host, "\(error)"))
            }
        }
        if let hostFile {
            do {
                endpoints += try TLSEndpoint.list(contentsOf: hostFile)
            } catch {
                throw CommandFailure.usage("--file \(error)")
            }
        }
        if endpoints.isEmpty, let first = refused.first, refused.count == 1 { throw CommandFailure.usage(first.message) }
        guard !endpoints.isEmpty || !refused.isEmpty else {
            throw CommandFailure.usage("give at least one HOST[:PORT], or --file with some")
        }
        return (endpoints, refused)
    }
}

/// The progress line on standard error, only when it is a terminal: `pinpath audit: 3/10 hosts`.
private struct AuditProgress {
    let total: Int
    let enabled = isatty(STDERR_FILENO) == 1

    func show(done: Int) {
        guard enabled else { return }
        try? LineOutput(descriptor: STDERR_FILENO).write("\r\u{1B}[Kpinpath audit: \(done)/\(total) hosts")
    }

    func clear() {
        guard enabled else { return }
        try? LineOutput(descriptor: STDERR_FILENO).write("\r\u{1B}[K")
    }
}
