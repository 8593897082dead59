import Glibc
import PinpathSecurity

/// `pinpath-measure handshakes HOST:PORT CA-FILE [COUNT]`: the CPU of pinpath's own TLS client handshake
/// (``TLSClientHandshake`` on a non-blocking socket driven with `poll`, the chain judged by a new
/// ``HandshakeVerifier`` each time, mode none, for HOST, which is also the SNI name unless an address), COUNT handshakes one after another on one shared
/// context, then COUNT with a context built per connection (as libcurl 7.88 does), then the shared run again
/// (the order on a shared machine matters less when each side runs twice). A full handshake each time: no
/// resumption, and nothing sent after it. Prints the CPU time of this thread per handshake (`getrusage`
/// RUSAGE_SELF, one thread: the server's CPU is not counted) and asserts nothing.
///
/// The peer is benchmarks/openssl-floor.c against the same server (`https://HOST:PORT/`), whose figure includes
/// one GET and its response: `openssl s_server -www` answers it.
func measureHandshakes(_ arguments: ArraySlice<String>) {
    let values = Array(arguments)
    guard values.count == 2 || values.count == 3, let colon = values[0].lastIndex(of: ":"),
        let port = UInt16(values[0][values[0].index(after: colon)...])
    else {
        fail("usage: pinpath-measure handshakes HOST:PORT CA-FILE [COUNT]")
    }
    let host = String(values[0][..<colon])
    let count = values.count == 3 ? Int(values[2]) ?? 0 : 500
    guard count > 0 else { fail("COUNT must be a positive integer") }
    do {
        let store = try TrustStore(caFile: values[1])
        let policy = try SecurityPolicy(mode: .none)
        let contexts = TLSClientContexts()
        func handshake(_ context: TLSClientContext) throws {
            let verifier = HandshakeVerifier(policy: policy, host: host, port: Int(port), trustStore: store)
            let fd = connectSocket(host: host, port: port)
            defer { close(fd) }
            let handshake = try TLSClientHandshake(context: context, socket: fd, serverName: host, verifier: verifier)
            while true {
                let events: Int16
                switch handshake.advance() {
                case .finished:
                    if case .failure(let failure) = handshake.outcome { fail("handshake failed: \(failure)") }
                    return
                case .wantRead: events = Int16(POLLIN)
                case .wantWrite: events = Int16(POLLOUT)
                }
                var entry = pollfd(fd: fd, events: events, revents: 0)
                guard poll(&entry, 1, 10_000) > 0 else { fail("no progress in 10 s") }
            }
        }
        func cpuMicroseconds(_ body: () throws -> Void) rethrows -> Double {
            func now() -> Double {
                var usage = rusage()
                getrusage(RUSAGE_SELF.rawValue, &usage)
                return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1e6
                    + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec)
            }
            let start = now()
            try body()
            return (now() - start) / Double(count)
        }
        try handshake(try contexts.context(for: TLSClientTerms()))  // warm-up
        let shared = try cpuMicroseconds { for _ in 0..<count { try handshake(try contexts.context(for: TLSClientTerms())) } }
        let perConnection = try cpuMicroseconds { for _ in 0..<count { try handshake(try TLSClientContext(terms: TLSClientTerms())) } }
        let sharedAgain = try cpuMicroseconds { for _ in 0..<count { try handshake(try contexts.context(for: TLSClientTerms())) } }
        func format(_ value: Double) -> String { String(Double(Int(value * 10)) / 10) }
        print(
            """
            handshakes=\(count) shared_context_cpu_us=\(format(shared)) context_per_connection_cpu_us=\(format(perConnection)) \
            shared_context_again_cpu_us=\(format(sharedAgain)) contexts_built=\(contexts.contextsBuilt)
            """)
    } catch {
        fail("\(error)")
    }
}

/// A blocking connect to `host:port`, then non-blocking for the handshake.
private func connectSocket(host: String, port: UInt16) -> Int32 {
    var hints = addrinfo()
    hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
    var addresses: UnsafeMutablePointer<addrinfo>?
    guard getaddrinfo(host, String(port), &hints, &addresses) == 0, let info = addresses?.pointee else {
        fail("cannot resolve \(host)")
    }
    defer { freeaddrinfo(addresses) }
    let fd = socket(info.ai_family, info.ai_socktype | Int32(SOCK_CLOEXEC.rawValue), info.ai_protocol)
    guard fd >= 0, connect(fd, info.ai_addr, info.ai_addrlen) == 0 else { fail("cannot connect to \(host):\(port)") }
    _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
    return fd
}
