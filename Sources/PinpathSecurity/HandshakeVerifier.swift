import COpenSSL
import CShims
import FoundationEssentials
import Synchronization

/// Runs a ``SecurityPolicy`` inside an OpenSSL handshake, as the `SSL_CTX`'s certificate verification
/// callback, so that a connection is refused before any request byte is sent.
///
/// Keep the verifier alive as long as the `SSL_CTX` may handshake: OpenSSL holds only an unretained pointer.
/// Install it on a context used for one host (the host is part of the evaluation), with peer verification
/// on (`SSL_VERIFY_PEER`) and, for libcurl, `CURLOPT_SSL_VERIFYPEER` 1 and the session cache off (resumed
/// sessions skip the callback).
public final class HandshakeVerifier: Sendable {
    /// The policy applied.
    public let policy: SecurityPolicy
    /// The host name or IP address the connection is for.
    public let host: String
    /// The port, for reports.
    public let port: Int
    private let trustStore: TrustStore
    private let verificationTime: Date?
    // Written on whatever thread runs the handshake, read by the caller afterwards.
    private let last = Mutex<Result<TrustEvaluation, SecurityError>?>(nil)

    /// Creates a verifier; see ``SecurityPolicy/evaluate(servedChain:host:port:trustStore:verificationTime:now:)``.
    public init(policy: SecurityPolicy, host: String, port: Int = 443, trustStore: TrustStore, verificationTime: Date? = nil) {
        self.policy = policy
        self.host = host
        self.port = port
        self.trustStore = trustStore
        self.verificationTime = verificationTime
    }

    /// The outcome of the most recent handshake's evaluation, or the error that stopped it from running.
    public var lastResult: Result<TrustEvaluation, SecurityError>? { last.withLock { $0 } }

    /// Installs the evaluation as the certificate verification callback of an OpenSSL `SSL_CTX*`. Wraps
    /// `SSL_CTX_set_cert_verify_callback`; a rejection sets `X509_V_ERR_APPLICATION_VERIFICATION` and fails the
    /// handshake, a report-only pin failure lets it proceed.
    /// - Parameter sslContext: an `SSL_CTX*`.
    package func install(on sslContext: OpaquePointer) {
        SSL_CTX_set_cert_verify_callback(
            sslContext,
            { storeContext, argument in
                guard let storeContext, let argument else { return 0 }
                let verifier = Unmanaged<HandshakeVerifier>.fromOpaque(argument).takeUnretainedValue()
                return verifier.verify(storeContext) ? 1 : 0
            }, Unmanaged.passUnretained(self).toOpaque())
    }

    /// Evaluates the chain in OpenSSL's verification context and records the result.
    private func verify(_ storeContext: OpaquePointer) -> Bool {
        let result: Result<TrustEvaluation, SecurityError>
        do {
            result = .success(
                try policy.evaluate(
                    servedChain: Self.servedChain(storeContext), host: host, port: port, trustStore: trustStore,
                    verificationTime: verificationTime))
        } catch let error as SecurityError {
            result = .failure(error)
        } catch {
            result = .failure(SecurityError(.openSSLFailure, "\(host): \(error)"))
        }
        last.withLock { $0 = result }
        guard case .success(let evaluation) = result, evaluation.allowsConnection else {
            X509_STORE_CTX_set_error(storeContext, X509_V_ERR_APPLICATION_VERIFICATION)
            return false
        }
        X509_STORE_CTX_set_error(storeContext, X509_V_OK)
        return true
    }

    /// The certificates the peer sent: OpenSSL's handshake puts the leaf in the context and the whole sent
    /// list (leaf included) in its untrusted stack.
    private static func servedChain(_ storeContext: OpaquePointer) -> [Certificate] {
        guard let leafPointer = X509_STORE_CTX_get0_cert(storeContext), let leaf = Certificate(referencing: leafPointer)
        else { return [] }
        var chain = [leaf]
        if let untrusted = X509_STORE_CTX_get0_untrusted(storeContext) {
            for index in 0..<pinpath_sk_X509_num(untrusted) {
                guard let pointer = pinpath_sk_X509_value(untrusted, index), let certificate = Certificate(referencing: pointer)
                else { continue }
                if index == 0 && certificate == leaf { continue }
                chain.append(certificate)
            }
        }
        return chain
    }
}
