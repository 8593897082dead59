import CCurl
import CCurlShims
import COpenSSL
import Glibc

/// What libcurl knows about a transfer (`curl_easy_getinfo`): status, protocol, address, timings, the
/// socket's error and the OpenSSL session. Read on the engine thread, during or after the transfer.
struct TransferInfo {
    let handle: UnsafeMutableRawPointer

    /// The last response's status code; 0 before one arrived.
    var responseCode: Int { long(CURLINFO_RESPONSE_CODE) }

    /// The `errno` of the last failed socket operation (a refused or unreachable connect); 0 for none.
    var socketError: Int32 { Int32(clamping: long(CURLINFO_OS_ERRNO)) }

    var httpVersion: String {
        switch long(CURLINFO_HTTP_VERSION) {
        case Int(CURL_HTTP_VERSION_1_0): return "HTTP/1.0"
        case Int(CURL_HTTP_VERSION_2_0): return "HTTP/2"
        case Int(CURL_HTTP_VERSION_3): return "HTTP/3"
        default: return "HTTP/1.1"
        }
    }

    /// The address and port connected to (`127.0.0.1:8443`, `[::1]:443`); `nil` before a connection.
    var remoteAddress: String? {
        var ip: UnsafeMutablePointer<CChar>?
        guard pinpath_curl_getinfo_string(handle, CURLINFO_PRIMARY_IP, &ip) == CURLE_OK, let ip, ip.pointee != 0 else { return nil }
        let address = UnsafeRawBufferPointer(start: ip, count: strlen(ip))
        var port = UInt16(clamping: long(CURLINFO_PRIMARY_PORT))
        let bracketed = address.contains(UInt8(ascii: ":"))
        // Written in place: every response carries it, and joining Strings cost three allocations.
        return String(unsafeUninitializedCapacity: address.count + 8) { text in
            var end = 0
            func append(_ byte: UInt8) {
                text[end] = byte
                end += 1
            }
            if bracketed { append(UInt8(ascii: "[")) }
            for byte in address { append(byte) }
            if bracketed { append(UInt8(ascii: "]")) }
            append(UInt8(ascii: ":"))
            let digitsStart = end
            repeat {
                append(UInt8(ascii: "0") + UInt8(port % 10))
                port /= 10
            } while port > 0
            text[digitsStart..<end].reverse()
            return end
        }
    }

    /// blackbox_exporter's phases from libcurl's cumulative times.
    var timings: PhaseTimings {
        let resolved = seconds(CURLINFO_NAMELOOKUP_TIME_T)
        let connected = seconds(CURLINFO_CONNECT_TIME_T)
        let handshaken = seconds(CURLINFO_APPCONNECT_TIME_T)
        let sent = seconds(CURLINFO_PRETRANSFER_TIME_T)
        let firstByte = seconds(CURLINFO_STARTTRANSFER_TIME_T)
        let total = seconds(CURLINFO_TOTAL_TIME_T)
        var timings = PhaseTimings()
        timings.resolve = resolved
        timings.connect = max(0, connected - resolved)
        timings.tls = handshaken > 0 ? max(0, handshaken - connected) : 0
        timings.processing = max(0, firstByte - max(sent, connected, handshaken))
        timings.transfer = max(0, total - firstByte)
        timings.total = total
        return timings
    }

    /// The timings of a transfer that failed, with the phases it completed: `resolve` once a name was looked up
    /// (or a connection made), `connect` once connected, `tls` once the handshake reached pinpath's verifier,
    /// timed to the end (libcurl records no handshake time for a handshake that failed).
    func timingsReached(connected: Bool, handshakeReached: Bool) -> PhaseTimings {
        var timings = timings
        var reached: [String] = []
        if connected || seconds(CURLINFO_NAMELOOKUP_TIME_T) > 0 { reached.append("resolve") }
        if connected { reached.append("connect") }
        if connected && handshakeReached {
            reached.append("tls")
            if timings.tls == 0 { timings.tls = max(0, timings.total - timings.resolve - timings.connect) }
        }
        timings.processing = 0
        timings.transfer = 0
        timings.phasesReached = reached
        return timings
    }

    /// The connected socket of a `CURLOPT_CONNECT_ONLY` transfer that has completed, or of the transfer's
    /// connection while it runs; `nil` otherwise.
    var activeSocket: Int32? {
        var socket: curl_socket_t = CURL_SOCKET_BAD
        guard pinpath_curl_getinfo_socket(handle, CURLINFO_ACTIVESOCKET, &socket) == CURLE_OK, socket != CURL_SOCKET_BAD else {
            return nil
        }
        return socket
    }

    /// Whether the connection holds bytes that have arrived and that libcurl has not read: application data
    /// decrypted by `SSL_peek` over TLS (an alert or a handshake message is not), any byte on a plain socket,
    /// the one of `sockets` bound to the connection's local port. Non-blocking. Wraps `SSL_peek`, `recv(MSG_PEEK)`.
    func hasUnreadBytes(sockets: [Int32]) -> Bool {
        var byte: UInt8 = 0
        if let ssl {
            defer { ERR_clear_error() }  // a peek that finds nothing may leave the queue with an entry
            return SSL_peek(ssl, &byte, 1) > 0
        }
        let localPort = long(CURLINFO_LOCAL_PORT)
        for socket in sockets where Self.localPort(socket) == localPort {
            return recv(socket, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT)) > 0
        }
        return false
    }

    private static func localPort(_ socket: Int32) -> Int? {
        var address = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let found = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socket, $0, &length) == 0 }
        }
        guard found else { return nil }
        switch Int32(address.ss_family) {
        case AF_INET: return withUnsafeBytes(of: address) { Int(UInt16(bigEndian: $0.load(fromByteOffset: 2, as: UInt16.self))) }
        case AF_INET6: return withUnsafeBytes(of: address) { Int(UInt16(bigEndian: $0.load(fromByteOffset: 2, as: UInt16.self))) }
        default: return nil
        }
    }

    /// The OpenSSL `SSL*` of the transfer's connection, once it has one.
    var ssl: OpaquePointer? {
        var info: UnsafeMutablePointer<curl_tlssessioninfo>?
        guard pinpath_curl_getinfo_tls_session(handle, &info) == CURLE_OK, let info,
            info.pointee.backend == CURLSSLBACKEND_OPENSSL, let internals = info.pointee.internals
        else { return nil }
        return OpaquePointer(internals)
    }

    /// The negotiated protocol version and cipher (`TLSv1.3`, `TLS_AES_256_GCM_SHA384`), once connected.
    var tlsSession: (version: String, cipher: String)? {
        guard let ssl else { return nil }
        let version = String(cString: SSL_get_version(ssl))
        let cipher = SSL_get_current_cipher(ssl).map { String(cString: SSL_CIPHER_get_name($0)) } ?? "?"
        return (version, cipher)
    }

    private func long(_ info: CURLINFO) -> Int {
        var value = 0
        _ = pinpath_curl_getinfo_long(handle, info, &value)
        return value
    }

    /// A `*_TIME_T` time (microseconds) in seconds.
    private func seconds(_ info: CURLINFO) -> Double {
        var value: curl_off_t = 0
        _ = pinpath_curl_getinfo_off_t(handle, info, &value)
        return Double(value) / 1_000_000
    }
}
