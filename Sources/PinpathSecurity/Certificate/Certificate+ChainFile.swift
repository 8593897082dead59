extension Certificate {
    /// The certificates of a chain file, in order (the leaf first, as a server sends them): PEM with several
    /// blocks, or one DER certificate. Keys and CSRs in the file are skipped.
    /// - Throws: ``SecurityError`` naming `path`: `unreadableFile`, or `invalidInput` for a damaged file or one
    ///   with no certificate.
    public static func chain(contentsOf path: String) throws -> [Certificate] {
        let certificates = try KeyMaterial.load(contentsOf: path).compactMap(\.certificate)
        guard !certificates.isEmpty else {
            throw SecurityError(.invalidInput, "\(path): no certificate (it holds only keys or CSRs)")
        }
        return certificates
    }
}
