import Glibc

/// Tells systemd about the service's state (`Type=notify`): one datagram per message to the AF_UNIX socket
/// in `$NOTIFY_SOCKET`, as `sd_notify(3)`. Without the variable every call does nothing, so the agent can
/// call it unconditionally.
///
/// The agent sends ``ready()`` after its first path snapshot and configuration load, ``reloading()`` and
/// then ``ready()`` around a reload (SIGHUP), and ``stopping()`` on shutdown. Any thread; each message
/// opens its own socket, since there are a handful in a run.
public struct SystemdNotifier: Sendable {
    /// The socket's address as systemd gives it (a path, or `@name` for the abstract namespace); nil when
    /// not run by systemd with `Type=notify`.
    public let socketPath: String?

    /// - Parameter socketPath: `$NOTIFY_SOCKET` by default.
    public init(socketPath: String? = getenv("NOTIFY_SOCKET").map { String(cString: $0) }) {
        self.socketPath = socketPath.flatMap { $0.isEmpty ? nil : $0 }
    }

    /// Sends `READY=1`.
    public func ready() throws(SystemCallError) { try send("READY=1") }

    /// Sends `RELOADING=1` with `MONOTONIC_USEC=` (CLOCK_MONOTONIC in µs), which systemd uses to tell this
    /// reload from an earlier one.
    public func reloading() throws(SystemCallError) {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        try send("RELOADING=1\nMONOTONIC_USEC=\(Int64(now.tv_sec) * 1_000_000 + Int64(now.tv_nsec) / 1000)")
    }

    /// Sends `STOPPING=1`.
    public func stopping() throws(SystemCallError) { try send("STOPPING=1") }

    /// Sends `STATUS=…`, a line `systemctl status` shows.
    public func status(_ text: String) throws(SystemCallError) { try send("STATUS=\(text)") }

    /// Sends `state` (newline-separated `KEY=value` assignments) in one datagram; nothing without a socket.
    /// - Throws: `SystemCallError` if the socket cannot be reached; the agent logs it and goes on.
    public func send(_ state: String) throws(SystemCallError) {
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
