import Foundation
import PinpathSupport
import PinpathTestSupport
import Testing

@testable import PinpathAgent

@Suite("systemd notification")
struct SystemdNotifierTests {
    /// A datagram socket bound at `path` (or in the abstract namespace for `@name`), as systemd's.
    final class Listener {
        let descriptor: Int32

        init(_ path: String) throws {
            descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard case (var address, let length)? = SystemdNotifier.address(path), descriptor >= 0 else {
                throw CocoaError(.fileWriteUnknown)
            }
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) }
            }
            guard bound == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno)!) }
        }

        deinit { close(descriptor) }

        /// The next datagram, waiting at most a second.
        func receive() -> String? {
            var poll = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            guard Glibc.poll(&poll, 1, 1000) == 1 else { return nil }
            var buffer = [UInt8](repeating: 0, count: 4096)
            let count = recv(descriptor, &buffer, buffer.count, 0)
            return count < 0 ? nil : String(decoding: buffer.prefix(count), as: UTF8.self)
        }
    }

    static func monotonicMicroseconds() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Int64(now.tv_sec) * 1_000_000 + Int64(now.tv_nsec) / 1000
    }

    static func check(_ notifier: SystemdNotifier, _ listener: Listener) throws {
        try notifier.ready()
        #expect(listener.receive() == "READY=1")
        let before = monotonicMicroseconds()
        try notifier.reloading()
        let reloading = try #require(listener.receive())
        #expect(reloading.hasPrefix("RELOADING=1\nMONOTONIC_USEC="))
        let stamp = try #require(Int64(reloading.split(separator: "=").last!))
        #expect(stamp >= before && stamp <= monotonicMicroseconds())
        try notifier.stopping()
        #expect(listener.receive() == "STOPPING=1")
        try notifier.status("probing 3 endpoints")
        #expect(listener.receive() == "STATUS=probing 3 endpoints")
    }

    @Test("Messages reach a socket at a path")
    func path() throws {
        let directory = try TemporaryDirectory()
        let listener = try Listener(directory.file("notify"))
        try Self.check(SystemdNotifier(socketPath: directory.file("notify")), listener)
    }

    @Test("Messages reach a socket in the abstract namespace (@name)")
    func abstract() throws {
        let name = "@pinpath-notify-test-\(getpid())"
        let listener = try Listener(name)
        // Read to the end: String(contentsOfFile:) stops after the first 4 KiB of a /proc file (st_size 0),
        // and a busy machine lists more sockets than that (this failed under the sanitizer runs).
        let table = try #require(FileHandle(forReadingAtPath: "/proc/net/unix"))
        defer { try? table.close() }
        let sockets = String(decoding: try table.readToEnd() ?? Data(), as: UTF8.self)
        #expect(sockets.contains(" \(name)\n"))  // the kernel lists abstract names with a leading @
        try Self.check(SystemdNotifier(socketPath: name), listener)
    }

    @Test("Without NOTIFY_SOCKET nothing is sent and nothing fails; a socket that is gone is an error")
    func absent() throws {
        #expect(SystemdNotifier(socketPath: nil).socketPath == nil)
        #expect(SystemdNotifier(socketPath: "").socketPath == nil)
        try SystemdNotifier(socketPath: nil).ready()
        let directory = try TemporaryDirectory()
        #expect { try SystemdNotifier(socketPath: directory.file("gone")).ready() } throws: { error in
            (error as? SystemCallError)?.errno == ENOENT
        }
        #expect { try SystemdNotifier(socketPath: "/" + String(repeating: "x", count: 200)).ready() } throws: { error in
            (error as? SystemCallError)?.errno == ENAMETOOLONG
        }
    }

    @Test("The watchdog: WATCHDOG_USEC for this process (or no WATCHDOG_PID) sets the timeout and a beat at half of it")
    func watchdog() {
        let pid = "\(getpid())"
        for (environment, timeout) in [
            (["WATCHDOG_USEC": "30000000"], Duration.seconds(30)),
            (["WATCHDOG_USEC": "30000000", "WATCHDOG_PID": pid], .seconds(30)),
            (["WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "1"], nil),
            (["WATCHDOG_USEC": "0"], nil), (["WATCHDOG_USEC": "soon"], nil), ([:], nil),
        ] as [([String: String], Duration?)] {
            let notifier = SystemdNotifier(socketPath: "/run/notify", environment: environment)
            #expect(notifier.watchdogTimeout == timeout, "\(environment)")
            #expect(notifier.heartbeatInterval == (timeout.map { $0 / 2 } ?? .seconds(10)), "\(environment)")
        }
        #expect(SystemdNotifier(socketPath: nil, environment: ["WATCHDOG_USEC": "30000000"]).heartbeatInterval == nil)
    }
}
