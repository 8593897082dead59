import Glibc
import NIOCore
import Testing

@testable import PinpathAgent

/// The kernel's answer to "who opened the client end of this connection" (sock_diag), on real loopback sockets.
@Suite("Owners of local connections (sock_diag)")
struct ConnectionOwnersTests {
    /// A listener on 127.0.0.1 and one client connected to it from `source`, as plain descriptors.
    final class Connection {
        let listener: Int32
        private(set) var client: Int32
        let accepted: Int32
        let clientAddress: SocketAddress
        let serverAddress: SocketAddress

        init(from source: String, device: String? = nil) throws {
            let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            let client = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            if let device {
                let bound = setsockopt(client, SOL_SOCKET, SO_BINDTODEVICE, device, socklen_t(device.utf8.count))
                #expect(bound == 0, "SO_BINDTODEVICE \(device): errno \(errno)")
            }
            try Self.bind(listener, "127.0.0.1")
            #expect(listen(listener, 4) == 0)
            let server = try Self.address(of: listener)
            try Self.bind(client, source)
            let connected = server.withSockAddr { connect(client, $0, socklen_t($1)) }
            #expect(connected == 0)
            self.listener = listener
            self.client = client
            accepted = accept(listener, nil, nil)
            serverAddress = server
            clientAddress = try Self.address(of: client)
        }

        func closeClient() {
            Glibc.close(client)
            client = -1
        }

        deinit {
            for descriptor in [accepted, client, listener] where descriptor >= 0 { Glibc.close(descriptor) }
        }

        static func bind(_ descriptor: Int32, _ host: String) throws {
            let address = try SocketAddress(ipAddress: host, port: 0)
            let bound = address.withSockAddr { Glibc.bind(descriptor, $0, socklen_t($1)) }
            #expect(bound == 0, "bind \(host): errno \(errno)")
        }

        static func address(of descriptor: Int32) throws -> SocketAddress {
            var storage = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let read = withUnsafeMutablePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
            }
            #expect(read == 0)
            return try SocketAddress(storage: storage)
        }
    }

    @Test("An open client socket of this host is its creator's, from any loopback address")
    func openSocket() throws {
        let connection = try Connection(from: "127.0.0.77")
        #expect(ConnectionOwners().owner(client: connection.clientAddress, server: connection.serverAddress) == .user(getuid()))
    }

    /// Found by the round-3 review: the kernel's exact lookup misses a socket bound to a device, which any user
    /// may bind since Linux 5.7: a local user's connections from a socket bound to `lo` were strangers, counted
    /// by address, with a share of their own beside the user's.
    @Test("A client socket bound to lo (SO_BINDTODEVICE) is still its creator's")
    func deviceBoundSocket() throws {
        let connection = try Connection(from: "127.0.0.80", device: "lo")
        #expect(ConnectionOwners().owner(client: connection.clientAddress, server: connection.serverAddress) == .user(getuid()))
    }

    @Test("A client socket already closed has no owner to trust; no socket with those addresses is elsewhere")
    func closedAndElsewhere() throws {
        let connection = try Connection(from: "127.0.0.78")
        let owners = ConnectionOwners()
        connection.closeClient()
        #expect(owners.owner(client: connection.clientAddress, server: connection.serverAddress) == .closed)
        let nobody = try SocketAddress(ipAddress: "127.0.0.79", port: 9)
        #expect(owners.owner(client: nobody, server: connection.serverAddress) == .elsewhere)
    }
}

extension SocketAddress {
    /// The address from a `sockaddr_storage` filled in by the kernel.
    init(storage: sockaddr_storage) throws {
        var storage = storage
        switch Int32(storage.ss_family) {
        case AF_INET:
            let address = withUnsafePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee } }
            self.init(address, host: "")
        case AF_INET6:
            let address = withUnsafePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee } }
            self.init(address, host: "")
        default:
            throw SocketAddressError.unsupported
        }
    }
}
