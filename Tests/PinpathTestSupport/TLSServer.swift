import Foundation

/// `openssl s_server` on 127.0.0.1, killed by its PID when the test ends.
public final class TLSServer {
    public let port: UInt16
    private let process: Process
    /// Held open: without -www, s_server ends a connection when its standard input reaches end of file.
    private let input = Pipe()

    /// Starts `openssl s_server` with `certificate`, `key` and the `chain` files (sent after the leaf).
    /// - Parameters:
    ///   - www: answer HTTP requests with a status page (`-www`); otherwise echo what clients send into `transcript`.
    ///   - transcript: a file that receives s_server's standard output (what clients sent, when not `www`).
    ///   - extraArguments: more s_server options, such as `-cipher DEFAULT:@SECLEVEL=0`, which lets it serve
    ///     an RSA-1024 or SHA-1-signed chain that Debian's default level refuses to load.
    ///   - port: the port to listen on, to bring a stopped server back at the same address; a free one by default.
    public init(
        certificate: String, key: String, chain: [String], in directory: String, www: Bool = true, transcript: String? = nil,
        extraArguments: [String] = [], port: UInt16? = nil
    ) throws {
        let chainFile = "\(directory)/served-chain-\(UUID().uuidString).pem"
        let text = try chain.map { try String(contentsOfFile: $0, encoding: .utf8) }.joined()
        try text.write(toFile: chainFile, atomically: true, encoding: .utf8)
        self.port = try port ?? Self.freePort()
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        var arguments =
            ["s_server", "-accept", "127.0.0.1:\(self.port)", "-cert", certificate, "-key", key, "-quiet"] + (www ? ["-www"] : [])
        if !chain.isEmpty { arguments += ["-cert_chain", chainFile] }
        arguments += extraArguments
        process.arguments = arguments
        if let transcript {
            _ = FileManager.default.createFile(atPath: transcript, contents: nil)
            process.standardOutput = FileHandle(forWritingAtPath: transcript)
        } else {
            process.standardOutput = FileHandle.nullDevice
        }
        process.standardError = FileHandle.nullDevice
        process.standardInput = input
        try process.run()
        // Wait for the listener; s_server takes a few milliseconds to load its keys.
        for _ in 0..<200 {
            if let fd = try? Self.connectLoopback(port: self.port) {
                close(fd)
                return
            }
            usleep(10_000)
        }
        stop()
        throw ShellError(description: "openssl s_server did not listen on 127.0.0.1:\(self.port)")
    }

    public func stop() {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    /// A port the kernel just handed out; s_server binds it a moment later (a race that is harmless here).
    public static func freePort() throws -> UInt16 {
        let (fd, port) = try bindLoopback()
        close(fd)
        return port
    }

    /// A TCP socket bound to 127.0.0.1 on a port the kernel picks, and that port; the caller closes it.
    public static func bindLoopback() throws -> (Int32, UInt16) {
        // Close-on-exec: a `pinpath` a test spawns must not inherit the test's listeners (the soak counts its sockets).
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw ShellError(description: "socket: \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(fd, pointer, length) == 0 && getsockname(fd, pointer, &length) == 0
            }
        }
        guard bound else {
            close(fd)
            throw ShellError(description: "bind: \(errno)")
        }
        return (fd, UInt16(bigEndian: address.sin_port))
    }

    public static func connectLoopback(port: UInt16) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw ShellError(description: "socket: \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
        guard connected else {
            close(fd)
            throw ShellError(description: "connect 127.0.0.1:\(port): \(errno)")
        }
        return fd
    }
}
