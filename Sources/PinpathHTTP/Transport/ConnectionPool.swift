import CCurl
import CCurlShims
import PinpathSecurity

/// The connections that requests made under one set of trust terms (policy, trust store) may share: a
/// libcurl share handle holding a connection cache (`CURL_LOCK_DATA_CONNECT`).
///
/// libcurl 7.88 reuses a connection for any request to the same scheme, host and port whose TLS options
/// (`Curl_ssl_config_matches`: CA paths, verification switches, ciphers, client certificate) match; it knows
/// nothing of the verifier that `CURLOPT_SSL_CTX_FUNCTION` installed. A transfer attached to a share looks
/// for connections in that share's cache only, so a connection verified under some terms can only be found
/// by requests made under equal terms.
///
/// Used only on the engine thread, as are the transfers attached to it: no lock functions are set (libcurl's
/// shared connection cache is not safe across threads even with them).
final class ConnectionPool {
    private let share: UnsafeMutableRawPointer
    /// Transfers attached now; a pool may be closed only when none is.
    private(set) var attached = 0

    init() throws(HTTPError) {
        guard let share = curl_share_init() else {
            throw HTTPError(.engineUnavailable, "libcurl cannot create a connection pool (out of memory?)")
        }
        let code = pinpath_curl_share_setopt_long(share, CURLSHOPT_SHARE, Int(CURL_LOCK_DATA_CONNECT.rawValue))
        guard code == CURLSHE_OK else {
            curl_share_cleanup(share)
            throw HTTPError(
                .engineUnavailable, "libcurl cannot share connections: \(String(cString: curl_share_strerror(code)))")
        }
        self.share = share
    }

    /// Closes the pool's idle connections: their TLS contexts are freed, and with them the verifiers that
    /// checked them.
    deinit { curl_share_cleanup(share) }

    /// Makes the transfer look for and leave its connection in this pool. Before `curl_multi_add_handle`.
    func attach(_ transfer: Transfer) throws(HTTPError) {
        let code = pinpath_curl_setopt_pointer(transfer.handle, CURLOPT_SHARE, UnsafeRawPointer(share))
        guard code == CURLE_OK else {
            throw HTTPError(
                .engineUnavailable,
                "\(transfer.description): libcurl cannot use the connection pool: \(String(cString: curl_easy_strerror(code)))",
                curlCode: Int(code.rawValue))
        }
        attached += 1
    }

    /// Releases the transfer from the pool, after `curl_multi_remove_handle`, on the engine thread: libcurl
    /// counts a share's users without a lock when it has no lock functions.
    func detach(_ transfer: Transfer) {
        _ = pinpath_curl_setopt_pointer(transfer.handle, CURLOPT_SHARE, nil)
        attached -= 1
    }
}

/// One ``ConnectionPool`` per distinct trust terms (and proxy), owned by the engine thread.
struct ConnectionPools {
    private var pools: [ConnectionTerms: ConnectionPool] = [:]
    /// Beyond this many pools, idle ones are closed before another is made, so that a caller making a new
    /// trust store for every request does not accumulate connection caches.
    private let idleLimit = 16

    /// The pool for `terms`, made if needed.
    mutating func pool(for terms: ConnectionTerms) throws(HTTPError) -> ConnectionPool {
        if let pool = pools[terms] { return pool }
        if pools.count >= idleLimit { pools = pools.filter { $0.value.attached > 0 } }
        let pool = try ConnectionPool()
        pools[terms] = pool
        return pool
    }

    /// Closes every pool; no transfer may be attached.
    mutating func closeAll() { pools.removeAll() }
}
