import COpenSSL
import COpenSSLShims

/// The server side of one TLS connection on memory buffers: the caller moves bytes between the network and this
/// object (an event loop's handler), OpenSSL does the rest. Not thread-safe: one caller at a time, on one thread.
///
/// Owns one `SSL` and, through it, its two memory BIOs.
package final class TLSServerConnection {
    private let ssl: OpaquePointer
    private let input: OpaquePointer
    private let output: OpaquePointer
    /// Whether the handshake has completed (the client's certificate, when one is required, verified).
    package private(set) var isEstablished = false

    /// What the bytes received so far came to.
    package enum State: Equatable {
        /// Waiting for more bytes from the client.
        case open
        /// The client sent close_notify: no more data will come.
        case closedByClient
        /// The handshake or a record failed (a plain HTTP client, no or a wrong client certificate, a version
        /// below the minimum, a forged record): OpenSSL's reasons. Any alert is in ``takeOutput()``.
        case failed(String)
    }

    /// - Throws: ``SecurityError`` `openSSLFailure` when OpenSSL cannot allocate the connection.
    package init(_ context: TLSServerContext) throws(SecurityError) {
        guard let ssl = SSL_new(context.context), let input = BIO_new(BIO_s_mem()), let output = BIO_new(BIO_s_mem()) else {
            throw SecurityError.openSSL(.openSSLFailure, "cannot create a TLS connection")
        }
        SSL_set_bio(ssl, input, output)
        SSL_set_accept_state(ssl)
        self.ssl = ssl
        self.input = input
        self.output = output
    }

    deinit { SSL_free(ssl) }

    /// Takes `bytes` from the network: runs the handshake while it is not done, then decrypts. Returns the
    /// plaintext that became available (possibly none) and the state.
    package func receive(_ bytes: UnsafeRawBufferPointer) -> (plaintext: [UInt8], state: State) {
        if bytes.count > 0 { _ = BIO_write(input, bytes.baseAddress, Int32(bytes.count)) }
        if !isEstablished {
            let result = SSL_do_handshake(ssl)
            if result != 1 {
                let error = SSL_get_error(ssl, result)
                return ([], error == SSL_ERROR_WANT_READ ? .open : .failed(Self.reasons(error)))
            }
            isEstablished = true
        }
        var plaintext: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16384)
        while true {
            let count = SSL_read(ssl, &chunk, Int32(chunk.count))
            if count > 0 {
                plaintext += chunk[0..<Int(count)]
                continue
            }
            let error = SSL_get_error(ssl, count)
            switch error {
            case SSL_ERROR_WANT_READ: return (plaintext, .open)
            case SSL_ERROR_ZERO_RETURN: return (plaintext, .closedByClient)
            default: return (plaintext, .failed(Self.reasons(error)))
            }
        }
    }

    /// Encrypts `plaintext` into ``takeOutput()``'s bytes. Returns false when the connection cannot send
    /// (its handshake is not done, or it failed).
    package func send(_ plaintext: UnsafeRawBufferPointer) -> Bool {
        guard isEstablished else { return false }
        guard plaintext.count > 0 else { return true }
        // With memory BIOs a write is whole: the output buffer grows.
        return SSL_write(ssl, plaintext.baseAddress, Int32(plaintext.count)) == Int32(plaintext.count)
    }

    /// Writes close_notify into ``takeOutput()``'s bytes: the client knows the answer ended where the server
    /// meant it to.
    package func shutdown() {
        guard isEstablished else { return }
        _ = SSL_shutdown(ssl)
        ERR_clear_error()
    }

    /// The bytes to send to the client now (handshake messages, records, alerts); empties the buffer.
    package func takeOutput() -> [UInt8] {
        let pending = Int(BIO_ctrl_pending(output))
        guard pending > 0 else { return [] }
        var bytes = [UInt8](repeating: 0, count: pending)
        let count = BIO_read(output, &bytes, Int32(pending))
        return count > 0 ? Array(bytes[0..<Int(count)]) : []
    }

    /// The negotiated version (`TLSv1.3`), once established.
    package var version: String? { isEstablished ? String(cString: SSL_get_version(ssl)) : nil }

    private static func reasons(_ error: Int32) -> String {
        let reasons = drainOpenSSLErrors()
        if !reasons.isEmpty { return reasons.joined(separator: "; ") }
        return error == SSL_ERROR_SYSCALL ? "the connection ended during the handshake" : "TLS error \(error)"
    }
}
