import COpenSSL

/// OpenSSL's process-wide set-up, as pinpath needs it.
package enum OpenSSLRuntime {
    /// Initialises OpenSSL without its exit-time cleanup. By default OpenSSL registers an `atexit` handler that
    /// frees its global locks and tables; a thread still inside OpenSSL when the process exits (a Swift task
    /// releasing a certificate, a connection closing on libcurl's thread) then uses freed locks and crashes the
    /// process on its way out. The kernel reclaims the memory anyway.
    ///
    /// The first initialisation of OpenSSL in a process decides, so call this before anything else uses OpenSSL
    /// or libcurl (the `pinpath` CLI calls it first thing; the request core calls it before `curl_global_init`).
    /// Calling it again does nothing.
    package static func initialiseWithoutExitCleanup() {
        _ = initialised
    }

    private static let initialised: Bool = OPENSSL_init_crypto(UInt64(OPENSSL_INIT_NO_ATEXIT), nil) == 1
}
