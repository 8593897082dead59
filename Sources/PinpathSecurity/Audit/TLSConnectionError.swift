import PinpathSupport

/// Why an audit got no TLS handshake: the name did not resolve, nothing answered, or what answered did not
/// speak TLS. The message starts with the endpoint (`valid.test:443: connection refused`).
public typealias TLSConnectionError = CodedError<TLSConnectionErrorCode>

/// What went wrong in a ``TLSConnectionError``, as an extensible set of codes.
public struct TLSConnectionErrorCode: ErrorCode {
    /// The name, as written in JSON.
    public let name: String
    /// The host name did not resolve (`getaddrinfo` failed).
    public static let dnsFailure = Self(name: "dns_failure")
    /// Every address refused the connection (nothing listening).
    public static let connectionRefused = Self(name: "connection_refused")
    /// No route to the address, or the network is down.
    public static let unreachable = Self(name: "unreachable")
    /// Another `connect` failure.
    public static let connectFailed = Self(name: "connect_failed")
    /// The timeout ran out before the TCP connection or the TLS handshake completed.
    public static let timedOut = Self(name: "timed_out")
    /// The TLS handshake failed: an alert from the server, or an answer that is not TLS.
    public static let handshakeFailed = Self(name: "handshake_failed")
    /// OpenSSL itself failed (out of memory).
    public static let openSSLFailure = Self(name: "openssl_failure")
}
