import Foundation
import PinpathSupport
import PinpathTestSupport
import Testing

/// What a user installs: the version, `scripts/install` and the Debian package, checked as a user would
/// (the installed binary run, the man page rendered, the completion asked, the unit verified by systemd).
///
/// The release build is the slow part: the install test makes it (in .build-run, as scripts/run and
/// scripts/install do), and the package build after it reuses it.
@Suite("Packaging: versions, scripts/install, the Debian package", .serialized)
struct PackagingTests {
    static let checkout = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path

    @Test("One version: CHANGELOG.md's latest release and debian/changelog say PinpathVersion.current")
    func versionsAgree() throws {
        let changelog = try String(contentsOfFile: "\(Self.checkout)/CHANGELOG.md", encoding: .utf8)
        let release = changelog.split(separator: "\n").first { $0.hasPrefix("## [") && !$0.hasPrefix("## [Unreleased]") }
        #expect(release?.hasPrefix("## [\(PinpathVersion.current)] - ") == true, "\(release ?? "no release heading")")
        let debian = try String(contentsOfFile: "\(Self.checkout)/debian/changelog", encoding: .utf8)
        #expect(debian.hasPrefix("pinpath (\(PinpathVersion.current)) "), "\(debian.prefix(80))")
    }

    @Test("pinpath --version names the version and, built from a git checkout, its commit")
    func versionLine() throws {
        let result = try Shell.run([Shell.pinpath, "--version"])
        #expect(result.status == 0 && result.stderr.isEmpty)
        let head = try? Shell.run(["git", "-C", Self.checkout, "rev-parse", "--short=7", "HEAD"])
        if let head, head.status == 0 {
            let commit = head.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(PinpathVersion.commit == commit)
            #expect(result.stdout == "pinpath \(PinpathVersion.current) (git \(commit))\n")
        } else {
            print("PackagingTests: \(Self.checkout) is not a git checkout: the version line has no commit")
            #expect(PinpathVersion.commit == nil)
            #expect(result.stdout == "pinpath \(PinpathVersion.current)\n")
        }
    }

    @Test(
        "scripts/install refuses a bad argument, naming it, before building anything",
        arguments: [
            (["--prefix", "usr/local"], "scripts/install: --prefix \"usr/local\" is not an absolute path\n"),
            (["--destdir"], "scripts/install: --destdir needs a directory (usage: "),
            (["--prefix", "--destdir", "/tmp/x"], "scripts/install: --prefix needs a directory (usage: "),
            (["--frobnicate"], "scripts/install: unknown argument \"--frobnicate\" (usage: "),
        ])
    func installRefusesBadArguments(arguments: [String], message: String) throws {
        let result = try Shell.run(["\(Self.checkout)/scripts/install"] + arguments)
        #expect(result.status == 64)
        #expect(result.stderr.hasPrefix(message), "\(result.stderr)")
        #expect(result.stderr.split(separator: "\n").count == 1)
    }

    @Test("scripts/install --destdir: binary, man pages, completions, configuration (kept), the unit at the prefix's binary")
    func install() throws {
        let stage = try Self.temporaryDirectory("pinpath-install")
        defer { try? FileManager.default.removeItem(atPath: stage) }
        try Self.runLogged(["\(Self.checkout)/scripts/install", "--prefix", "/opt/pp", "--destdir", stage], log: "\(stage).log")
        let root = "\(stage)/opt/pp"

        let version = try Shell.run(["\(root)/bin/pinpath", "--version"])
        #expect(version.status == 0 && version.stdout.hasPrefix("pinpath \(PinpathVersion.current)"), "\(version.stdout)")
        let pages = try FileManager.default.contentsOfDirectory(atPath: "\(root)/share/man/man1").sorted()
        for command in ["", "-audit", "-check-config", "-pins", "-request", "-run", "-status", "-verify", "-watch"] {
            #expect(pages.contains("pinpath\(command).1"), "\(pages)")
        }
        // The page renders, and says what `pinpath audit --help` says.
        let page = try Shell.run(["/bin/sh", "-c", "MANWIDTH=100 man -l '\(root)/share/man/man1/pinpath-audit.1' | col -b"])
        #expect(page.status == 0, "\(page.stderr)")
        #expect(page.stdout.contains("pinpath-audit") && page.stdout.contains("Connect to TLS servers"), "\(page.stdout.prefix(600))")
        #expect(page.stdout.contains("pinpath audit [hosts...]") && page.stdout.contains("--json"), "\(page.stdout.prefix(600))")
        #expect(!page.stderr.contains("warning"), "\(page.stderr)")

        // Bash completes the subcommands, as typing `pinpath au<TAB>` asks.
        let completion = "\(root)/share/bash-completion/completions/pinpath"
        let completed = try Shell.run([
            "/bin/bash", "-c",
            "source '\(completion)'; COMP_WORDS=(pinpath au); COMP_CWORD=1; COMP_LINE='pinpath au'; COMP_POINT=10; "
                + "_pinpath pinpath au pinpath; printf '%s\\n' \"${COMPREPLY[@]}\"",
        ])
        #expect(completed.stdout.split(separator: "\n").contains("audit"), "\(completed.stdout) \(completed.stderr)")
        #expect(FileManager.default.fileExists(atPath: "\(root)/share/zsh/site-functions/_pinpath"))
        #expect(FileManager.default.fileExists(atPath: "\(root)/share/fish/vendor_completions.d/pinpath.fish"))

        let unit = try String(contentsOfFile: "\(stage)/etc/systemd/system/pinpath.service", encoding: .utf8)
        #expect(unit.contains("\nExecStart=/opt/pp/bin/pinpath run --config /etc/pinpath/pinpath.yaml\n"))
        #expect(!unit.contains("/usr/local/bin/pinpath"))
        let config = "\(stage)/etc/pinpath/pinpath.yaml"
        #expect(FileManager.default.contentsEqual(atPath: config, andPath: "\(Self.checkout)/etc/pinpath.yaml"))

        // Again, with the configuration edited: it stays the administrator's; everything else is put back.
        try "# edited\n".write(toFile: config, atomically: true, encoding: .utf8)
        try FileManager.default.removeItem(atPath: "\(root)/bin/pinpath")
        let again = try Self.runLogged(
            ["\(Self.checkout)/scripts/install", "--prefix", "/opt/pp", "--destdir", stage], log: "\(stage).log")
        #expect(again.contains("scripts/install: kept \(config)"), "\(again)")
        #expect(try String(contentsOfFile: config, encoding: .utf8) == "# edited\n")
        #expect(FileManager.default.isExecutableFile(atPath: "\(root)/bin/pinpath"))
    }

    @Test(
        "dpkg-buildpackage -b: the .deb holds the binary, pages, completions, unit and conffile; lintian; systemd-analyze verify",
        .enabled(if: Self.debianTools.isEmpty, "needs \(Self.debianTools.joined(separator: ", ")) (scripts/test installs them)"))
    func debianPackage() throws {
        let output = try Self.temporaryDirectory("pinpath-deb")
        defer { try? FileManager.default.removeItem(atPath: output) }
        // The .deb files go to the temporary directory, not the checkout's parent (dpkg-buildpackage's default);
        // no debug symbols package, which only costs time here.
        let build = [
            "/usr/bin/env", "PINPATH_DEB_DESTDIR=\(output)", "DEB_BUILD_OPTIONS=noautodbgsym", "dpkg-buildpackage", "-b", "--no-sign",
            "--buildinfo-file=\(output)/pinpath.buildinfo", "--buildinfo-option=-u\(output)",
            "--changes-file=\(output)/pinpath.changes", "--changes-option=-u\(output)",
        ]
        try Self.runLogged(["/bin/sh", "-c", "cd '\(Self.checkout)' && exec \"$@\"", "sh"] + build, log: "\(output)/build.log")
        let deb = "\(output)/pinpath_\(PinpathVersion.current)_amd64.deb"

        let contents = try Shell.check(["dpkg-deb", "-c", deb])
        for path in [
            "./usr/bin/pinpath", "./usr/share/man/man1/pinpath.1.gz", "./usr/share/man/man1/pinpath-audit.1.gz",
            "./usr/share/bash-completion/completions/pinpath", "./usr/share/zsh/vendor-completions/_pinpath",
            "./usr/share/fish/vendor_completions.d/pinpath.fish", "./lib/systemd/system/pinpath.service",
            "./etc/pinpath/pinpath.yaml", "./usr/share/doc/pinpath/copyright",
        ] {
            #expect(contents.contains(" \(path)\n"), "\(path) is not in the package")
        }
        let info = try Self.temporaryDirectory("pinpath-deb-info")
        defer { try? FileManager.default.removeItem(atPath: info) }
        try Shell.check(["dpkg-deb", "-e", deb, info])
        #expect(
            try String(contentsOfFile: "\(info)/conffiles", encoding: .utf8).split(separator: "\n").contains("/etc/pinpath/pinpath.yaml"))
        // debhelper writes the postinst; with --no-enable --no-start it starts nothing, and enables the unit again
        // only where the administrator had enabled it before (an upgrade).
        let postinst = (try? String(contentsOfFile: "\(info)/postinst", encoding: .utf8)) ?? ""
        #expect(!postinst.contains("deb-systemd-invoke") && !postinst.contains("systemctl"), "\(postinst)")
        let postinstLines = postinst.split(separator: "\n")
        for (index, line) in postinstLines.enumerated() where line.contains("deb-systemd-helper enable") {
            #expect(postinstLines[max(0, index - 3)..<index].contains { $0.contains("was-enabled") }, "\(postinst)")
        }
        let control = try String(contentsOfFile: "\(info)/control", encoding: .utf8)
        #expect(control.contains("\nVersion: \(PinpathVersion.current)\n"), "\(control)")

        // lintian's verdict is printed for the record; an error fails the test, warnings do not.
        let lintian = try Shell.run(["lintian", "--no-tag-display-limit", "--display-info", deb])
        print("PackagingTests: lintian \(deb) (exit \(lintian.status)):\n\(lintian.stdout)\(lintian.stderr)")
        let errors = lintian.stdout.split(separator: "\n").filter { $0.hasPrefix("E: ") }
        #expect(errors.isEmpty, "lintian errors: \(errors)")

        // systemd checks the unit as installed, on a copy that names the extracted binary.
        let extracted = "\(output)/root"
        try Shell.check(["dpkg-deb", "-x", deb, extracted])
        let unit = try String(contentsOfFile: "\(extracted)/lib/systemd/system/pinpath.service", encoding: .utf8)
        #expect(unit.contains("\nExecStart=/usr/bin/pinpath run --config /etc/pinpath/pinpath.yaml\n"))
        try unit.replacingOccurrences(of: "/usr/bin/pinpath", with: "\(extracted)/usr/bin/pinpath")
            .write(toFile: "\(output)/pinpath.service", atomically: true, encoding: .utf8)
        let verify = try Shell.run(["systemd-analyze", "verify", "\(output)/pinpath.service"])
        #expect(verify.status == 0, "\(verify.stdout)\(verify.stderr)")
        #expect(!verify.stderr.contains("pinpath.service"), "\(verify.stderr)")
        let installed = try Shell.run(["\(extracted)/usr/bin/pinpath", "--version"])
        #expect(installed.status == 0 && installed.stdout.hasPrefix("pinpath \(PinpathVersion.current)"), "\(installed.stdout)")

        // The status page is compiled into the static binary (SwiftPM's embedInCode), not a file of the package.
        #expect(!contents.contains("status.js") && !contents.contains("index.html"), "\(contents)")
        try Self.expectStatusPage(served: "\(extracted)/usr/bin/pinpath", in: output)
    }

    /// Runs `binary` as the agent with a listener on loopback and expects `/`, `/status.css` and `/status.js` to be the
    /// source tree's files, byte for byte.
    static func expectStatusPage(served binary: String, in directory: String) throws {
        let listen = "127.0.0.1:\(try TLSServer.freePort())"
        try """
        events: { output: \(directory)/events.jsonl }
        metrics: { listen: "\(listen)" }
        endpoints:
          - { name: api, url: "https://localhost:9/", interval: 60s }
        """.write(toFile: "\(directory)/status-page.yaml", atomically: true, encoding: .utf8)
        let devNull = open("/dev/null", O_WRONLY)
        defer { close(devNull) }
        let agent = try Shell.spawn([binary, "run", "--config", "\(directory)/status-page.yaml"], stdout: devNull, stderr: devNull)
        defer { Shell.kill(agent) }
        let deadline = ContinuousClock.now + .seconds(20)
        while try Shell.run(["/usr/bin/curl", "-sf", "--max-time", "5", "http://\(listen)/healthz"]).status != 0 {
            guard ContinuousClock.now < deadline else { throw ShellError(description: "\(binary) run did not listen on \(listen)") }
            usleep(100_000)
        }
        let assets = "\(checkout)/Sources/PinpathAgent/StatusPage/Assets"
        for (path, file) in [("/", "index.html"), ("/status.css", "status.css"), ("/status.js", "status.js")] {
            let served = try Shell.run(["/usr/bin/curl", "-sf", "--max-time", "10", "http://\(listen)\(path)"])
            let source = try String(contentsOfFile: "\(assets)/\(file)", encoding: .utf8)
            #expect(served.status == 0 && served.stdout == source, "\(path)")
        }
    }

    /// The Debian tools the package test needs and this machine lacks.
    static let debianTools: [String] = ["dpkg-buildpackage", "dh", "lintian", "systemd-analyze"].filter { tool in
        !["/usr/bin", "/bin", "/usr/sbin"].contains { FileManager.default.isExecutableFile(atPath: "\($0)/\(tool)") }
    }

    static func temporaryDirectory(_ prefix: String) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(getpid())").path
        try? FileManager.default.removeItem(atPath: path)
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    /// Runs a long, chatty command with its output in a file (a build prints more than a pipe holds) and fails
    /// with the end of that file if it exits non-zero. Returns the output.
    @discardableResult
    static func runLogged(_ arguments: [String], log: String) throws -> String {
        let result = try Shell.run(["/bin/sh", "-c", "\"$@\" > '\(log)' 2>&1", "sh"] + arguments)
        let output = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        try? FileManager.default.removeItem(atPath: log)
        guard result.status == 0 else {
            throw ShellError(description: "\(arguments.joined(separator: " ")) exited \(result.status):\n\(output.suffix(3000))")
        }
        return output
    }
}
