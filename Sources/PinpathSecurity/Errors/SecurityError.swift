import COpenSSL
import PinpathSupport

/// A failure to load security material, to configure a policy, or to run an evaluation (not "untrusted",
/// which is a ``TrustEvaluation`` verdict). Its message names the input and what was wrong, with OpenSSL's
/// reasons when it had any.
public typealias SecurityError = CodedError<SecurityErrorCode>

/// What went wrong in a ``SecurityError``, as an extensible set of codes.
public struct SecurityErrorCode: ErrorCode {
    /// The name, as written in logs and JSON.
    public let name: String
    /// A file that cannot be read (missing, a directory, no permission).
    public static let unreadableFile = Self(name: "unreadable_file")
    /// Input that is not a certificate, key or CSR OpenSSL can parse (PEM or DER).
    public static let invalidInput = Self(name: "invalid_input")
    /// A pin string that is not `sha256/` and the base64 of exactly 32 bytes.
    public static let invalidPin = Self(name: "invalid_pin")
    /// A host pattern that is not a host, `*.domain` or `**.domain`.
    public static let invalidHostPattern = Self(name: "invalid_host_pattern")
    /// A policy that AFNetworking or TrustKit would refuse (it would accept anything, or has no pins).
    public static let invalidPolicy = Self(name: "invalid_policy")
    /// An enforcing `public_key` policy with one pin, whose backup pin is not waived: a key rotation would lock
    /// clients out (TrustKit's rule). Callers that name the waiver's option or configuration key branch on it.
    public static let missingBackupPin = Self(name: "missing_backup_pin")
    /// A client certificate's private key cannot be used: its separate file unreadable, no PEM key in it,
    /// encrypted without the right password, or not the certificate's key (``ClientIdentity/check``). Callers
    /// that name the key's option or configuration key branch on it.
    public static let unusableClientKey = Self(name: "unusable_client_key")
    /// A TLS server's private key cannot be used (``TLSServerContext``): unreadable, no PEM key, encrypted, or
    /// not the certificate's key. Callers that name the key's configuration key branch on it.
    public static let unusableServerKey = Self(name: "unusable_server_key")
    /// A TLS server's client CA file cannot be used (``TLSServerContext``): unreadable or no PEM certificate.
    public static let unusableClientCA = Self(name: "unusable_client_ca")
    /// OpenSSL itself failed (out of memory, a missing algorithm).
    public static let openSSLFailure = Self(name: "openssl_failure")
    /// Security material was not ready before a deadline: a check's client certificate files not read and
    /// loaded in its time (a file system that does not answer). Callers report it as a timeout.
    public static let timedOut = Self(name: "timed_out")
    /// The task waiting for security material was cancelled before it was ready.
    public static let cancelled = Self(name: "cancelled")
}

extension SecurityError {
    /// An error whose message ends with OpenSSL's queued reasons, draining the queue so that no stale reason
    /// is blamed on a later call (the queue is per thread).
    static func openSSL(_ code: Code, _ message: String) -> SecurityError {
        let reasons = drainOpenSSLErrors()
        return SecurityError(code, reasons.isEmpty ? message : "\(message) (\(reasons.joined(separator: "; ")))")
    }
}

/// Empties this thread's OpenSSL error queue and returns its reasons, oldest first: the reason alone
/// (`wrong version number`), or with `withCodes` OpenSSL's whole line as libcurl quotes it
/// (`error:0A00010B:SSL routines::wrong version number`, from `ERR_error_string_n`).
func drainOpenSSLErrors(withCodes: Bool = false) -> [String] {
    drainOpenSSLErrorEntries().map { withCodes ? $0.line : $0.reason }
}

/// Empties this thread's OpenSSL error queue and returns each entry both ways, oldest first: OpenSSL's whole line
/// (`error:0A00010B:SSL routines::wrong version number`) and the reason alone (`wrong version number`), for a
/// caller that words a failure for two audiences (a check quotes the lines as libcurl does, an audit the reasons).
func drainOpenSSLErrorEntries() -> [(line: String, reason: String)] {
    var entries: [(line: String, reason: String)] = []
    while true {
        let code = ERR_get_error()
        if code == 0 { break }
        var line = [CChar](repeating: 0, count: 256)
        ERR_error_string_n(code, &line, line.count)
        let reason = ERR_reason_error_string(code).map { String(cString: $0) } ?? "OpenSSL error \(code)"
        entries.append((String(decoding: line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self), reason))
    }
    return entries
}
