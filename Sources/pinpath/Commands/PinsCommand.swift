import ArgumentParser
import Glibc
import PinpathSecurity
import PinpathSupport

struct PinsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pins",
        abstract: "Print the SPKI pin of every certificate, public key, private key or CSR in the files.",
        discussion: """
            Reads PEM (bundles too) or DER. One line per object found: `sha256/<base64> <subject or key>`, or \
            with --format hpkp `pin-sha256="<base64>" <subject or key>`. Every file is reported: the pins of \
            those that can be read are printed, each one that cannot is named on stderr (one line each). With \
            --json, one object: {"files":[{"file":…,"pins":[{"pin":…,"hpkp":…,"label":…}]} or \
            {"file":…,"error":{…}}],"error":null or {"category":"data","message":…,"exit_code":65}}.
            Exit codes: 0 printed; 64 usage error; 65 a file cannot be read or holds nothing usable (the others \
            are still printed); 74 output error.
            """)

    enum Format: String, ExpressibleByArgument, CaseIterable {
        case pin
        case hpkp
    }

    @Argument(help: "Certificate, key or CSR files (PEM or DER).")
    var files: [String]

    @Option(help: "pin: sha256/<base64> (OkHttp, TrustKit); hpkp: pin-sha256=\"<base64>\" (RFC 7469).")
    var format: Format = .pin

    @Flag(help: "Print one JSON object: each file with its pins, or what was wrong with it.")
    var json = false

    /// One file's pins, or why there are none.
    private struct FileResult {
        var file: String
        var pins: Result<[KeyMaterial], CommandFailure>
    }

    func run() async throws {
        let results = files.map { file in
            FileResult(file: file, pins: Result { () throws(CommandFailure) in try Self.load(file) })
        }
        let failures = results.compactMap { result -> CommandFailure? in
            if case .failure(let failure) = result.pins { return failure }
            return nil
        }
        if json {
            try writeOutput(Self.json(results, failures: failures).encoded() + "\n")
        } else {
            // A label is a certificate's subject, chosen by whoever made it: OpenSSL's RFC 2253 form escapes
            // most controls already, and the terminal's rule for text from outside covers the rest.
            let lines = results.flatMap { result in
                ((try? result.pins.get()) ?? []).map { "\(Self.pin($0, format: format)) \($0.label)" }
            }
            try writeOutput(UntrustedText.escapedLines(lines))
        }
        for failure in failures {
            try? LineOutput(descriptor: STDERR_FILENO).write(ScriptContract.errorLine(failure.message))
        }
        if let failure = failures.first { throw failure.exitCode }
    }

    private static func load(_ file: String) throws(CommandFailure) -> [KeyMaterial] {
        do {
            return try KeyMaterial.load(contentsOf: file)
        } catch {
            throw CommandFailure.data("\(error)")
        }
    }

    private static func pin(_ material: KeyMaterial, format: Format) -> String {
        format == .hpkp ? material.spkiPin.hpkp : material.spkiPin.description
    }

    private static func json(_ results: [FileResult], failures: [CommandFailure]) -> JSONValue {
        let files = results.map { result -> JSONValue in
            switch result.pins {
            case .success(let found):
                let pins = found.map { material -> JSONValue in
                    .object([
                        ("pin", .string(material.spkiPin.description)), ("hpkp", .string(material.spkiPin.hpkp)),
                        ("label", .string(material.label)),
                    ])
                }
                return .object([("file", .string(result.file)), ("pins", .array(pins))])
            case .failure(let failure):
                let error = ScriptContract.errorFields(
                    category: failure.category, message: failure.message, exitCode: failure.exitCode.rawValue)
                return .object([("file", .string(result.file)), ("error", error)])
            }
        }
        let error: JSONValue =
            failures.first.map { first in
                let message = failures.count == 1 ? first.message : "\(failures.count) of \(results.count) files: \(first.message)"
                return ScriptContract.errorFields(category: first.category, message: message, exitCode: first.exitCode.rawValue)
            } ?? .null
        return .object([("files", .array(files)), ("error", error)])
    }
}
