import ArgumentParser
import PinpathSecurity
import PinpathSupport

struct PinsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pins",
        abstract: "Print the SPKI pin of every certificate, public key, private key or CSR in the files.",
        discussion: """
            Reads PEM (bundles too) or DER. One line per object found: `sha256/<base64> <subject or key>`, or \
            with --format hpkp `pin-sha256="<base64>" <subject or key>`.
            Exit codes: 0 printed; 64 usage error; 65 a file cannot be read or holds nothing usable; 74 output error.
            """)

    enum Format: String, ExpressibleByArgument, CaseIterable {
        case pin
        case hpkp
    }

    @Argument(help: "Certificate, key or CSR files (PEM or DER).")
    var files: [String]

    @Option(help: "pin: sha256/<base64> (OkHttp, TrustKit); hpkp: pin-sha256=\"<base64>\" (RFC 7469).")
    var format: Format = .pin

    func run() async throws {
        // Read everything first, so a bad file late in the list does not leave half the output printed.
        var lines: [String] = []
        for file in files {
            let found: [KeyMaterial]
            do {
                found = try KeyMaterial.load(contentsOf: file)
            } catch {
                throw CommandFailure.data("\(error)")
            }
            for material in found {
                let pin = format == .hpkp ? material.spkiPin.hpkp : material.spkiPin.description
                lines.append("\(pin) \(material.label)")
            }
        }
        // A label is a certificate's subject, chosen by whoever made it: OpenSSL's RFC 2253 form escapes most
        // controls already, and the terminal's rule for text from outside covers the rest.
        try writeOutput(UntrustedText.escapedLines(lines))
    }
}
