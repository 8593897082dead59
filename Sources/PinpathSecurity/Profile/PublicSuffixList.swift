import Glibc

/// The public suffix list of Debian's `publicsuffix` package, through libpsl: `com`, `co.uk` and the like,
/// under which anyone may register a name.
///
/// libpsl is loaded when first needed (`dlopen("libpsl.so.5")`) rather than linked, so that PinpathSecurity
/// builds with OpenSSL's headers alone; libpsl5 is on every system that has libcurl. Without it, no wildcard
/// can be cleared, and the rule refuses wildcards instead of letting them pass unchecked.
enum PublicSuffixList {
    /// What the list says of a domain.
    enum Answer: Equatable {
        case publicSuffix
        case notPublicSuffix
        /// libpsl could not be loaded: why, for the violation's message.
        case unavailable(String)
    }

    /// Whether `domain` (ASCII, lower or upper case) is a public suffix of the list's ICANN section. The
    /// private section (`github.io`, `blogspot.com`) is left out, as Chromium does for wildcards, because its
    /// operators legitimately hold wildcard certificates for their own suffix; so is the implicit `*` rule,
    /// so that a private PKI's `*.corp` under an unlisted top-level name is not refused. Wraps
    /// `psl_is_public_suffix2`.
    static func classify(_ domain: String) -> Answer {
        classify(domain, in: Library.shared)
    }

    /// `classify(_:)` against a given load of libpsl (the tests load a missing one).
    static func classify(_ domain: String, in library: Library) -> Answer {
        guard let context = library.context, let isPublicSuffix = library.isPublicSuffix else {
            return .unavailable(library.failure ?? "libpsl is not loaded")
        }
        let icannWithoutStarRule: Int32 = 1 << 0 | 1 << 2  // PSL_TYPE_ICANN | PSL_TYPE_NO_STAR_RULE
        return isPublicSuffix(context, domain.lowercased(), icannWithoutStarRule) != 0 ? .publicSuffix : .notPublicSuffix
    }

    /// libpsl and its list, loaded once: the newer of the list built into libpsl and Debian's file
    /// (`psl_latest(NULL)`). `@unchecked Sendable` is true: it never changes after `init`, libpsl never
    /// changes a loaded context, and its lookups only read it.
    final class Library: @unchecked Sendable {
        typealias Latest = @convention(c) (UnsafePointer<CChar>?) -> OpaquePointer?
        typealias Builtin = @convention(c) () -> OpaquePointer?
        typealias IsPublicSuffix = @convention(c) (OpaquePointer?, UnsafePointer<CChar>?, Int32) -> Int32

        static let shared = Library(path: "libpsl.so.5")

        let context: OpaquePointer?
        let isPublicSuffix: IsPublicSuffix?
        /// Why the list is unavailable, when it is.
        let failure: String?

        init(path: String) {
            guard let handle = dlopen(path, RTLD_NOW | RTLD_LOCAL) else {
                context = nil
                isPublicSuffix = nil
                failure = "the public suffix list is unavailable (\(String(cString: dlerror())))"
                return
            }
            guard let latest = dlsym(handle, "psl_latest"), let builtin = dlsym(handle, "psl_builtin"),
                let lookUp = dlsym(handle, "psl_is_public_suffix2")
            else {
                context = nil
                isPublicSuffix = nil
                failure = "the public suffix list is unavailable (\(path) lacks psl_latest, psl_builtin or psl_is_public_suffix2)"
                return
            }
            isPublicSuffix = unsafeBitCast(lookUp, to: IsPublicSuffix.self)
            context = unsafeBitCast(latest, to: Latest.self)(nil) ?? unsafeBitCast(builtin, to: Builtin.self)()
            failure = context == nil ? "the public suffix list is unavailable (libpsl loaded no list)" : nil
        }
    }
}
