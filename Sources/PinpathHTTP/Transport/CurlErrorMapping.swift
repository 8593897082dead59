import CCurl

extension HTTPError.Code {
    /// The category of a libcurl failure, as the agent reports it.
    init(curlCode: CURLcode) {
        switch curlCode {
        case CURLE_URL_MALFORMAT, CURLE_UNSUPPORTED_PROTOCOL: self = .invalidURL
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY: self = .resolveFailed
        case CURLE_COULDNT_CONNECT: self = .connectFailed
        case CURLE_OPERATION_TIMEDOUT: self = .timedOut
        case CURLE_PEER_FAILED_VERIFICATION: self = .tlsInvalid
        case CURLE_SSL_CONNECT_ERROR, CURLE_SSL_CERTPROBLEM, CURLE_SSL_CIPHER, CURLE_SSL_ENGINE_NOTFOUND,
            CURLE_SSL_ISSUER_ERROR, CURLE_SSL_CRL_BADFILE, CURLE_SSL_SHUTDOWN_FAILED, CURLE_USE_SSL_FAILED:
            self = .tlsFailed
        case CURLE_TOO_MANY_REDIRECTS: self = .tooManyRedirects
        case CURLE_WEIRD_SERVER_REPLY, CURLE_GOT_NOTHING, CURLE_RECV_ERROR, CURLE_SEND_ERROR, CURLE_PARTIAL_FILE,
            CURLE_HTTP2, CURLE_HTTP2_STREAM, CURLE_BAD_CONTENT_ENCODING, CURLE_FILESIZE_EXCEEDED, CURLE_HTTP3:
            self = .protocolError
        case CURLE_ABORTED_BY_CALLBACK: self = .cancelled
        case CURLE_READ_ERROR: self = .unreadableFile
        default: self = .transferFailed
        }
    }
}
