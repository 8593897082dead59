import Glibc
import PinpathSupport

/// Tells systemd about the service's state (`Type=notify`): one datagram per message to the AF_UNIX socket
/// in `$NOTIFY_SOCKET`, as `sd_notify(3)`. Without the variable every call does nothing, so the agent can
/// call it unconditionally.
///
/// The agent sends ``ready()`` after its first path snapshot and configuration load, ``reloading()`` and
/// then ``ready()`` around a reload (SIGHUP), ``stopping()`` on shutdown, and from its scheduling loop
/// ``watchdog()`` and ``status(_:)`` every ``heartbeatInterval``. Any thread; each message opens its own
/// socket (a few a minute).
public struct SystemdNotifier: Sendable {
    /// The socket's address as systemd gives it (a path, or `@name` for the abstract namespace); nil when
    /// not run by systemd with `Type=notify`.
    let socketPath: String?
    /// systemd's watchdog timeout (`WatchdogSec=`, given as `$WATCHDOG_USEC` to the process `$WATCHDOG_PID`
    /// names, if any), or nil when there is none: past it without `WATCHDOG=1`, systemd restarts the service.
    let watchdogTimeout: Duration?

    /// - Parameters:
    ///   - socketPath: `$NOTIFY_SOCKET` by default.
    ///   - environment: where `WATCHDOG_USEC` and `WATCHDOG_PID` are read; the process's by default.
    public init(
        socketPath: String? = getenv("NOTIFY_SOCKET").map { String(cString: $0) },
        environment: [String: String]? = nil
    ) {
        self.socketPath = socketPath.flatMap { $0.isEmpty ? nil : $0 }
        let variable = { (name: String) in environment.map { $0[name] } ?? getenv(name).map { String(cString: $0) } }
        let forUs = variable("WATCHDOG_PID").map { pid_t($0) == getpid() } ?? true
        if forUs, let text = variable("WATCHDOG_USEC"), let microseconds = Int64(text), microseconds > 0 {
            watchdogTimeout = .microseconds(microseconds)
        } else {
            watchdogTimeout = nil
        }
    }

    /// How often the agent's loop should send ``watchdog()`` and ``status(_:)``: half the watchdog timeout, as
    /// sd_watchdog_enabled(3) advises, or every 10 s without one; nil when systemd is not listening.
    var heartbeatInterval: Duration? {
        guard socketPath != nil else { return nil }
        return watchdogTimeout.map { $0 / 2 } ?? .seconds(10)
    }

    /// Sends `WATCHDOG=1`, when systemd watches (nothing otherwise).
    func watchdog() throws(SystemCallError) {
        if watchdogTimeout != nil { try send("WATCHDOG=1") }
    }

    /// Sends `READY=1`.
    func ready() throws(SystemCallError) { try send("READY=1") }

    /// Sends `RELOADING=1` with `MONOTONIC_USEC=` (CLOCK_MONOTONIC in µs), which systemd uses to tell this
    /// reload from an earlier one.
    func reloading() throws(SystemCallError) {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        try send("RELOADING=1\nMONOTONIC_USEC=\(Int64(now.tv_sec) * 1_000_000 + Int64(now.tv_nsec) / 1000)")
    }

    /// Sends `STOPPING=1`.
    func stopping() throws(SystemCallError) { try send("STOPPING=1") }

    /// Sends `STATUS=…`, a line `systemctl status` shows.
    func status(_ text: String) throws(SystemCallError) { try send("STATUS=\(text)") }

    /// Sends `state` (newline-separated `KEY=value` assignments) in one datagram; nothing without a socket.
    /// - Throws: `SystemCallError` if the socket cannot be reached; the agent logs it and goes on.
    func send(_ state: String) throws(SystemCallError) {
        guard let socketPath else { return }
        guard case (var address, let length)? = Self.address(socketPath) else {
            throw SystemCallError("send to", socketPath, errno: ENAMETOOLONG)
        }
        let descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw SystemCallError("open a socket for", socketPath, errno: errno) }
        defer { close(descriptor) }
        var message = state
        let sent = message.withUTF8 { bytes in
            withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(descriptor, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL), $0, length)
                }
            }
        }
        guard sent >= 0 else { throw SystemCallError("send to", socketPath, errno: errno) }
    }

    /// The socket address for `path`, or nil if it does not fit. A leading `@` is Linux's abstract
    /// namespace: the name starts with a NUL byte instead, and the length, not a terminating NUL, ends it.
    static func address(_ path: String) -> (sockaddr_un, socklen_t)? {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var bytes = Array(path.utf8)
        let isAbstract = bytes.first == UInt8(ascii: "@")
        if isAbstract { bytes[0] = 0 }
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return nil }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        let length = MemoryLayout<sockaddr_un>.offset(of: \.sun_path)! + bytes.count + (isAbstract ? 0 : 1)
        return (address, socklen_t(length))
    }
}
