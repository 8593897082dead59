import Glibc
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

/// An audit's failures in the words audits have always used, whichever drives the connection: ``TLSConnection`` on
/// the blocking pool, or a `Session`'s handshake engine.
extension CodedError where Codes == TLSConnectionErrorCode {
    /// An audit's handshake that did not complete before its deadline.
    package static func handshakeTimeout(label: String) -> TLSConnectionError {
        Self(
            .timedOut, "\(label): no TLS handshake within the timeout (the server sent no TLS answer; is it a TLS port?)")
    }

    /// An audit's handshake that failed, in the words audits have always used: `handshake_failed` with OpenSSL's
    /// reasons (`valid.test:443: TLS handshake failed: sslv3 alert handshake failure`), or the socket's.
    package static func handshakeFailure(_ failure: TLSHandshakeFailure, label: String) -> TLSConnectionError {
        switch failure.code {
        case .connectionClosed:
            return Self(
                .handshakeFailed, "\(label): the server closed the connection during the TLS handshake (is it a TLS port?)")
        case .socketFailure:
            return Self(.handshakeFailed, "\(label): TLS handshake failed: \(String(cString: strerror(failure.socketError)))")
        default:
            let reasons = failure.openSSLReasons
            guard !reasons.isEmpty else { return Self(.handshakeFailed, "\(label): \(failure.reason)") }
            let text = reasons.joined(separator: "; ")
            // What OpenSSL says when the first bytes back are not a TLS record: HTTP, SSH, a banner.
            let notTLS = reasons.contains { $0.contains("wrong version number") || $0.contains("packet length too long") }
            return Self(
                .handshakeFailed, "\(label): TLS handshake failed: \(text)\(notTLS ? " (the server does not speak TLS on this port)" : "")")
        }
    }

    /// A failed `connect` to `address` (`127.0.0.1:4433`), by its `errno`.
    package static func connectFailure(_ code: Int32, label: String, address: String) -> TLSConnectionError {
        let reason = String(cString: strerror(code))
        switch code {
        case ECONNREFUSED:
            return Self(.connectionRefused, "\(label): connection refused by \(address) (nothing listening?)")
        case ENETUNREACH, EHOSTUNREACH, EADDRNOTAVAIL, EAFNOSUPPORT:
            return Self(.unreachable, "\(label): cannot reach \(address): \(reason)")
        case ETIMEDOUT:
            return Self(.timedOut, "\(label): no TCP connection to \(address): \(reason)")
        default:
            return Self(.connectFailed, "\(label): cannot connect to \(address): \(reason)")
        }
    }

    /// No TCP connection to `address` (the one being tried) before the audit's deadline.
    package static func connectTimeout(label: String, address: String) -> TLSConnectionError {
        Self(.timedOut, "\(label): no TCP connection to \(address) within the timeout")
    }
}
