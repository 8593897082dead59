import Foundation
import PinpathTestSupport
import Testing

/// Two network namespaces joined by a veth pair, made for one test and removed after it:
///
///     [host: pa0 10.99.0.1/24, fd99::1/64] ── veth ── [gateway: pb0 10.99.0.254/24, fd99::fe/64]
///
/// `host` has a default route via 10.99.0.254 (and fd99::fe when `ipv6`). Tests script it with `ip`.
final class TestNetwork {
    let host: String
    let gateway: String
    private var helpers: [pid_t] = []

    static let hostAddress = "10.99.0.1", gatewayAddress = "10.99.0.254"
    static let hostAddress6 = "fd99::1", gatewayAddress6 = "fd99::fe"

    init(ipv6: Bool = false) throws {
        let suffix = "\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        host = "pp-h-\(suffix)"
        gateway = "pp-g-\(suffix)"
        do {
            try Shell.check(["ip", "netns", "add", host])
            try Shell.check(["ip", "netns", "add", gateway])
            try batch(
                host,
                """
                link set lo up
                link add pa0 type veth peer name pb0 netns \(gateway)
                addr add \(Self.hostAddress)/24 dev pa0
                link set pa0 up
                """)
            try batch(gateway, "link set lo up\naddr add \(Self.gatewayAddress)/24 dev pb0\nlink set pb0 up")
            if ipv6 {
                // No duplicate address detection here: the tests that need DAD enable it themselves.
                for (namespace, device) in [(host, "pa0"), (gateway, "pb0")] {
                    try Shell.check(["ip", "netns", "exec", namespace, "sysctl", "-qw", "net.ipv6.conf.\(device).accept_dad=0"])
                }
                try ip(gateway, "-6 addr add \(Self.gatewayAddress6)/64 dev pb0 nodad")
                try ip(host, "-6 addr add \(Self.hostAddress6)/64 dev pa0 nodad")
            }
            try waitForCarrier()
            try ip(host, "route add default via \(Self.gatewayAddress)")
            if ipv6 { try ip(host, "-6 route add default via \(Self.gatewayAddress6)") }
        } catch {
            remove()
            throw error
        }
    }

    deinit { remove() }

    /// Deletes both namespaces (and so every interface in them), stops helper processes and removes the host
    /// namespace's /etc/netns files.
    func remove() {
        for helper in helpers { Shell.kill(helper) }
        helpers = []
        try? FileManager.default.removeItem(atPath: "/etc/netns/\(host)")
        _ = try? Shell.run(["ip", "netns", "del", host])
        _ = try? Shell.run(["ip", "netns", "del", gateway])
    }

    /// Runs `ip -n NAMESPACE ARGS…`, with the arguments split on spaces.
    func ip(_ namespace: String, _ arguments: String) throws {
        try Shell.check(["ip", "-n", namespace] + arguments.split(separator: " ").map(String.init))
    }

    /// Runs many `ip` commands in one process (`ip -batch`), fast enough to flood netlink.
    func batch(_ namespace: String, _ commands: String) throws {
        try Shell.check(["ip", "-n", namespace, "-batch", "-"], input: commands + "\n")
    }

    /// The JSON that `ip -j ARGS` prints in `namespace`.
    func json(_ namespace: String, _ arguments: String) throws -> [[String: Any]] {
        let output = try Shell.check(["ip", "-n", namespace, "-j"] + arguments.split(separator: " ").map(String.init))
        return try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [[String: Any]] ?? []
    }

    /// Starts a long-running helper inside `namespace`; it is stopped by `remove()`.
    func spawn(in namespace: String, _ arguments: [String]) throws {
        helpers.append(try Shell.spawn(["ip", "netns", "exec", namespace] + arguments))
    }

    /// Starts `pinpath run --config configuration` in the host namespace, its standard output (the events) to the
    /// file `events` and its standard error to `errors`, both created or emptied. The caller stops it by its PID.
    func startAgent(configuration: String, events: String, errors: String) throws -> pid_t {
        let output = open(events, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        let errorOutput = open(errors, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        defer {
            close(output)
            close(errorOutput)
        }
        return try Shell.spawn(
            ["ip", "netns", "exec", host, Shell.pinpath, "run", "--config", configuration], stdout: output, stderr: errorOutput)
    }

    /// Gives the host namespace its own /etc/hosts (`ip netns exec` mounts /etc/netns/NAME/hosts over it).
    /// Written in place, not renamed over: a process started before sees the mounted file, so a change is a
    /// new DNS answer for it too.
    func hosts(_ lines: String) throws {
        let directory = "/etc/netns/\(host)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try lines.write(toFile: "\(directory)/hosts", atomically: false, encoding: .utf8)
    }

    /// Gives the host namespace its own /etc/resolv.conf (mounted by `ip netns exec` as /etc/hosts is).
    func resolvConf(_ lines: String) throws {
        let directory = "/etc/netns/\(host)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try lines.write(toFile: "\(directory)/resolv.conf", atomically: true, encoding: .utf8)
    }

    /// Waits until something accepts TCP connections on `address`:`port` inside `namespace`.
    func waitForListener(in namespace: String, _ address: String, _ port: Int) throws {
        for _ in 0..<300 {
            let probe = try Shell.run([
                "ip", "netns", "exec", namespace, "python3", "-c", "import socket; socket.create_connection(('\(address)', \(port)), 1)",
            ])
            if probe.status == 0 { return }
            usleep(20_000)
        }
        throw ShellError(description: "nothing listens on \(address):\(port) in \(namespace)")
    }

    /// veth carrier comes up asynchronously after both ends are up.
    private func waitForCarrier() throws {
        for _ in 0..<200 {
            let link = try json(host, "link show dev pa0").first
            if (link?["operstate"] as? String) == "UP" { return }
            usleep(10_000)
        }
        throw ShellError(description: "pa0 never got carrier")
    }
}

/// Whether this process may create network namespaces (CAP_SYS_ADMIN and CAP_NET_ADMIN): CI runs as root
/// and must run these tests; elsewhere they are skipped with this reason.
enum Capability {
    static let namespaces: Bool = {
        let probe = "pp-probe-\(getpid())"
        guard (try? Shell.run(["ip", "netns", "add", probe]))?.status == 0 else { return false }
        _ = try? Shell.run(["ip", "netns", "del", probe])
        return true
    }()

    static let reason: Comment = "needs root (CAP_SYS_ADMIN, CAP_NET_ADMIN) to create network namespaces"
}
