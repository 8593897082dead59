import ArgumentParser
import PinpathAgent
import PinpathSecurity
import PinpathSupport

struct VerifyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Judge a certificate chain read from a file, as audit judges a served one: no network.",
        discussion: """
            CHAIN holds the leaf first, then what a server would send with it (PEM, several blocks; or one DER \
            certificate); keys in the file are ignored. The same policy engine as a handshake judges it: the \
            chain against --ca-file (or the system store), the name against --host (not checked without it), \
            the pins, the profile's rules, as of --at. The output is audit's.

            Will a rotation lock clients out? Give the new chain and the pins the clients hold (--pin-file, \
            `sha256/…` lines as `pinpath pins` prints them): exit 1 means they would reject it. Will the chain \
            still pass on a date? --at 2027-03-01.

            Exit codes: 0 trusted (and pinned, if pins were given); 1 pin mismatch; 2 chain or host invalid or revoked; \
            64 usage error (a bad option, --pin, --pin-file, --ca-file or --at); 65 CHAIN unreadable or holding \
            no certificate.
            """)

    @Argument(help: ArgumentHelp("The chain file, leaf first (PEM or DER).", valueName: "chain"))
    var chainFile: String

    @Option(help: "The host name or IP address the chain must be valid for (default: the name is not checked).")
    var host: String?

    @OptionGroup var chainPolicy: ChainPolicyOptions

    @Flag(help: "Print one JSON object, as audit --json does.")
    var json = false

    func run() async throws {
        var options = TLSAudit.Options(
            policy: try chainPolicy.policy(), trustStore: try chainPolicy.trustStore(),
            serverName: try host.map { try parseServerName($0, option: "--host") }, verificationTime: chainPolicy.at?.date)
        let responders = try await OCSPResponderSession.start(for: options.policy, trustStore: options.trustStore)
        defer { responders?.stop() }
        options.ocspResponder = responders?.session
        let chain: [Certificate]
        do {
            chain = try Certificate.chain(contentsOf: chainFile)
        } catch {
            throw CommandFailure.data("\(error)")
        }
        let audit = await TLSAudit.run(chainAtRest: chain, file: chainFile, options: options)
        try writeOutput(json ? AuditText.json(audit).encoded() + "\n" : AuditText.text(audit, first: true))
        if audit.outcome.severity != 0 { throw ExitCode(Int32(audit.outcome.severity)) }
    }
}
