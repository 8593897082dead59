/// The system store as ``PublicAnchors`` consults it, read only as far as each look-up needs: the bundle file
/// through a ``CertificateBundleIndex`` and the hashed directory through OpenSSL's own directory look-up (which
/// reads only the files named after the subject's hash).
///
/// What a look-up returns includes everything the loaded system store (``TrustStore/system()``) returns for
/// that name: the index finds what `X509_STORE_load_file` would have added, and when it could not read the
/// file as OpenSSL does, the file is loaded as OpenSSL does and consulted too. It may return more: the loaded
/// store answers from the file alone when the file has the name, and adds nothing from a file OpenSSL cannot
/// read whole. More certificates can only make an anchor public, that is hold its paths to `webpki`.
final class SystemAnchors: AnchorLookup, Sendable {
    private let bundle: CertificateBundleIndex
    /// The bundle file loaded by OpenSSL, only when ``bundle`` is not complete.
    private let loadedBundle: TrustStore?
    /// The hashed directory; `nil` when OpenSSL refuses its path (an empty `SSL_CERT_DIR`).
    private let directory: TrustStore?

    init(file: String, directory: String) {
        bundle = CertificateBundleIndex(contentsOf: file)
        loadedBundle = bundle.isComplete ? nil : try? TrustStore(file: file, directory: nil)
        self.directory = try? TrustStore(file: nil, directory: directory)
    }

    /// The system store of this process: OpenSSL's default paths or `SSL_CERT_FILE` and `SSL_CERT_DIR`.
    static func process() -> SystemAnchors {
        let paths = TrustStore.defaultPaths()
        return SystemAnchors(file: paths.file, directory: paths.directory)
    }

    /// Whether the index read the whole bundle, so that OpenSSL did not have to load it.
    var bundleIsComplete: Bool { bundle.isComplete }

    private var parts: [any AnchorLookup] { [bundle] + [loadedBundle, directory].compactMap { $0 } }

    func certificates(named name: OpaquePointer?) throws -> [Certificate] {
        try parts.flatMap { try $0.certificates(named: name) }
    }
}
