import COpenSSL
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
        case paths(file: String, directory: String)
        case certificates([Certificate])
    }

    let store: OpaquePointer
    private let material: Material

    private init(source: String, material: Material) throws {
        guard let store = X509_STORE_new() else {
            throw SecurityError.openSSL(.openSSLFailure, "cannot allocate a trust store for \(source)")
        }
        self.store = store
        self.material = material
    }

    public static func == (lhs: TrustStore, rhs: TrustStore) -> Bool { lhs === rhs || lhs.material == rhs.material }

    public func hash(into hasher: inout Hasher) { hasher.combine(material) }

    deinit { X509_STORE_free(store) }

    /// The system's trust store: OpenSSL's default file and directory, or the `SSL_CERT_FILE` and
    /// `SSL_CERT_DIR` environment variables when set (as `X509_STORE_set_default_paths` reads them).
    public static func system() throws -> TrustStore {
        let paths = defaultPaths { name in getenv(name).map { String(cString: $0) } }
        return try TrustStore(file: paths.file, directory: paths.directory)
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

    /// A store over a CA file and a hashed directory (or a `:`-separated list). Like OpenSSL's defaults, a
    /// missing file or directory just contributes nothing. Wraps `X509_STORE_load_file` and `X509_STORE_load_path`.
    convenience init(file: String, directory: String) throws {
        try self.init(source: "the system", material: .paths(file: file, directory: directory))
        _ = X509_STORE_load_file(store, file)
        guard X509_STORE_load_path(store, directory) == 1 else {
            throw SecurityError.openSSL(.openSSLFailure, "cannot use the certificate directory \(directory)")
        }
        _ = drainOpenSSLErrors()  // a missing default file queues a harmless error
    }

    /// The certificates of a PEM file (a CA bundle). Wraps `X509_STORE_load_file`.
    /// - Throws: ``SecurityError`` naming `path` when it cannot be read or holds no certificate.
    public convenience init(caFile path: String) throws {
        // Load through KeyMaterial first: its errors name the file and say what was wrong, OpenSSL's do not.
        let certificates = try Certificate.certificates(contentsOf: path)
        try self.init(certificates: certificates, source: path)
    }

    /// A store holding exactly `certificates`.
    public convenience init(certificates: [Certificate]) throws {
        try self.init(certificates: certificates, source: "\(certificates.count) certificates")
    }

    private convenience init(certificates: [Certificate], source: String) throws {
        try self.init(source: source, material: .certificates(certificates))
        for certificate in certificates {
            guard X509_STORE_add_cert(store, certificate.x509) == 1 else {
                throw SecurityError.openSSL(.openSSLFailure, "cannot add \(certificate.subject) from \(source) to a trust store")
            }
        }
    }
}
