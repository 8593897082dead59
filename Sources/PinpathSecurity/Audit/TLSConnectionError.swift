/// Why an audit got no TLS handshake: the name did not resolve, nothing answered, or what answered did not
/// speak TLS. The message names the endpoint (`valid.test:443: connection refused`).
public struct TLSConnectionError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What went wrong, as an extensible set of codes.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        let name: String
        /// The name, as written in JSON.
        public var description: String { name }
        /// The host name did not resolve (`getaddrinfo` failed).
        public static let dnsFailure = Code(name: "dns_failure")
        /// Every address refused the connection (nothing listening).
        public static let connectionRefused = Code(name: "connection_refused")
        /// No route to the address, or the network is down.
        public static let unreachable = Code(name: "unreachable")
        /// Another `connect` failure.
        public static let connectFailed = Code(name: "connect_failed")
        /// The timeout ran out before the TCP connection or the TLS handshake completed.
        public static let timedOut = Code(name: "timed_out")
        /// The TLS handshake failed: an alert from the server, or an answer that is not TLS.
        public static let handshakeFailed = Code(name: "handshake_failed")
        /// OpenSSL itself failed (out of memory).
        public static let openSSLFailure = Code(name: "openssl_failure")
    }

    /// What went wrong.
    public let code: Code
    /// A sentence for a person, starting with the endpoint.
    public let message: String

    init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// The message.
    public var description: String { message }
}
