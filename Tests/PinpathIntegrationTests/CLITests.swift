import Foundation
import PinpathTestSupport
import Testing

/// The `pinpath` binary, run as a user would: output, exit codes and signals.
@Suite("pinpath status and watch", .serialized)
struct CLITests {
    static let pinpath = Shell.pinpath

    @Test("An unparsable --target is a one-line error naming it, exit 64")
    func badTarget() throws {
        let result = try Shell.run([Self.pinpath, "status", "--target", "192.0.2.1", "--target", "not a host"])
        #expect(result.status == 64)
        #expect(result.stderr == "pinpath: error: --target \"not a host\" is not an IP address or host name: it contains \" \"\n")
        #expect(result.stdout.isEmpty)
    }

    @Test("ArgumentParser's usage errors are pinpath's one line with a pointer to --help, exit 64; --help still prints the usage")
    func unknownOption() throws {
        let result = try Shell.run([Self.pinpath, "watch", "--frobnicate"])
        #expect(result.status == 64)
        #expect(result.stderr == "pinpath: error: Unknown option '--frobnicate' (see 'pinpath watch --help')\n", "\(result.stderr)")
        let missing = try Shell.run([Self.pinpath, "request"])
        #expect(missing.status == 64)
        #expect(missing.stderr == "pinpath: error: Missing expected argument '<url>' (see 'pinpath request --help')\n", "\(missing.stderr)")
        let unknownCommand = try Shell.run([Self.pinpath, "frobnicate"])
        #expect(unknownCommand.status == 64)
        #expect(
            unknownCommand.stderr.hasPrefix("pinpath: error: ") && unknownCommand.stderr.hasSuffix("(see 'pinpath --help')\n"),
            "\(unknownCommand.stderr)")
        #expect(unknownCommand.stderr.split(separator: "\n").count == 1)
        let help = try Shell.run([Self.pinpath, "watch", "--help"])
        #expect(help.status == 0 && help.stdout.contains("USAGE: pinpath watch") && help.stdout.contains("Exit codes:"), "\(help.stdout)")
        let version = try Shell.run([Self.pinpath, "--version"])
        #expect(version.status == 0 && !version.stdout.isEmpty && version.stderr.isEmpty)
    }

    @Test("A namespace that does not exist is named as the problem, not netlink: exit 69, one line")
    func unavailable() throws {
        let result = try Shell.run([Self.pinpath, "status", "--netns", "pp-no-such-namespace"])
        #expect(result.status == 69)
        #expect(
            result.stderr.hasPrefix(
                "pinpath: error: --netns: network namespace \"pp-no-such-namespace\" cannot be opened (/run/netns/pp-no-such-namespace)"),
            "\(result.stderr)")
        #expect(result.stderr.split(separator: "\n").count == 1)
    }

    @Test("status --json prints the snapshot", .enabled(if: Capability.namespaces, Capability.reason))
    func statusJSON() throws {
        let network = try TestNetwork()
        let result = try Shell.run([
            Self.pinpath, "status", "--json", "--netns", network.host, "--target", "192.0.2.1", "--target", "nonexistent.invalid",
        ])
        #expect(result.status == 0, "\(result.stderr)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        #expect(json["status"] as? String == "reachable")
        #expect(json["interface"] as? String == "pa0")
        #expect(json["kind"] as? String == "other")
        #expect(json["ipv4"] as? Bool == true && json["ipv6"] as? Bool == false)
        #expect(json["gateways"] as? [String] == [TestNetwork.gatewayAddress])
        let interfaces = try #require(json["interfaces"] as? [[String: Any]])
        let pa0 = try #require(interfaces.first { $0["name"] as? String == "pa0" })
        #expect(pa0["carrier"] as? Bool == true && pa0["admin_up"] as? Bool == true && pa0["operstate"] as? String == "UP")
        #expect(pa0["addresses"] as? [String] == ["10.99.0.1/24"] || (pa0["addresses"] as? [String])?.first == "10.99.0.1/24")
        let targets = try #require(json["targets"] as? [[String: Any]])
        #expect(targets.count == 2)
        #expect(targets[0]["target"] as? String == "192.0.2.1" && targets[0]["status"] as? String == "reachable")
        #expect(targets[0]["interface"] as? String == "pa0")
        #expect(targets[1]["status"] as? String == "unreachable" && targets[1]["reason"] as? String == "dns_failed")

        let text = try Shell.run([Self.pinpath, "status", "--netns", network.host])
        #expect(text.stdout.hasPrefix("status:     reachable via pa0 (other)\n"))
    }

    @Test(
        "status --check: exit 0 when the path and every --target are reachable, 1 when one is not (printed either way)",
        .enabled(if: Capability.namespaces, Capability.reason))
    func statusCheck() throws {
        let network = try TestNetwork()
        let base = [Self.pinpath, "status", "--check", "--netns", network.host, "--target", "192.0.2.1"]
        let reachable = try Shell.run(base)
        #expect(reachable.status == 0, "\(reachable.stdout)\(reachable.stderr)")
        #expect(reachable.stdout.hasPrefix("status:     reachable via pa0 (other)\n"))
        let unresolvable = try Shell.run(base + ["--target", "nonexistent.invalid", "--json"])
        #expect(unresolvable.status == 1, "\(unresolvable.stdout)\(unresolvable.stderr)")
        #expect(unresolvable.stdout.contains(#""status":"unreachable""#), "\(unresolvable.stdout)")
        #expect(unresolvable.stderr.isEmpty)
        // Without --check, the same answer exits 0, as before.
        #expect(try Shell.run([Self.pinpath, "status", "--netns", network.host, "--target", "nonexistent.invalid"]).status == 0)
        // No route at all: the path itself is not reachable.
        try network.ip(network.host, "route del default")
        let noRoute = try Shell.run([Self.pinpath, "status", "--check", "--netns", network.host])
        #expect(noRoute.status == 1, "\(noRoute.stdout)")
    }

    @Test(
        "watch --json writes the initial state, then one line per change; SIGINT exits 0",
        .enabled(if: Capability.namespaces, Capability.reason))
    func watchJSON() async throws {
        let network = try TestNetwork()
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("pinpath-watch-\(getpid()).jsonl")
        _ = FileManager.default.createFile(atPath: output.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: output) }
        let handle = try FileHandle(forWritingTo: output)
        defer { try? handle.close() }
        let pid = try Shell.spawn(
            [Self.pinpath, "watch", "--json", "--netns", network.host, "--target", "192.0.2.1"],
            stdout: handle.fileDescriptor)

        func lines() throws -> [[String: Any]] {
            try String(contentsOf: output, encoding: .utf8).split(separator: "\n").map {
                try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
            }
        }
        var exited = false
        defer { if !exited { Shell.kill(pid) } }
        #expect(try await eventually { try lines().count >= 2 })
        try network.ip(network.gateway, "link set pb0 down")
        #expect(try await eventually { try lines().count >= 4 })
        try network.ip(network.gateway, "link set pb0 up")
        #expect(try await eventually { try lines().count >= 6 })
        let status = try await Shell.stop(pid, signal: SIGINT, timeout: .seconds(5))
        exited = true
        #expect(status == 0)

        let events = try lines()
        #expect(events.count == 6)
        #expect(events.map { $0["seq"] as? Int } == Array(1...6))
        #expect(events.allSatisfy { $0["schema"] as? String == "pinpath/1" })
        #expect(
            events.allSatisfy {
                ($0["time"] as? String)?.range(of: #"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$"#, options: .regularExpression) != nil
            })
        let paths = events.filter { $0["event"] as? String == "reachability.changed" }
        #expect(paths.map { $0["reason"] as? String } == ["initial", "carrier_lost", "carrier_gained"])
        #expect(paths.map { $0["status"] as? String } == ["reachable", "unreachable", "reachable"])
        #expect(paths.map { $0["previous_status"] as? String } == [nil, "reachable", "unreachable"])
        #expect(paths.map { $0["interface"] as? String } == ["pa0", nil, "pa0"])
        #expect(paths.map { $0["ipv4"] as? Bool } == [true, false, true])
        #expect(paths.allSatisfy { $0["ipv6"] as? Bool == false && $0.keys.contains("kind") })
        let targets = events.filter { $0["event"] as? String == "reachability.target_changed" }
        #expect(targets.map { $0["target"] as? String } == ["192.0.2.1", "192.0.2.1", "192.0.2.1"])
        #expect(targets.map { $0["detail"] as? String } == [nil, "no_carrier", nil])
        #expect(targets.map { $0["reason"] as? String } == ["initial", "carrier_lost", "carrier_gained"])
    }

    @Test(
        "watch ends quietly when its reader goes away: at the next change, or within the output check's second when nothing changes",
        .enabled(if: Capability.namespaces, Capability.reason), arguments: [true, false])
    func closedReader(linkChanges: Bool) async throws {
        let network = try TestNetwork()
        var fds: [Int32] = [0, 0]
        var status: Int32 = -1
        #expect(pipe(&fds) == 0)
        // Only the child's standard output may hold the write end, and nobody but us the read end.
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        let pid = try Shell.spawn([Self.pinpath, "watch", "--netns", network.host], stdout: fds[1])
        defer { if status < 0 { Shell.kill(pid) } }
        close(fds[1])
        var buffer = [UInt8](repeating: 0, count: 512)
        #expect(read(fds[0], &buffer, buffer.count) > 0, "the initial line arrives")
        close(fds[0])
        // With no change, only the check of the output (once a second) can notice, within eventually's 5 s.
        if linkChanges { try network.ip(network.gateway, "link set pb0 down") }
        #expect(
            try await eventually {
                var raw: Int32 = 0
                guard waitpid(pid, &raw, WNOHANG) == pid else { return false }
                status = (raw >> 8) & 0xff
                return true
            })
        #expect(status == 0)
    }

    @Test(
        "SIGTERM ends watch within its grace period even when the reader stopped reading",
        .enabled(if: Capability.namespaces, Capability.reason))
    func stalledReader() async throws {
        let network = try TestNetwork()
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        defer { close(fds[0]) }
        let targets = (1...60).flatMap { ["--target", "192.0.2.\($0)"] }
        let pid = try Shell.spawn([Self.pinpath, "watch", "--json", "--netns", network.host] + targets, stdout: fds[1])
        close(fds[1])
        var exited = false
        defer { if !exited { Shell.kill(pid) } }
        // Nobody reads. Each route change writes 61 lines (about 15 KiB): the 64 KiB pipe fills, and the
        // netlink thread blocks in write(2).
        func blockedInWrite() -> Bool {
            let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
            return tasks.contains {
                (try? String(contentsOfFile: "/proc/\(pid)/task/\($0)/wchan", encoding: .utf8))?.contains("pipe_write") == true
            }
        }
        for _ in 0..<10 where !blockedInWrite() {
            try network.ip(network.host, "route del default")
            try await Task.sleep(for: .milliseconds(50))  // apart, so the monitor sees two changes
            try network.ip(network.host, "route add default via \(TestNetwork.gatewayAddress)")
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(try await eventually { blockedInWrite() }, "the precondition: a thread blocked writing to the full pipe")
        let signalled = ContinuousClock.now
        let status = try await Shell.stop(pid, signal: SIGTERM, timeout: .seconds(6))
        exited = true
        #expect(status == 0, "nil means it was still running 6 s after SIGTERM")
        #expect(ContinuousClock.now - signalled < .seconds(5))
    }

    /// Issue 25, item 3: whoever may create an interface names it, and the kernel refuses only `/`, `:` and
    /// white space: an escape sequence and a bidi override make a name of 9 bytes. status and watch print it.
    @Test(
        "status and watch print a hostile interface name escaped, the route through it included",
        .enabled(if: Capability.namespaces, Capability.reason))
    func hostileInterfaceName() async throws {
        let network = try TestNetwork()
        let name = "e\u{1B}[2K\u{202E}x"
        let shown = #"e\x1b[2K\u{202e}x"#
        try network.ip(network.host, "link add name \(name) type veth peer name pv1")
        try network.batch(
            network.host,
            """
            link set pv1 up
            link set \(name) up
            addr add 10.98.0.1/24 dev \(name)
            route del default
            route add default via 10.98.0.254 dev \(name)
            """)
        let status = try Shell.run([Self.pinpath, "status", "--netns", network.host])
        #expect(status.status == 0, "\(status.stderr)")
        #expect(status.stdout.contains("reachable via \(shown) ("), "the primary interface line: \(status.stdout)")
        #expect(status.stdout.contains("dev \(shown) (table"), "the route line: \(status.stdout)")

        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        let pid = try Shell.spawn([Self.pinpath, "watch", "--netns", network.host], stdout: fds[1])
        close(fds[1])
        defer {
            Shell.kill(pid)
            close(fds[0])
        }
        var buffer = [UInt8](repeating: 0, count: 512)
        let count = read(fds[0], &buffer, buffer.count)
        let watch = String(decoding: buffer.prefix(max(count, 0)), as: UTF8.self)
        #expect(watch.contains("reachable via \(shown) ("), "the initial line: \(watch)")
        for output in [status.stdout, watch] {
            #expect(!output.unicodeScalars.contains { $0 == "\u{1B}" || $0 == "\u{202E}" }, "a raw escape reached the terminal: \(output)")
        }
    }
}
