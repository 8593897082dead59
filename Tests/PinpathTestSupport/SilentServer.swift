import Glibc

/// A TCP listener on 127.0.0.1 that never accepts: the kernel completes the handshake, nothing ever answers.
/// For timeouts and cancellation.
public final class SilentServer {
    public let port: UInt16
    private let descriptor: Int32

    public init() throws {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw ShellError(description: "socket: \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let listening = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(descriptor, pointer, length) == 0 && listen(descriptor, 64) == 0 && getsockname(descriptor, pointer, &length) == 0
            }
        }
        guard listening else {
            close(descriptor)
            throw ShellError(description: "cannot listen on 127.0.0.1: \(errno)")
        }
        self.descriptor = descriptor
        port = UInt16(bigEndian: address.sin_port)
    }

    public func stop() { close(descriptor) }
}
