import Glibc

/// A TCP listener on 127.0.0.1 that never accepts: the kernel completes the handshake, nothing ever answers.
/// For timeouts and cancellation.
public final class SilentServer {
    public let port: UInt16
    private let descriptor: Int32

    public init() throws {
        let (descriptor, port) = try TLSServer.bindLoopback()
        guard listen(descriptor, 64) == 0 else {
            close(descriptor)
            throw ShellError(description: "cannot listen on 127.0.0.1:\(port): \(errno)")
        }
        self.descriptor = descriptor
        self.port = port
    }

    public func stop() { close(descriptor) }
}
