import Foundation
import PinpathTestSupport
import Testing

/// The README's command table (under `## Commands`) against each subcommand's `--help`: a row per subcommand,
/// only options the command has, `--json` wherever the command has it, and the same exit codes.
@Suite("README command table matches --help")
struct ReadmeCommandTableTests {
    struct Row {
        var command: String
        var synopsis: String
        var exitCodes: Set<Int>
    }

    static func rows() throws -> [Row] {
        let readme = URL(filePath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appending(path: "README.md")
        let lines = try String(contentsOf: readme, encoding: .utf8).split(separator: "\n").map(String.init)
        let header = try #require(lines.firstIndex(of: "| command | what it does | exit codes |"), "the README has no command table")
        return lines[(header + 2)...].prefix { $0.hasPrefix("|") }.map { line in
            // `\|` inside a cell (`pin\|hpkp`) is not a column separator.
            let cells = line.replacing("\\|", with: "/").split(separator: "|", omittingEmptySubsequences: false).map(String.init)
            let synopsis = cells[1].trimmingCharacters(in: .whitespaces)
            let command = synopsis.split(separator: " ").dropFirst().first.map(String.init) ?? ""
            return Row(command: command, synopsis: synopsis, exitCodes: numbers(in: cells[cells.count - 2]))
        }
    }

    /// The one- and two-digit numbers of a text (exit codes), not parts of `2xx`, `200-299` or versions.
    static func numbers(in text: String) -> Set<Int> {
        let tokens = text.split { !($0.isLetter || $0.isNumber || $0 == "." || $0 == "-") }
        return Set(
            tokens.compactMap { token in
                let word = token.hasSuffix(".") ? token.dropLast() : token
                return word.count <= 2 && word.allSatisfy(\.isNumber) ? Int(word) : nil
            })
    }

    /// The long options a text names: `--json`, `--pin-file`.
    static func longOptions(in text: String) -> Set<String> {
        Set(text.matches(of: /--[a-z][a-z0-9-]*/).map { String($0.output) })
    }

    static func help(_ arguments: [String]) throws -> String {
        let text = try Shell.check([Shell.pinpath] + arguments + ["--help"])
        return text.split(whereSeparator: \.isWhitespace).joined(separator: " ")
    }

    @Test("One row per subcommand of pinpath --help")
    func everySubcommand() throws {
        let help = try Shell.check([Shell.pinpath, "--help"])
        let section = try #require(help.range(of: "SUBCOMMANDS:"))
        let subcommands = help[section.upperBound...].split(separator: "\n").compactMap { line -> String? in
            guard line.hasPrefix("  "), !line.hasPrefix("   "), let name = line.split(separator: " ").first else { return nil }
            return String(name)
        }.filter { $0 != "See" }
        let rows = try Self.rows().map(\.command)
        #expect(rows.sorted() == subcommands.sorted(), "\(rows) \(subcommands)")
    }

    @Test("Each row names only options its command has, --json where the command has it, and its exit codes")
    func rowsMatchHelp() throws {
        for row in try Self.rows() {
            let help = try Self.help([row.command])
            let options = Self.longOptions(in: help)
            let named = Self.longOptions(in: row.synopsis)
            #expect(named.subtracting(options).isEmpty, "\(row.command): not in --help: \(named.subtracting(options).sorted())")
            #expect(options.contains("--json") == named.contains("--json"), "\(row.command): --json in the row as in --help")
            let exitText = try #require(help.range(of: "Exit codes:").map { String(help[$0.upperBound...]) }, "\(row.command)")
            let helpCodes = Self.numbers(in: exitText.components(separatedBy: " USAGE:").first ?? exitText)
            #expect(row.exitCodes == helpCodes, "\(row.command): README \(row.exitCodes.sorted()), --help \(helpCodes.sorted())")
        }
    }
}
