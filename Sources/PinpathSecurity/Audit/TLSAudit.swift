import FoundationEssentials
import PinpathSupport

/// What one TLS endpoint shows: the handshake, the served chain with each certificate's details, and how a
/// ``SecurityPolicy`` judges it, or why there was no handshake. A value: the CLI renders it as text or JSON.
///
/// A chain read from a file is judged the same way, without a connection (``init(chainAtRest:file:options:)``,
/// `pinpath verify`): the verdicts a handshake serving that chain would get.
///
/// Certificates are kept even when verification fails. When there was no handshake, there are none, so no pin
/// can be shown for a connection that yielded no certificate.
public struct TLSAudit: Sendable {
    /// How to audit: the policy, the anchors, where to connect and the time limit.
    public struct Options: Sendable {
        /// The policy the chain is judged by; its verdict gives ``outcome``.
        public var policy: SecurityPolicy
        /// The anchors (the system store, or a CA file).
        public var trustStore: TrustStore
        /// The name sent as SNI and checked against the certificate; the endpoint's host when `nil`.
        public var serverName: String?
        /// Connect here instead of resolving the endpoint's host (as `curl --connect-to`).
        public var connectTo: TLSEndpoint?
        /// Verify as of this time instead of now (to audit a chain as it was, or will be).
        public var verificationTime: Date?
        /// The limit for the TCP connection and the TLS handshake together. Name resolution is the system
        /// resolver's and is not bounded by it.
        public var timeout: Duration
        /// A client certificate (PEM, its chain after it) and key (`nil`: in the certificate's file) to send
        /// when the server asks for one; check them first with ``ClientIdentity/check(certificatePath:keyPath:password:)``
        /// (an encrypted key is not supported here).
        public var clientCertificate: (certificate: String, key: String?)?
        /// Under ``RevocationMode/ocsp``, who asks the leaf's OCSP responder when no staple answers (the request
        /// core's `Session`); `nil`: nobody, and without a staple the status is unavailable.
        public var ocspResponder: (any OCSPResponderClient)?
        /// The responders' answers, kept across audits that share these options.
        public var ocspResponses = OCSPResponseCache()

        /// Creates options.
        public init(
            policy: SecurityPolicy, trustStore: TrustStore, serverName: String? = nil, connectTo: TLSEndpoint? = nil,
            verificationTime: Date? = nil, timeout: Duration = .seconds(10)
        ) {
            self.policy = policy
            self.trustStore = trustStore
            self.serverName = serverName
            self.connectTo = connectTo
            self.verificationTime = verificationTime
            self.timeout = timeout
        }
    }

    /// The audit's conclusion, ranked by ``severity``; an extensible set of values.
    public struct Outcome: Hashable, Sendable, CustomStringConvertible {
        let name: String
        /// 0 trusted (and pinned), 1 pin mismatch, 2 chain or host invalid, 3 no TLS handshake: the exit codes of
        /// `pinpath audit`, so that the worst of several audits is the largest.
        public let severity: Int
        /// The name, as written in JSON.
        public var description: String { name }
        /// The chain, the host and the pins (if any) are good.
        public static let trusted = Outcome(name: "trusted", severity: 0)
        /// The chain and host are good but no certificate of the verified chain matches a pin.
        public static let pinMismatch = Outcome(name: "pin_mismatch", severity: 1)
        /// The chain does not validate.
        public static let chainInvalid = Outcome(name: "chain_invalid", severity: 2)
        /// The certificate is not for the server name.
        public static let hostMismatch = Outcome(name: "host_mismatch", severity: 2)
        /// A certificate of the chain is revoked (a CRL, the staple, or the leaf's OCSP responder says so).
        public static let revoked = Outcome(name: "revoked", severity: 2)
        /// OpenSSL could not evaluate the chain (see ``evaluationError``).
        public static let evaluationFailed = Outcome(name: "evaluation_failed", severity: 2)
        /// No TLS handshake: see ``connectionError``.
        public static let noHandshake = Outcome(name: "no_handshake", severity: 3)
    }

    /// A pin that matched: which certificate of the verified chain, and its pin.
    public struct PinMatch: Sendable, Equatable {
        /// The depth in the verified chain (0 is the leaf).
        public let depth: Int
        /// The pin of that certificate.
        public let pin: SPKIPin
        /// Its subject.
        public let subject: String
    }

    /// The endpoint as given; for a chain at rest, the server name (empty when none) and port 443.
    public let endpoint: TLSEndpoint
    /// The name sent as SNI (unless an IP address) and checked against the certificate; for a chain at rest,
    /// the name checked, or empty when none was (``hostVerdict`` is then `nil`).
    public let serverName: String
    /// The file the chain was read from, for a chain at rest; `nil` for a connection.
    public let chainFile: String?
    /// The time the chain was verified as of: ``Options/verificationTime``, or when the audit ran.
    public let verifiedAt: Date
    /// The address connected to, when the connection was made.
    public let address: String?
    /// The negotiated protocol (`TLSv1.3`), when there was a handshake.
    public let protocolVersion: String?
    /// The negotiated cipher suite (`TLS_AES_256_GCM_SHA384`), when there was a handshake.
    public let cipher: String?
    /// The server asked for a client certificate in the handshake (mutual TLS), naming these authorities;
    /// `nil` when it did not ask, or there was no handshake.
    public private(set) var clientCertificateRequest: ClientCertificateRequest?
    /// What the server sent, leaf first; empty when there was no handshake.
    public let servedChain: [Certificate]
    /// The chain alone (no host, no pins) against the anchors the policy uses: the trust store, or in
    /// `certificate` mode the pinned certificates. `nil` when there was no certificate.
    public let chainVerdict: TrustEvaluation.Verdict?
    /// The host alone (chain errors ignored): `nil` when there was no certificate.
    public let hostVerdict: TrustEvaluation.Verdict?
    /// The policy's evaluation: the verified chain and the overall verdict. `nil` without a handshake.
    public let evaluation: TrustEvaluation?
    /// Why there was no handshake.
    public let connectionError: TLSConnectionError?
    /// Why OpenSSL could not evaluate the chain that was served.
    public let evaluationError: SecurityError?

    /// The conclusion. The policy's verdict decides it; the separate chain and host verdicts only add detail.
    public var outcome: Outcome {
        if connectionError != nil { return .noHandshake }
        guard let evaluation else { return .evaluationFailed }
        switch evaluation.failure?.reason {
        case .none: return .trusted
        case .some(.pinMismatch): return .pinMismatch
        case .some(.hostMismatch): return .hostMismatch
        case .some(.revoked): return .revoked
        default: return .chainInvalid
        }
    }

    /// The certificates of the verified chain that satisfy the pins (``TrustEvaluation/pinMatches``). Empty
    /// without pins, or when the chain did not verify.
    public var pinMatches: [PinMatch] { evaluation?.pinMatches ?? [] }

    /// Connects, handshakes and evaluates. Never throws: every failure is part of the result.
    ///
    /// The blocking work (name resolution, `poll`) runs on pinpath's pool for blocking work, not on Swift's
    /// cooperative pool: 8 audits wait on the network at once, more wait their turn (the timeout counts from the
    /// audit's start, not from its turn). It ends within ``Options/timeout`` after resolution; cancelling the task
    /// does not cut it shorter.
    ///
    /// Under ``RevocationMode/ocsp`` without a staple or a cached answer, asks the leaf's responder through
    /// ``Options/ocspResponder`` and audits again (a second handshake), so that the answer is judged as it is in
    /// a request's handshake.
    public static func run(_ endpoint: TLSEndpoint, options: Options) async -> TLSAudit {
        await run(endpoint, options: options, contexts: TLSConnection.sharedContexts)
    }

    /// ``run(_:options:)`` on a connection made from the audit context of `contexts` (a batch's own), by
    /// `connector`: on the blocking pool, or on a `Session`'s handshake engine.
    static func run(
        _ endpoint: TLSEndpoint, options: Options, contexts: TLSClientContexts, connector: TLSAuditConnector = .blockingPool
    ) async -> TLSAudit {
        await answeringOCSP(options) {
            let deadline = ContinuousClock.now + options.timeout
            let context = await TLSConnection.context(
                clientCertificate: options.clientCertificate, in: contexts, label: endpoint.description, deadline: deadline)
            switch context {
            case .success(let context):
                let outcome = await connector.connect(
                    TLSAuditConnector.Attempt(
                        dialled: options.connectTo ?? endpoint, label: endpoint.description,
                        serverName: options.serverName ?? endpoint.host, context: context, deadline: deadline))
                return TLSAudit(endpoint, options: options, outcome: outcome)
            case .failure(let error):
                return TLSAudit(endpoint, options: options, outcome: TLSAuditConnector.Outcome(address: nil, handshake: .failure(error)))
            }
        }
    }

    /// ``init(chainAtRest:file:options:)``, asking the leaf's OCSP responder under ``RevocationMode/ocsp``
    /// (through ``Options/ocspResponder``) when the chain needs it.
    public static func run(chainAtRest chain: [Certificate], file: String, options: Options) async -> TLSAudit {
        await answeringOCSP(options) { TLSAudit(chainAtRest: chain, file: file, options: options) }
    }

    /// Runs `audit`; when its evaluation stopped for an OCSP question and a responder client is given, asks it,
    /// keeps the answer in ``Options/ocspResponses`` and runs `audit` once more.
    private static func answeringOCSP(_ options: Options, _ audit: () async -> TLSAudit) async -> TLSAudit {
        let first = await audit()
        guard let query = first.evaluation?.pendingOCSPQuery, let client = options.ocspResponder else { return first }
        let reply = await client.ask(query)
        options.ocspResponses.record(reply, for: query, now: Date())
        return await audit()
    }

    /// The same as ``run(_:options:)``, blocking the calling thread.
    public init(_ endpoint: TLSEndpoint, options: Options) {
        let deadline = ContinuousClock.now + options.timeout
        let context = TLSConnection.context(
            clientCertificate: options.clientCertificate, in: TLSConnection.sharedContexts, label: endpoint.description)
        self.init(endpoint, options: options, context: context, deadline: deadline)
    }

    /// ``init(_:options:)`` on a connection made from `context` (an audit's), or with its error once connected.
    private init(
        _ endpoint: TLSEndpoint, options: Options, context: Result<TLSClientContext, TLSConnectionError>,
        deadline: ContinuousClock.Instant
    ) {
        switch context {
        case .success(let context):
            let attempt = TLSAuditConnector.Attempt(
                dialled: options.connectTo ?? endpoint, label: endpoint.description,
                serverName: options.serverName ?? endpoint.host, context: context, deadline: deadline)
            self.init(endpoint, options: options, outcome: TLSAuditConnector.connectBlocking(attempt))
        case .failure(let error):
            self.init(endpoint, options: options, outcome: TLSAuditConnector.Outcome(address: nil, handshake: .failure(error)))
        }
    }

    /// Judges what a connection showed: its handshake, or why there was none.
    private init(_ endpoint: TLSEndpoint, options: Options, outcome: TLSAuditConnector.Outcome) {
        let serverName = options.serverName ?? endpoint.host
        switch outcome.handshake {
        case .success(let handshake):
            self.init(endpoint, serverName: serverName, address: outcome.address ?? "", handshake: handshake, options: options)
        case .failure(let error):
            self.init(
                endpoint: endpoint, serverName: serverName, chainFile: nil, verifiedAt: options.verificationTime ?? Date(),
                address: outcome.address, protocolVersion: nil, cipher: nil, servedChain: [], judgement: Judgement(),
                connectionError: error)
        }
    }

    /// Judges a chain read from a file (leaf first, then what a server would send with it) without a
    /// connection: the same policy engine and verdicts as a handshake serving it. ``Options/serverName`` is
    /// the host checked (no host check when `nil`); the policy's profile and maximum chain depth apply;
    /// ``Options/connectTo`` and ``Options/timeout`` are not used. Never throws: an evaluation that cannot run
    /// is ``evaluationError``.
    /// - Parameter file: where the chain came from, for the report and messages.
    public init(chainAtRest chain: [Certificate], file: String, options: Options) {
        var options = options
        let serverName = options.serverName
        if serverName == nil { options.policy.validatesDomainName = false }
        let judgement = Judgement(chain, serverName: serverName, label: serverName ?? file, port: 443, options: options)
        self.init(
            endpoint: TLSEndpoint(host: serverName ?? "", port: 443), serverName: serverName ?? "", chainFile: file,
            verifiedAt: options.verificationTime ?? judgement.evaluation?.date ?? Date(), address: nil,
            protocolVersion: nil, cipher: nil, servedChain: chain, judgement: judgement, connectionError: nil)
    }

    /// Judges a completed handshake.
    private init(
        _ endpoint: TLSEndpoint, serverName: String, address: String, handshake: AuditedHandshake, options: Options
    ) {
        let judgement = Judgement(
            handshake.servedChain, serverName: serverName, label: serverName, port: endpoint.port, options: options,
            stapledOCSPResponse: handshake.stapledOCSPResponse)
        self.init(
            endpoint: endpoint, serverName: serverName, chainFile: nil,
            verifiedAt: options.verificationTime ?? judgement.evaluation?.date ?? Date(), address: address,
            protocolVersion: handshake.protocolVersion, cipher: handshake.cipher, servedChain: handshake.servedChain,
            judgement: judgement, connectionError: nil)
        clientCertificateRequest = handshake.clientCertificateRequest
    }

    /// The verdicts on a chain: the chain alone and the host alone (for the report), then the policy.
    private struct Judgement {
        var chainVerdict: TrustEvaluation.Verdict?
        var hostVerdict: TrustEvaluation.Verdict?
        var evaluation: TrustEvaluation?
        var evaluationError: SecurityError?

        /// No chain to judge.
        init() {}

        /// Judges `served` for `serverName` (the host is not checked when `nil`); `label` names the chain in
        /// the messages of an evaluation that cannot run. A handshake's stapled OCSP response, if any, is
        /// judged by the policy's revocation mode.
        init(
            _ served: [Certificate], serverName: String?, label: String, port: Int, options: Options,
            stapledOCSPResponse: [UInt8]? = nil
        ) {
            let policy = options.policy
            do {
                if !served.isEmpty {
                    // The policy stops at the first failure, and OpenSSL checks the host before dates and
                    // signatures: separate runs say whether each of chain and host is good on its own.
                    // In certificate mode the pinned certificates are the only anchors, as in the policy; any
                    // certificate of the store is an anchor (partial chains), as in the policy.
                    let pinnedAnchors = policy.mode == .certificate
                    let anchors = pinnedAnchors ? try TrustStore.pinned(policy.pinnedCertificates) : options.trustStore
                    let chain = try ChainVerification.searchingPaths(from: served) { served in
                        try policy.profile.verify(served, against: anchors) { profile in
                            try ChainVerification(
                                served: served, store: anchors.store, host: nil, time: options.verificationTime,
                                partialChain: true, leniency: .strict, profile: profile,
                                maximumDepth: policy.maximumChainDepth, crls: policy.crls)
                        }
                    }
                    chainVerdict = chain.failure(host: label, expectedPins: []).map { .rejected($0) } ?? .trusted
                    if let serverName {
                        // The host is matched as the chain's profile matches it (webpki never falls back to the CN).
                        let host = try ChainVerification(
                            served: served, store: anchors.store, host: serverName, time: options.verificationTime,
                            partialChain: true, leniency: .hostOnly, profile: chain.appliedProfile?.profile ?? .webpki)
                        hostVerdict = host.failure(host: serverName, expectedPins: []).map { .rejected($0) } ?? .trusted
                    }
                }
                evaluation = try policy.evaluate(
                    servedChain: served, host: serverName ?? label, port: port, trustStore: options.trustStore,
                    verificationTime: options.verificationTime
                ).applyingStaple(
                    stapledOCSPResponse, now: options.verificationTime ?? Date(),
                    responses: options.ocspResponder == nil ? nil : options.ocspResponses)
            } catch let error as SecurityError {
                evaluationError = error
            } catch {
                evaluationError = SecurityError(.openSSLFailure, "\(label): \(error)")
            }
        }
    }

    private init(
        endpoint: TLSEndpoint, serverName: String, chainFile: String?, verifiedAt: Date, address: String?,
        protocolVersion: String?, cipher: String?, servedChain: [Certificate], judgement: Judgement,
        connectionError: TLSConnectionError?
    ) {
        self.endpoint = endpoint
        self.serverName = serverName
        self.chainFile = chainFile
        self.verifiedAt = verifiedAt
        self.address = address
        self.protocolVersion = protocolVersion
        self.cipher = cipher
        self.servedChain = servedChain
        self.chainVerdict = judgement.chainVerdict
        self.hostVerdict = judgement.hostVerdict
        self.evaluation = judgement.evaluation
        self.connectionError = connectionError
        self.evaluationError = judgement.evaluationError
    }
}
