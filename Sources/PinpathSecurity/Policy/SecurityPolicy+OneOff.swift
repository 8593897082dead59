extension SecurityPolicy {
    /// A policy for a check made once and not kept: an audit, a chain judged at rest, a single request.
    ///
    /// One pin is enough: the backup pin an enforcing configuration needs protects clients that keep a policy
    /// across a key rotation, and a one-off check has no such clients. The mode follows from what is given:
    /// `certificate` with pinned certificates (they are then the only anchors), `public_key` with pins, `none`
    /// without either.
    /// - Parameters:
    ///   - pins: SPKI pins; any certificate of the verified chain with a pinned key satisfies them.
    ///   - pinnedCertificates: the anchors of a `certificate` policy; give them without `pins`.
    ///   - profile, maximumChainDepth, crls, revocation, ocspSoftFail: as for the initializer.
    /// - Throws: ``SecurityError`` with code `invalidPolicy` when the initializer refuses the combination.
    public static func oneOff(
        pins: [SPKIPin] = [], pinnedCertificates: [Certificate] = [], profile: ProfileSelection = .auto,
        maximumChainDepth: Int? = nil, crls: [CertificateRevocationList] = [], revocation: RevocationMode = .none,
        ocspSoftFail: Bool = false
    ) throws -> SecurityPolicy {
        let mode: PinningMode = !pinnedCertificates.isEmpty ? .certificate : pins.isEmpty ? .none : .publicKey
        return try SecurityPolicy(
            mode: mode, pins: mode == .certificate ? [] : pins, pinnedCertificates: pinnedCertificates,
            requiresBackupPin: false, profile: profile, maximumChainDepth: maximumChainDepth, crls: crls,
            revocation: revocation, ocspSoftFail: ocspSoftFail)
    }
}
