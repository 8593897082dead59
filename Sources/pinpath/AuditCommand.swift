import ArgumentParser
import FoundationEssentials
import Glibc
import PinpathAgent
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

            Pins: --pin and --pin-file give public-key pins (mode public-key, the default); with --mode \
            certificate the certificates of --pin-file are the only anchors. --profile chooses the rules a chain \
            must meet beyond OpenSSL's (webpki by default); a rejection by a rule names it and the certificate. An audit is a diagnostic, so one \
            pin is enough: the backup pin that enforcing policies need elsewhere in pinpath is not required.

            Hosts are audited 8 at a time; the results are printed in the order given. With --json, one JSON \
            object per host per line.

            Exit codes: 0 trusted (and pinned, if pins were given); 1 pin mismatch; 2 chain or host invalid; \
            3 cannot connect or no TLS handshake; with several hosts, the worst. 64 usage error (a bad option, \
            an unreadable --file, --pin-file or --ca-file).
            """)

    @Argument(help: "HOST[:PORT] to audit; an IPv6 address in brackets when a port follows ([::1]:443).")
    var hosts: [String] = []

    @Option(name: .customLong("file"), help: "Also audit the HOST[:PORT] lines of this file (# comments and blank lines ignored).")
    var hostFile: String?

    @Option(help: "The name to send as SNI and check the certificate against (default: each HOST).")
    var servername: String?

    @Option(help: "Connect to this ADDR[:PORT] instead of resolving each HOST (the port defaults to HOST's).")
    var connect: String?

    @OptionGroup var chainPolicy: ChainPolicyOptions

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
                policy: try chainPolicy.policy(), trustStore: try chainPolicy.trustStore(),
                serverName: try servername.map { try parseServerName($0, option: "--servername") }, connectTo: nil,
                verificationTime: try chainPolicy.verificationTime(), timeout: .seconds(timeout))
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
        try chainPolicy.check()
    }

    private func parsedEndpoints() throws -> [TLSEndpoint] {
        var texts = hosts.map { ($0, String?.none) }
        if let hostFile {
            let bytes: [UInt8]
            do {
                bytes = try readWholeFile(hostFile)
            } catch {
                throw CommandFailure.usage("--file \(error)")
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
