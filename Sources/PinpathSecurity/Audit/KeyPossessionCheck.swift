import COpenSSL
import FoundationEssentials
import PinpathSupport

/// Whether a server holds the key of the certificate it sent, proven by a second TLS handshake that completes and
/// sends nothing after it.
///
/// A verifier runs when the Certificate message arrives, before the server proves possession of the key
/// (CertificateVerify in TLS 1.3, the ServerKeyExchange signature in TLS 1.2); a handshake it refuses never learns
/// whether the server holds it. Certificates are public (CT logs): an on-path attacker can replay a service's old
/// expired certificate without its key, and the refusal would read as a routine expiry. ``TLSConnection``'s
/// handshake accepts any chain and OpenSSL itself checks the server's signature, so a completed handshake proves
/// the key of the leaf it got; the same leaf as the refused connection's proves that one's.
package enum KeyPossessionCheck {
    /// What the second handshake showed.
    package enum Outcome: Sendable, Equatable {
        /// The handshake completed and the server's leaf is the certificate expected.
        case proven
        /// Why possession is not proven: a sentence (the handshake failed, another leaf, a timeout).
        case unproven(String)
    }

    /// Connects to `address` (the very address the refused connection dialled), completes a handshake with
    /// `serverName` as SNI before `deadline` and compares its leaf with `leaf`. Blocks a thread of pinpath's pool
    /// for blocking work, not the caller's; a check whose turn comes after `deadline` is unproven.
    /// - Parameter clientCertificate: a certificate (PEM, its chain after it) and an unencrypted key to send when
    ///   the server asks for one, as the refused connection would have.
    package static func run(
        address: TLSEndpoint, serverName: String, leaf: Certificate,
        clientCertificate: (certificate: String, key: String?)? = nil, deadline: ContinuousClock.Instant
    ) async -> Outcome {
        // The process's audit contexts: the handshake verifies nothing itself (OpenSSL still checks the signature).
        let context = await TLSConnection.context(
            clientCertificate: clientCertificate, in: TLSConnection.sharedContexts, label: address.description, deadline: deadline)
        return await BlockingPool.shared.run {
            check(address: address, serverName: serverName, leaf: leaf, context: context, deadline: deadline)
        }
    }

    private static func check(
        address: TLSEndpoint, serverName: String, leaf: Certificate, context: Result<TLSClientContext, TLSConnectionError>,
        deadline: ContinuousClock.Instant
    ) -> Outcome {
        do {
            let connection = try TLSConnection(connectingTo: address, label: address.description, deadline: deadline)
            let handshake = try connection.handshake(serverName: serverName, context: try context.get(), deadline: deadline)
            guard let served = handshake.servedChain.first else {
                return .unproven("a second handshake with \(address) showed no certificate")
            }
            guard served == leaf else {
                return .unproven("a second handshake with \(address) completed with another certificate (\(served.subject))")
            }
            return .proven
        } catch {
            return .unproven("a second handshake with \(address) did not complete: \(error.message)")
        }
    }
}

extension TrustEvaluation {
    /// This evaluation with its expiry no longer the failure: the server did not prove it holds the key of the
    /// expired certificate it sent (`why`), so its chain is not taken for the service's own
    /// (``chainIsAnchoredForHost`` false: no `tls.certificate_expired`), and the lapse is said after that.
    package func possessionUnproven(_ why: String) -> TrustEvaluation {
        let said = failure?.message(withoutHost: host) ?? ""
        let lapse = failure?.verifyError == X509_V_ERR_CERT_NOT_YET_VALID ? "not yet valid" : "expired"
        var unproven = TrustFailure(
            reason: .chainInvalid, verifyError: nil, depth: failure?.depth,
            message: "\(host): the server did not prove it holds the key of the \(lapse) certificate it sent: a replay? (\(why)); \(said)",
            expectedPins: failure?.expectedPins ?? [], seenPins: failure?.seenPins ?? [])
        unproven.violation = failure?.violation
        var refused = TrustEvaluation(
            verdict: .rejected(unproven), allowsConnection: false, host: host, port: port, date: date, policy: policy,
            servedChain: servedChain, verifiedChain: verifiedChain, chainIsAnchoredForHost: false, appliedProfile: appliedProfile)
        refused.ocspStaple = ocspStaple
        refused.ocspCheck = ocspCheck
        return refused
    }
}
