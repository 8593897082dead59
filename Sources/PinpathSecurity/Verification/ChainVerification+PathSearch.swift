/// Another path when the first fails. OpenSSL builds one path, taking the first issuer it finds among the
/// certificates the server sent, and stops at its first error; a server may send a second issuer with the same
/// name and key (a cross-signed intermediate) through which a good path exists, as path builders that
/// backtrack find (RFC 4158; Go, pyca/cryptography).
extension ChainVerification {
    /// How many paths are tried after the first, at most.
    static let alternativePathLimit = 8

    /// Runs `verify` on `served`; while the path fails at a certificate the server sent other than the leaf,
    /// runs it again without that certificate, so that OpenSSL looks for another issuer there. Each path is a
    /// whole verification, and pins are matched only against the one that passed; when none does, the first
    /// path's failure is the one reported.
    static func searchingPaths(
        from served: [Certificate], _ verify: ([Certificate]) throws -> ChainVerification
    ) rethrows -> ChainVerification {
        let first = try verify(served)
        var candidates = served
        var latest = first
        for _ in 0..<alternativePathLimit {
            guard !latest.verified, let avoided = latest.servedCertificateToAvoid,
                let index = candidates.dropFirst().firstIndex(of: avoided)
            else { break }
            candidates.remove(at: index)
            latest = try verify(candidates)
            if latest.verified { return latest }
        }
        return first
    }

    /// The sent certificate, other than the leaf, nearest below the failure: where another issuer could lead
    /// to another path. `nil` for a host error, or a failure of the leaf itself.
    var servedCertificateToAvoid: Certificate? {
        guard depth >= 1, !Self.isHostError(error) else { return nil }
        let highest = min(depth, chain.count - 1, servedCount - 1)
        return highest >= 1 ? chain[highest] : nil
    }
}
