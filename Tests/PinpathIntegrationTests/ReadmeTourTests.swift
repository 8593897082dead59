import Foundation
import PinpathTestSupport
import Testing

/// The README's five-minute tour, run as written: the shell block between `<!-- tour -->` and
/// `<!-- /tour -->`, in a scratch directory, with the built `pinpath` first on `PATH`. A tour that no
/// longer works for a new user fails here.
@Suite("The README's tour works as written")
struct ReadmeTourTests {
    static let readme = URL(filePath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appending(path: "README.md")

    /// The commands of the tour's shell block.
    static func tourScript() throws -> String {
        let text = try String(contentsOf: readme, encoding: .utf8)
        let start = try #require(text.range(of: "<!-- tour -->\n```sh\n"), "the README has no <!-- tour --> block")
        let end = try #require(
            text.range(of: "```\n<!-- /tour -->", range: start.upperBound..<text.endIndex), "the tour block is not closed")
        return String(text[start.upperBound..<end.lowerBound])
    }

    @Test("The tour audits, pins and probes a server, then reports the rotated key as a pin failure")
    func tour() throws {
        guard (try? Shell.path(of: "openssl")) != nil else {
            print("skipped: the tour needs the openssl command")
            return
        }
        let directory = GeneratedDirectory.make("pinpath-tour", what: "the tour's directory", script: "true")
        let binaries = URL(filePath: Shell.pinpath).deletingLastPathComponent().path
        // The tour's port, 8443, may be taken on a test machine: a free one stands in for it. -e: a command of
        // the tour that fails unexpectedly ends it; the trap stops a server left behind; timeout bounds it all.
        let port = try TLSServer.freePort()
        let tour = try Self.tourScript().replacingOccurrences(of: "8443", with: "\(port)")
        let script = "set -e\ntrap 'kill $(jobs -p) 2>/dev/null || true' EXIT\ncd \(directory)\n" + tour
        // The test process blocks most signals and its children inherit that mask: python3 clears it, so
        // the tour's `kill` stops its server as it would in a user's shell.
        let unblocked = "import os, signal, sys; signal.pthread_sigmask(signal.SIG_SETMASK, []); os.execvp(sys.argv[1], sys.argv[1:])"
        let result = try Shell.run(
            [
                "/usr/bin/env", "PATH=\(binaries):/usr/sbin:/usr/bin:/sbin:/bin", "python3", "-c", unblocked,
                "timeout", "120", "bash", "-c", script,
            ], input: "")
        let output = result.stdout
        #expect(result.status == 0, "the tour failed (exit \(result.status)):\n\(output)\n\(result.stderr)")
        #expect(output.contains("result     trusted (exit 0)"), "audit did not trust the tour's server:\n\(output)")
        #expect(output.contains("pinpath.yaml: valid"), "check-config refused the tour's configuration:\n\(output)")
        let events = output.split(separator: "\n").filter { $0.hasPrefix("{") }
        #expect(events.contains { $0.contains(#""event":"endpoint.state_changed""#) && $0.contains(#""state":"up""#) })
        #expect(events.contains { $0.contains(#""event":"pin.failure""#) && $0.contains(#""enforced":true"#) })
        #expect(events.contains { $0.contains(#""event":"endpoint.state_changed""#) && $0.contains(#""state":"down""#) })
        // Both the second probe and the request were refused for the pins: exit 1 each.
        #expect(output.components(separatedBy: "exit 1\n").count - 1 == 2, "expected two refusals (exit 1):\n\(output)")
        #expect(result.stderr.contains("certificate pinning failure"), "pinpath request did not name the pin failure")
    }
}
