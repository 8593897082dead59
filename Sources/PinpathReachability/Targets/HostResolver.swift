import Glibc
import PinpathSupport

/// Resolves host names with `getaddrinfo` on the blocking pool (``BlockingPool``), bounded in time. glibc's
/// resolver cannot be cancelled, so a look-up that outlives the bound finishes on its pool thread and its answer
/// is dropped; one whose bound passed before its turn is not started.
package enum HostResolver {
    static func resolve(_ target: ReachabilityTarget, timeout: Duration) async -> WatchedTarget.Resolution {
        switch target {
        case .address(let address): return .resolved([address])
        case .host(let name): return await resolve(name, timeout: timeout)
        }
    }

    static func resolve(_ name: String, timeout: Duration) async -> WatchedTarget.Resolution {
        let answer = OneShot<WatchedTarget.Resolution>()
        BlockingPool.shared.execute {
            guard !answer.isFulfilled else { return }
            answer.fulfil(getAddresses(name))
        }
        // The bound: a task asleep holds no thread; the answer cancels it.
        let bound = Task {
            guard (try? await Task.sleep(for: timeout)) != nil else { return }
            answer.fulfil(.failed)
        }
        defer { bound.cancel() }
        return await answer.value()
    }

    /// The addresses `name` resolves to, in the order the resolver prefers; `nil` when it does not resolve in
    /// `timeout`. For the agent's target probes, which check every address before connecting to one of them.
    package static func addresses(of name: String, timeout: Duration) async -> [IPAddress]? {
        switch await resolve(name, timeout: timeout) {
        case .resolved(let addresses): addresses
        case .failed: nil
        }
    }

    /// Blocking `getaddrinfo`, in the order the resolver prefers (RFC 6724), without duplicates.
    private static func getAddresses(_ name: String) -> WatchedTarget.Resolution {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_ADDRCONFIG
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(name, nil, &hints, &list) == 0, let first = list else { return .failed }
        defer { freeaddrinfo(list) }
        var addresses: [IPAddress] = []
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let current = entry {
            if let sockaddr = current.pointee.ai_addr, let address = IPAddress(socketAddress: sockaddr),
                !addresses.contains(address)
            {
                addresses.append(address)
            }
            entry = current.pointee.ai_next
        }
        return addresses.isEmpty ? .failed : .resolved(addresses)
    }
}

extension IPAddress {
    /// Reads an IPv4 or IPv6 socket address.
    init?(socketAddress: UnsafePointer<sockaddr>) {
        switch Int32(socketAddress.pointee.sa_family) {
        case AF_INET:
            let address = socketAddress.withMemoryRebound(to: sockaddr_in.self, capacity: 1) {
                withUnsafeBytes(of: $0.pointee.sin_addr) { IPAddress(bytes: $0) }
            }
            guard let address else { return nil }
            self = address
        case AF_INET6:
            let address = socketAddress.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) {
                withUnsafeBytes(of: $0.pointee.sin6_addr) { IPAddress(bytes: $0) }
            }
            guard let address else { return nil }
            self = address
        default:
            return nil
        }
    }
}
