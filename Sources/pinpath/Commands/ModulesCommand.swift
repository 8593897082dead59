import ArgumentParser
import PinpathAgent

struct ModulesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "modules",
        abstract: "Print pinpath modules: converted from blackbox_exporter's configuration.",
        discussion: """
            --from-blackbox FILE reads blackbox_exporter's configuration (blackbox.yml) and prints the \
            equivalent modules: YAML on stdout, with the policies: they need (one per tls_config.ca_file), in \
            the file's order. The http and tcp probers' options that map are converted (tcp with tls: true is \
            a tls module; a query_response with STARTTLS an smtp, imap, pop3 or ftp module); every option \
            that does not map gets a comment saying why, and modules of other probers (icmp, dns, grpc, unix, \
            websocket) are skipped with a comment. Secrets (basic_auth, bearer tokens, credential headers, a \
            proxy's password) are never copied: their headers read ${NAME} from the agent's environment and a \
            comment names the variable. Check the result with `pinpath check-config`.
            Exit codes: 0 printed; 64 usage error; 65 the file cannot be read, is not YAML, or is not \
            blackbox_exporter's configuration (no modules: mapping); 74 output error.
            """)

    @Option(
        name: .customLong("from-blackbox"), help: ArgumentHelp("blackbox_exporter's configuration file (blackbox.yml).", valueName: "file"))
    var fromBlackbox: String

    func run() async throws {
        let text: String
        do {
            text = try BlackboxModuleConversion.convert(fileAt: fromBlackbox)
        } catch {
            // One problem: the file, where, and what was wrong.
            throw CommandFailure.data(error.problems.map(\.description).joined(separator: "; "))
        }
        try writeOutput(text)
    }
}
