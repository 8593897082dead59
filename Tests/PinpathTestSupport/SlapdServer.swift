import Foundation

/// Debian's OpenLDAP server (`/usr/sbin/slapd`, package slapd) on 127.0.0.1, run by the test from a private
/// directory (its own `slapd.conf`, an empty `dc=test` database) with two listeners: `ldap://`, where it offers
/// StartTLS, and `ldaps://`, TLS from the first byte, both with the given certificate. Its `-d stats` log is
/// the record of what reached it: each connection (`ACCEPT`), each operation (`EXT oid=… STARTTLS`, `BIND`,
/// `SRCH`, `UNBIND`) and each TLS session (`TLS established`, `TLS negotiation failure`). Killed by its PID
/// when stopped.
public final class SlapdServer {
    /// The `ldap://` listener (StartTLS offered).
    public let ldapPort: UInt16
    /// The `ldaps://` listener.
    public let ldapsPort: UInt16
    public let pid: pid_t
    private let logPath: String

    /// Starts one.
    /// - Parameters:
    ///   - certificate: the leaf followed by its chain (one PEM file), and its key.
    ///   - directory: where its own directory goes.
    public init(certificate: (chain: String, key: String), directory: String) throws {
        let slapd = "/usr/sbin/slapd"
        guard FileManager.default.isExecutableFile(atPath: slapd) else {
            throw ShellError(description: "\(slapd) is missing: install the slapd package (scripts/packages.sh lists it)")
        }
        let home = "\(directory)/slapd-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: "\(home)/db", withIntermediateDirectories: true)
        let configuration = """
            include /etc/ldap/schema/core.schema
            pidfile \(home)/slapd.pid
            modulepath /usr/lib/ldap
            moduleload back_mdb
            TLSCertificateFile \(certificate.chain)
            TLSCertificateKeyFile \(certificate.key)
            database mdb
            maxsize 10485760
            suffix "dc=test"
            rootdn "cn=admin,dc=test"
            directory \(home)/db

            """
        try configuration.write(toFile: "\(home)/slapd.conf", atomically: true, encoding: .utf8)
        logPath = "\(home)/slapd.log"
        ldapPort = try TLSServer.freePort()
        ldapsPort = try TLSServer.freePort()
        let log = open(logPath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard log >= 0 else { throw ShellError(description: "cannot create \(logPath)") }
        defer { close(log) }
        // -d keeps it in the foreground (so the PID is slapd's own) and writes the log to standard error.
        pid = try Shell.spawn(
            [slapd, "-d", "stats", "-f", "\(home)/slapd.conf", "-h", "ldap://127.0.0.1:\(ldapPort)/ ldaps://127.0.0.1:\(ldapsPort)/"],
            stdout: log, stderr: log)
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline {
            // Printed once the listeners are bound (a test connection would show in the log it keeps).
            if logText.contains("slapd starting") { return }
            var status: Int32 = 0
            if waitpid(pid, &status, WNOHANG) == pid { break }
            usleep(20_000)
        }
        Shell.stopIfRunning(pid)
        throw ShellError(description: "slapd did not start: \(logText)")
    }

    deinit { stop() }

    /// Kills it (and reaps it). Safe to call twice.
    public func stop() { Shell.stopIfRunning(pid) }

    /// The stats log so far.
    public var logText: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    /// The connections accepted on `port` (one of ``ldapPort`` and ``ldapsPort``).
    public func connections(to port: UInt16) -> Int {
        logText.split(separator: "\n").filter { $0.contains(" ACCEPT from ") && $0.hasSuffix("(IP=127.0.0.1:\(port))") }.count
    }
}
