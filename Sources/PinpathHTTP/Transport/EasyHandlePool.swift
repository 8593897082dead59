import CCurl
import Synchronization

/// libcurl easy handles a session's finished transfers leave for its next ones, each with its error buffer
/// (`CURLOPT_ERRORBUFFER`): `curl_easy_init` and `curl_easy_cleanup` cost more per keep-alive request than
/// `curl_easy_reset`, and the buffer need not be allocated and freed with every transfer.
///
/// What a reset handle keeps (`curl_easy_reset`): connections, which a handle holds only while it is in the
/// multi handle (they belong to the multi's or a ``ConnectionPool``'s cache, chosen by the next transfer's terms);
/// the TLS session cache, which pinpath never fills (every TLS transfer sets `CURLOPT_SSL_SESSIONID_CACHE` 0);
/// cookies, HSTS and alt-svc data, which pinpath never enables. Every option, callback and pointer is cleared.
///
/// `Sendable` through its `Mutex`: transfers are made on callers' tasks and released on any thread.
final class EasyHandlePool: Sendable {
    /// An easy handle no transfer uses, with its error buffer. `@unchecked Sendable`: it moves between threads
    /// only through the pool's lock.
    private struct Handle: @unchecked Sendable {
        let pointer: UnsafeMutableRawPointer
        let errorBuffer: UnsafeMutablePointer<CChar>
    }

    private let spare = Mutex<[Handle]>([])
    /// More than the requests a session usually runs at once; beyond it, handles are freed.
    private let limit = 64

    deinit {
        for handle in spare.withLock({ $0 }) {
            curl_easy_cleanup(handle.pointer)
            handle.errorBuffer.deallocate()
        }
    }

    /// A reset handle and its error buffer, or new ones; `nil` when libcurl cannot make a handle (out of memory).
    func take() -> (handle: UnsafeMutableRawPointer, errorBuffer: UnsafeMutablePointer<CChar>)? {
        if let spare = spare.withLock({ $0.popLast() }) { return (spare.pointer, spare.errorBuffer) }
        guard let handle = curl_easy_init() else { return nil }
        return (handle, .allocate(capacity: Int(CURL_ERROR_SIZE)))
    }

    /// Takes back a handle that is in no multi handle and attached to no share, resetting it to libcurl's defaults
    /// (which forgets its error buffer too), and that buffer.
    func recycle(_ pointer: UnsafeMutableRawPointer, errorBuffer: UnsafeMutablePointer<CChar>) {
        curl_easy_reset(pointer)
        let kept = spare.withLock { handles in
            guard handles.count < limit else { return false }
            handles.append(Handle(pointer: pointer, errorBuffer: errorBuffer))
            return true
        }
        if !kept {
            curl_easy_cleanup(pointer)
            errorBuffer.deallocate()
        }
    }
}
