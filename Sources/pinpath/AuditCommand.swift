import ArgumentParser
import FoundationEssentials
import Glibc
import PinpathAgent
import PinpathSecurity

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

            Pins: --pin and --pin-file give public-key pins (mode public-key, the default); with --mode \
            certificate the certificates of --pin-file are the only anchors. An audit is a diagnostic, so one \
            pin is enough: the backup pin that enforcing policies need elsewhere in pinpath is not required.

            Hosts are audited 8 at a time; the results are printed in the order given. With --json, one JSON \
            object per host per line.

            Exit codes: 0 trusted (and pinned, if pins were given); 1 pin mismatch; 2 chain or host invalid; \
            3 cannot connect or no TLS handshake; with several hosts, the worst. 64 usage error (a bad option, \
            an unreadable --file, --pin-file or --ca-file).
            """)

    enum Mode: String, ExpressibleByArgument, CaseIterable {
        case publicKey = "public-key"
        case certificate
    }

    @Argument(help: "HOST[:PORT] to audit; an IPv6 address in brackets when a port follows ([::1]:443).")
    var hosts: [String] = []

    @Option(name: .customLong("file"), help: "Also audit the HOST[:PORT] lines of this file (# comments and blank lines ignored).")
    var hostFile: String?

    @Option(help: "The name to send as SNI and check the certificate against (default: each HOST).")
    var servername: String?

    @Option(help: "Connect to this ADDR[:PORT] instead of resolving each HOST (the port defaults to HOST's).")
    var connect: String?

    @Option(name: .customLong("pin"), help: "A pin, sha256/<base64 of the SHA-256 of the SubjectPublicKeyInfo> (repeatable).")
    var pins: [String] = []

    @Option(name: .customLong("pin-file"), help: "Pin the keys of the certificates or keys in this file (PEM or DER; repeatable).")
    var pinFiles: [String] = []

    @Option(help: "What a pin matches: public-key (any certificate of the verified chain with a pinned key) or certificate (the --pin-file certificates are the anchors).")
    var mode: Mode?

    @OptionGroup var revocationOptions: RevocationOptions

    @Option(name: .customLong("ca-file"), help: "Trust the certificates in this PEM file instead of the system store.")
    var caFile: String?

    @Option(help: "Verify as of this time (2026-01-31, 2026-01-31T12:00:00Z or @UNIX-SECONDS) instead of now.")
    var at: String?

    @Option(help: "Seconds allowed for the TCP connection and the TLS handshake of each host.")
    var timeout: Double = 10

    @Flag(help: "Print one JSON object per host.")
    var json = false

    /// How many hosts are audited at once.
    static let concurrency = 8

    func run() async throws {
        var worst = 0
        try await reportingFailures {
            try checkOptions()
            let endpoints = try parsedEndpoints()
            let options = TLSAudit.Options(
                policy: try policy(), trustStore: try trustStore(), serverName: try parsedServerName(),
                connectTo: nil, verificationTime: try verificationTime(), timeout: .seconds(timeout))
            worst = try await audit(endpoints, options: options)
        }
        if worst != 0 { throw ExitCode(Int32(worst)) }
    }

    /// Audits `concurrency` endpoints at a time and prints each result as soon as those before it are printed;
    /// returns the worst outcome's severity.
    private func audit(_ endpoints: [TLSEndpoint], options: TLSAudit.Options) async throws -> Int {
        let progress = AuditProgress(total: endpoints.count)
        let render = json ? AuditText.json : AuditText.text
        var pending: [Int: TLSAudit] = [:]
        var printed = 0
        var worst = 0
        var perEndpoint: [TLSAudit.Options] = []
        for endpoint in endpoints {
            var options = options
            options.connectTo = try connect.map { try parseEndpoint($0, option: "--connect", defaultPort: endpoint.port) }
            perEndpoint.append(options)
        }
        try await withThrowingTaskGroup(of: (Int, TLSAudit).self) { group in
            var next = 0
            func startNext() {
                guard next < endpoints.count else { return }
                let index = next, endpoint = endpoints[index], options = perEndpoint[index]
                group.addTask { (index, await TLSAudit.run(endpoint, options: options)) }
                next += 1
            }
            for _ in 0..<Self.concurrency { startNext() }
            progress.show(done: 0)
            while let (index, result) = try await group.next() {
                pending[index] = result
                startNext()
                while let ready = pending.removeValue(forKey: printed) {
                    progress.clear()
                    try write(render(ready, printed == 0))
                    worst = max(worst, ready.outcome.severity)
                    printed += 1
                }
                progress.show(done: printed + pending.count)
            }
        }
        progress.clear()
        return worst
    }

    private func write(_ text: String) throws {
        do throws(EventWriterError) {
            try LineOutput().write(text)
        } catch {
            throw CommandFailure.output(error.description)
        }
    }

    // MARK: - Arguments

    /// Checks that options make sense together. Here rather than in `validate()`, so that the message is
    /// pinpath's one line (`pinpath: error: …`) and not ArgumentParser's usage block.
    private func checkOptions() throws {
        guard timeout > 0, timeout <= 86_400 else {
            throw CommandFailure.usage("--timeout must be more than 0 and at most 86400 seconds (got \(timeout))")
        }
        if mode != nil && pins.isEmpty && pinFiles.isEmpty {
            throw CommandFailure.usage("--mode needs pins: give --pin or --pin-file")
        }
        if mode == .certificate && !pins.isEmpty {
            throw CommandFailure.usage("--pin gives public-key pins; --mode certificate takes certificates from --pin-file")
        }
    }

    private func parsedEndpoints() throws -> [TLSEndpoint] {
        var texts = hosts.map { ($0, String?.none) }
        if let hostFile {
            let bytes: [UInt8]
            do {
                bytes = try readWholeFile(hostFile)
            } catch {
                throw CommandFailure.usage("--file \(error.message)")
            }
            for (number, line) in String(decoding: bytes, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                let text = line.prefix { $0 != "#" }.trimmingPrefix { $0.isWhitespace }
                if let last = text.lastIndex(where: { !$0.isWhitespace }) {
                    texts.append((String(text[...last]), "--file \(hostFile):\(number + 1)"))
                }
            }
        }
        guard !texts.isEmpty else { throw CommandFailure.usage("give at least one HOST[:PORT], or --file with some") }
        return try texts.map { text, place in try parseEndpoint(text, option: place, defaultPort: 443) }
    }

    /// Parses HOST[:PORT]; `place` (an option, a file and line) starts the message when the text came from one.
    private func parseEndpoint(_ text: String, option place: String?, defaultPort: Int) throws -> TLSEndpoint {
        do {
            return try TLSEndpoint(parsing: text, defaultPort: defaultPort)
        } catch let error as SecurityError {
            throw CommandFailure.usage(place.map { "\($0): \(error.message)" } ?? error.message)
        }
    }

    private func parsedServerName() throws -> String? {
        guard let servername else { return nil }
        // The same rules as a HOST, without a port: the name goes into SNI and the certificate check.
        let endpoint = try parseEndpoint(servername, option: "--servername", defaultPort: 443)
        guard endpoint.host == servername || "[\(endpoint.host)]" == servername else {
            throw CommandFailure.usage("--servername \"\(servername)\" is a name, not NAME:PORT (use --connect for the port)")
        }
        return endpoint.host
    }

    private func policy() throws -> SecurityPolicy {
        var pinned: [SPKIPin] = []
        var certificates: [Certificate] = []
        for text in pins {
            do {
                pinned.append(try SPKIPin(parsing: text))
            } catch let error as SecurityError {
                throw CommandFailure.usage("--pin: \(error.message)")
            }
        }
        for file in pinFiles {
            let found: [KeyMaterial]
            do {
                found = try KeyMaterial.load(contentsOf: file)
            } catch let error as SecurityError {
                throw CommandFailure.usage("--pin-file \(error.message)")
            }
            if mode == .certificate {
                guard found.contains(where: { $0.certificate != nil }) else {
                    throw CommandFailure.usage("--pin-file \(file): --mode certificate needs certificates; it holds only keys or CSRs")
                }
                certificates += found.compactMap(\.certificate)
            } else {
                pinned += found.map(\.spkiPin)
            }
        }
        let crls = try revocationOptions.crls()
        let revocation = revocationOptions.revocation
        do {
            if !certificates.isEmpty {
                return try SecurityPolicy(
                    mode: .certificate, pinnedCertificates: certificates, requiresBackupPin: false, crls: crls,
                    revocation: revocation)
            }
            return try SecurityPolicy(
                mode: pinned.isEmpty ? .none : .publicKey, pins: pinned, requiresBackupPin: false, crls: crls,
                revocation: revocation)
        } catch let error as SecurityError {
            throw CommandFailure.usage(error.message)
        }
    }

    private func trustStore() throws -> TrustStore {
        do {
            return try caFile.map { try TrustStore(caFile: $0) } ?? TrustStore.system()
        } catch let error as SecurityError {
            throw caFile == nil
                ? CommandFailure.unavailable("the system trust store: \(error.message)")
                : CommandFailure.usage("--ca-file \(error.message)")
        }
    }

    private func verificationTime() throws -> Date? {
        guard let at else { return nil }
        if at.hasPrefix("@"), let seconds = Int64(at.dropFirst()) {
            return Date(timeIntervalSince1970: TimeInterval(seconds))
        }
        // A bare date means midnight UTC.
        let text = at.count == 10 ? at + "T00:00:00Z" : at
        guard let date = try? Date.ISO8601FormatStyle().parse(text) else {
            throw CommandFailure.usage("--at \"\(at)\" is not a time (use 2026-01-31, 2026-01-31T12:00:00Z or @UNIX-SECONDS)")
        }
        return date
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
