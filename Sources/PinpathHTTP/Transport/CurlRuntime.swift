import CCurl
import CCurlShims  // it includes <curl/curl.h> too, and clang may credit libcurl's constants to it
import PinpathSecurity

/// libcurl, initialised once per process, and the check that it is the OpenSSL build: the trust gate runs
/// inside OpenSSL's handshake (`CURLOPT_SSL_CTX_FUNCTION`), which no other TLS backend offers.
enum CurlRuntime {
    /// libcurl's version line (`libcurl/7.88.1 OpenSSL/3.0.19`), or why it cannot be used.
    static let availability: Result<String, HTTPError> = {
        // libcurl initialises OpenSSL: this comes first, so that an exit never frees OpenSSL under libcurl's thread.
        OpenSSLRuntime.initialiseWithoutExitCleanup()
        if let failure = pinpath_curl_load() {
            return .failure(
                HTTPError(
                    .engineUnavailable,
                    "libcurl could not be loaded (\(String(cString: failure))); pinpath needs Debian's libcurl4, its OpenSSL build"))
        }
        guard curl_global_init(Int(CURL_GLOBAL_SSL)) == CURLE_OK else {
            return .failure(HTTPError(.engineUnavailable, "libcurl failed to initialise"))
        }
        guard let info = curl_version_info(CURLVERSION_TENTH)?.pointee else {
            return .failure(HTTPError(.engineUnavailable, "libcurl does not report its version"))
        }
        let version = String(cString: info.version)
        let tls = info.ssl_version.map { String(cString: $0) } ?? "no TLS"
        // A multi-TLS build lists its backends as "OpenSSL/3.0.19" or "(OpenSSL/3.0.19)"; the selected one
        // is the one without parentheses.
        guard tls.split(separator: " ").contains(where: { $0.hasPrefix("OpenSSL/") }) else {
            return .failure(
                HTTPError(
                    .engineUnavailable,
                    """
                    libcurl \(version) uses \(tls), but pinpath needs its OpenSSL build (Debian: libcurl4-openssl-dev) to check \
                    pins inside the TLS handshake
                    """
                ))
        }
        return .success("libcurl/\(version) \(tls)")
    }()

    /// What `CURLOPT_ACCEPT_ENCODING` "" stands for in this libcurl: every content coding it decodes, listed as
    /// 7.88's `Curl_all_content_encodings` lists them (`deflate, gzip, br, zstd` on Debian 12). Given "", libcurl
    /// builds that list again for every transfer (1,500 instructions); given the list, it copies it. "" when
    /// libcurl decodes none of them (it then asks for `identity` itself).
    static let contentCodings: String = {
        guard case .success = availability, let info = curl_version_info(CURLVERSION_TENTH)?.pointee else { return "" }
        var codings: [String] = []
        if info.features & CURL_VERSION_LIBZ != 0 { codings += ["deflate", "gzip"] }
        if info.features & CURL_VERSION_BROTLI != 0 { codings.append("br") }
        if info.features & CURL_VERSION_ZSTD != 0 { codings.append("zstd") }
        return codings.joined(separator: ", ")
    }()

    /// Throws unless libcurl is usable.
    static func check() throws(HTTPError) -> String {
        try availability.get()
    }
}
