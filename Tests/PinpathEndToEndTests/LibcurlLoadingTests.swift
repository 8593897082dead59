import Foundation
import PinpathTestSupport
import Testing

/// libcurl is opened when a command first makes a request, not linked: commands that make none start without
/// it, and a libcurl that cannot be opened is one clear error line, not a crash.
@Suite("libcurl loaded on first request")
struct LibcurlLoadingTests {
    /// The shared objects the dynamic loader opened while running `arguments` (LD_DEBUG=libs), and the result.
    func loadedLibraries(_ arguments: [String], libraryPath: String? = nil) throws -> (libraries: [String], result: Shell.Result) {
        let environment = ["LD_DEBUG=libs"] + (libraryPath.map { ["LD_LIBRARY_PATH=\($0)"] } ?? [])
        let result = try Shell.run(["/usr/bin/env"] + environment + [Shell.pinpath] + arguments, input: "")
        let libraries = result.stderr.split(separator: "\n").compactMap { line -> String? in
            guard let range = line.range(of: "calling init: ") else { return nil }
            return String(line[range.upperBound...])
        }
        return (libraries, result)
    }

    @Test("--version, pins and check-config run without libcurl; a request loads it")
    func onlyRequestsLoadLibcurl() throws {
        let scratch = try TemporaryDirectory("libcurl")
        let directory = scratch.path
        let configuration = "\(directory)/pinpath.yaml"
        try "endpoints: []\n".write(toFile: configuration, atomically: true, encoding: .utf8)
        for arguments in [["--version"], ["check-config", "--config", configuration]] {
            let (libraries, result) = try loadedLibraries(arguments)
            #expect(result.status == 0, "\(arguments): \(result.stderr.suffix(400))")
            #expect(!libraries.isEmpty, "LD_DEBUG printed nothing for \(arguments)")
            #expect(!libraries.contains { $0.contains("libcurl") }, "\(arguments) loaded \(libraries)")
        }
        let (libraries, request) = try loadedLibraries(["request", "http://127.0.0.1:1/"])
        #expect(request.status == 3, "connection refused: \(request.stderr.suffix(400))")
        #expect(libraries.contains { $0.hasSuffix("/libcurl.so.4") }, "\(libraries)")
    }

    @Test("A libcurl that cannot be opened, or that lacks a function, is one error line naming it; other commands still work")
    func unusableLibcurl() throws {
        let scratch = try TemporaryDirectory("libcurl")
        let directory = scratch.path
        let broken = "\(directory)/broken"
        let wrong = "\(directory)/wrong"
        for path in [broken, wrong] { try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true) }
        // Not a shared object at all; a real shared object with none of libcurl's functions.
        try "not a library".write(toFile: "\(broken)/libcurl.so.4", atomically: true, encoding: .utf8)
        let libyaml = URL(fileURLWithPath: "/usr/lib/x86_64-linux-gnu/libyaml-0.so.2").resolvingSymlinksInPath().path
        try FileManager.default.copyItem(atPath: libyaml, toPath: "\(wrong)/libcurl.so.4")

        for (libraryPath, reason) in [(broken, "libcurl.so.4"), (wrong, "libcurl.so.4 has no curl_global_init")] {
            let environment = ["LD_LIBRARY_PATH=\(libraryPath)"]
            let request = try Shell.run(["/usr/bin/env"] + environment + [Shell.pinpath, "request", "http://127.0.0.1:1/"], input: "")
            let lines = request.stderr.split(separator: "\n")
            #expect(lines.count == 1, "one line: \(request.stderr)")
            #expect(request.stderr.hasPrefix("pinpath: error: "), "\(request.stderr)")
            #expect(
                request.stderr.contains("libcurl could not be loaded") && request.stderr.contains(reason),
                "\(libraryPath): \(request.stderr)")
            #expect(request.status > 0 && request.status < 128, "an exit status, not a signal: \(request.status)")
            let version = try Shell.run(["/usr/bin/env"] + environment + [Shell.pinpath, "--version"], input: "")
            #expect(version.status == 0 && version.stdout.hasPrefix("pinpath "), "\(version.stderr)")
        }
    }
}
