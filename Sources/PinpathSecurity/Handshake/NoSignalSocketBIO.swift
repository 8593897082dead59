import COpenSSL
import Glibc

/// An OpenSSL BIO over a socket whose writes never raise SIGPIPE: `send` with `MSG_NOSIGNAL`, `recv` to read.
///
/// OpenSSL 3.0's socket BIO (`SSL_set_fd`) writes with `write(2)`, so a handshake writing to a connection the
/// server has already closed raises SIGPIPE, whose default action ends the process: any server could kill the
/// agent, or `pinpath request`, with a well-timed close. libcurl avoids it by ignoring the signal around each
/// call; a BIO that asks the kernel for no signal needs no process-wide state. The BIO never closes the socket.
enum NoSignalSocketBIO {
    /// A new BIO over `socket`, or `nil` when OpenSSL cannot make one. The caller owns the reference (which
    /// `SSL_set_bio` takes over).
    static func make(socket: Int32) -> OpaquePointer? {
        guard let method, let bio = BIO_new(method) else { return nil }
        // The descriptor plus one, so that descriptor 0 is not a null pointer.
        BIO_set_data(bio, UnsafeMutableRawPointer(bitPattern: Int(socket) + 1))
        BIO_set_init(bio, 1)
        return bio
    }

    /// Every retry flag (`BIO_clear_retry_flags`, a macro).
    private static let retryFlags = BIO_FLAGS_READ | BIO_FLAGS_WRITE | BIO_FLAGS_IO_SPECIAL | BIO_FLAGS_SHOULD_RETRY

    private static func socket(of bio: OpaquePointer?) -> Int32 {
        Int32(Int(bitPattern: BIO_get_data(bio)) - 1)
    }

    /// Marks the BIO for a retry after a non-blocking socket said "not now", as OpenSSL's socket BIO does.
    private static func noteRetry(_ bio: OpaquePointer?, _ direction: Int32) {
        let code = errno
        if code == EAGAIN || code == EWOULDBLOCK || code == EINTR || code == EINPROGRESS {
            BIO_set_flags(bio, direction | BIO_FLAGS_SHOULD_RETRY)
        }
    }

    /// The method, made once per process. `nonisolated(unsafe)`: set once by Swift's lazy initialisation (which
    /// is thread-safe) and only read afterwards, as OpenSSL reads its own methods from every thread.
    nonisolated(unsafe) private static let method: OpaquePointer? = {
        let index = BIO_get_new_index()
        guard index > 0, let method = BIO_meth_new(index | BIO_TYPE_SOURCE_SINK | BIO_TYPE_DESCRIPTOR, "pinpath socket (no SIGPIPE)")
        else { return nil }
        _ = BIO_meth_set_write(method) { bio, data, length in
            BIO_clear_flags(bio, NoSignalSocketBIO.retryFlags)
            let written = send(NoSignalSocketBIO.socket(of: bio), data, Int(length), Int32(MSG_NOSIGNAL))
            if written < 0 { NoSignalSocketBIO.noteRetry(bio, BIO_FLAGS_WRITE) }
            return Int32(written)
        }
        _ = BIO_meth_set_read(method) { bio, data, length in
            BIO_clear_flags(bio, NoSignalSocketBIO.retryFlags)
            let read = recv(NoSignalSocketBIO.socket(of: bio), data, Int(length), 0)
            if read < 0 { NoSignalSocketBIO.noteRetry(bio, BIO_FLAGS_READ) }
            return Int32(read)
        }
        // Nothing is buffered, so a flush is done; every other control (push, pop, pending) is not supported.
        _ = BIO_meth_set_ctrl(method) { _, command, _, _ in command == BIO_CTRL_FLUSH ? 1 : 0 }
        return method
    }()
}
