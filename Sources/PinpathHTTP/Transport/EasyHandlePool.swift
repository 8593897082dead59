import CCurl
import Synchronization

/// libcurl easy handles a session's finished transfers leave for its next ones: `curl_easy_init` and
/// `curl_easy_cleanup` cost more per keep-alive request than `curl_easy_reset`.
///
/// What a reset handle keeps (`curl_easy_reset`): connections, which a handle holds only while it is in the
/// multi handle (they belong to the multi's or a ``ConnectionPool``'s cache, chosen by the next transfer's terms);
/// the TLS session cache, which pinpath never fills (every TLS transfer sets `CURLOPT_SSL_SESSIONID_CACHE` 0);
/// cookies, HSTS and alt-svc data, which pinpath never enables. Every option, callback and pointer is cleared.
///
/// `Sendable` through its `Mutex`: transfers are made on callers' tasks and released on any thread.
final class EasyHandlePool: Sendable {
    /// An easy handle no transfer uses. `@unchecked Sendable`: it moves between threads only through the pool's lock.
    private struct Handle: @unchecked Sendable {
        let pointer: UnsafeMutableRawPointer
    }

    private let spare = Mutex<[Handle]>([])
    /// More than the requests a session usually runs at once; beyond it, handles are freed.
    private let limit = 64

    deinit {
        for handle in spare.withLock({ $0 }) { curl_easy_cleanup(handle.pointer) }
    }

    /// A reset handle, or a new one; `nil` when libcurl cannot make one (out of memory).
    func take() -> UnsafeMutableRawPointer? {
        spare.withLock { $0.popLast()?.pointer } ?? curl_easy_init()
    }

    /// Takes back a handle that is in no multi handle and attached to no share, resetting it to libcurl's defaults.
    func recycle(_ pointer: UnsafeMutableRawPointer) {
        curl_easy_reset(pointer)
        let kept = spare.withLock { handles in
            guard handles.count < limit else { return false }
            handles.append(Handle(pointer: pointer))
            return true
        }
        if !kept { curl_easy_cleanup(pointer) }
    }
}
