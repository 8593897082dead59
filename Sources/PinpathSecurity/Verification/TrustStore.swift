import COpenSSL
import COpenSSLShims
import Glibc

/// The certificates a chain may end at. Owns an OpenSSL `X509_STORE`.
///
/// Stores compare by what they were made from (the same file and directory paths, or the same certificates),
/// so that two stores loaded from identical material are equal: a reload of an unchanged CA file is no change.
///
/// `@unchecked Sendable` because the store is not changed after creation, and OpenSSL locks an
/// `X509_STORE`'s object cache and directory look-ups itself, so concurrent verifications may share it.
public final class TrustStore: @unchecked Sendable, Hashable {
    /// What a store was made from: its identity for `==`.
    private enum Material: Hashable {
        case paths(file: String?, directory: String?)
        case certificates([Certificate])
    }

    /// Where a store's anchors came from: what ``ProfileSelection/auto`` chooses a profile by, and how the
    /// choice is explained (`anchor from ca_file`).
    public struct Origin: Hashable, Sendable, CustomStringConvertible {
        let name: String
        /// How a reason names it: `the system store`, `ca_file`.
        public var description: String { name }
        /// The system's public store (``TrustStore/system()``).
        public static let system = Origin(name: "the system store")
        /// A CA file (`ca_file`, `--ca-file`, ``TrustStore/init(caFile:)``).
        public static let caFile = Origin(name: "ca_file")
        /// Certificates given in code (``TrustStore/init(certificates:)``).
        public static let certificates = Origin(name: "the given certificates")
        /// The pinned certificates of a `certificate` policy (`certificates`), its only anchors.
        public static let pinnedCertificates = Origin(name: "a pinned certificate")
    }

    let store: OpaquePointer
    private let material: Material
    /// Where the anchors came from.
    public let origin: Origin

    private init(source: String, material: Material, origin: Origin) throws {
        guard let store = X509_STORE_new() else {
            throw SecurityError.openSSL(.openSSLFailure, "cannot allocate a trust store for \(source)")
        }
        self.store = store
        self.material = material
        self.origin = origin
    }

    /// Equal stores hold the same anchors from the same origin: a pinned certificate and the same certificate
    /// in a CA file choose profiles alike, but are reported differently.
    public static func == (lhs: TrustStore, rhs: TrustStore) -> Bool {
        lhs === rhs || (lhs.material == rhs.material && lhs.origin == rhs.origin)
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(material)
        hasher.combine(origin)
    }

    deinit { X509_STORE_free(store) }

    /// The system's trust store: OpenSSL's default file and directory, or the `SSL_CERT_FILE` and
    /// `SSL_CERT_DIR` environment variables when set (as `X509_STORE_set_default_paths` reads them).
    public static func system() throws -> TrustStore {
        let paths = defaultPaths()
        return try TrustStore(file: paths.file, directory: paths.directory)
    }

    /// Where the system store lives for this process (``defaultPaths(environment:)`` over its environment).
    static func defaultPaths() -> (file: String, directory: String) {
        defaultPaths { name in getenv(name).map { String(cString: $0) } }
    }

    /// Where the system store lives, resolved as OpenSSL does; `environment` reads a variable. Separate from
    /// ``system()`` so that tests need not change the process environment while other threads read it.
    static func defaultPaths(environment: (String) -> String?) -> (file: String, directory: String) {
        let file =
            environment(String(cString: X509_get_default_cert_file_env()))
            ?? String(cString: X509_get_default_cert_file())
        let directory =
            environment(String(cString: X509_get_default_cert_dir_env()))
            ?? String(cString: X509_get_default_cert_dir())
        return (file, directory)
    }

    /// A store over a CA file and a hashed directory (or a `:`-separated list); `nil` leaves that part out. Like
    /// OpenSSL's defaults, a missing file or directory just contributes nothing. Wraps `X509_STORE_load_file`
    /// (which decodes every certificate of the file now) and `X509_STORE_load_path` (which reads a directory's
    /// files only when a look-up asks for their subject).
    convenience init(file: String?, directory: String?) throws {
        try self.init(source: "the system", material: .paths(file: file, directory: directory), origin: .system)
        if let file { _ = X509_STORE_load_file(store, file) }
        if let directory {
            guard X509_STORE_load_path(store, directory) == 1 else {
                throw SecurityError.openSSL(.openSSLFailure, "cannot use the certificate directory \(directory)")
            }
        }
        _ = drainOpenSSLErrors()  // a missing default file queues a harmless error
    }

    /// The certificates of a PEM file (a CA bundle). Wraps `X509_STORE_load_file`.
    /// - Throws: ``SecurityError`` naming `path` when it cannot be read or holds no certificate.
    public convenience init(caFile path: String) throws {
        // Load through KeyMaterial first: its errors name the file and say what was wrong, OpenSSL's do not.
        let certificates = try Certificate.certificates(contentsOf: path)
        try self.init(certificates: certificates, source: path, origin: .caFile)
    }

    /// A store holding exactly `certificates`.
    public convenience init(certificates: [Certificate]) throws {
        try self.init(certificates: certificates, source: "\(certificates.count) certificates", origin: .certificates)
    }

    /// The store of a `certificate` policy: its pinned certificates, the only anchors.
    static func pinned(_ certificates: [Certificate]) throws -> TrustStore {
        try TrustStore(certificates: certificates, source: "the pinned certificates", origin: .pinnedCertificates)
    }

    private convenience init(certificates: [Certificate], source: String, origin: Origin) throws {
        try self.init(source: source, material: .certificates(certificates), origin: origin)
        for certificate in certificates {
            guard X509_STORE_add_cert(store, certificate.x509) == 1 else {
                throw SecurityError.openSSL(.openSSLFailure, "cannot add \(certificate.subject) from \(source) to a trust store")
            }
        }
    }
}

extension TrustStore {
    /// Whether `certificate` itself is one of the anchors (not only one with its name).
    func holds(_ certificate: Certificate) throws -> Bool {
        try certificates(withSubjectOf: certificate).contains(certificate)
    }

    /// The anchors whose subject is `name`. Wraps `X509_STORE_CTX_get1_certs`, which also reads a hashed
    /// directory's files for that name.
    func certificates(named name: OpaquePointer?) throws -> [Certificate] {
        guard let name else { return [] }
        guard let context = X509_STORE_CTX_new() else {
            throw SecurityError.openSSL(.openSSLFailure, "cannot allocate an X509_STORE_CTX")
        }
        defer { X509_STORE_CTX_free(context) }
        guard X509_STORE_CTX_init(context, store, nil, nil) == 1 else {
            throw SecurityError.openSSL(.openSSLFailure, "cannot look up certificates in a trust store")
        }
        // No match is a NULL stack with an error queued, not a failure.
        guard let found = X509_STORE_CTX_get1_certs(context, name) else {
            _ = drainOpenSSLErrors()
            return []
        }
        defer { pinpath_sk_X509_free(found) }
        // The stack holds a reference to each certificate: each becomes its Certificate's to free.
        return (0..<pinpath_sk_X509_num(found)).compactMap { index in
            pinpath_sk_X509_value(found, index).map { Certificate(owning: $0) }
        }
    }
}

extension TrustStore: AnchorLookup {}
