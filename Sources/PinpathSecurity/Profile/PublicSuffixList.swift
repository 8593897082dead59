import CPSL

/// The public suffix list of Debian's `publicsuffix` package, through libpsl: `com`, `co.uk` and the like,
/// under which anyone may register a name.
enum PublicSuffixList {
    /// Whether `domain` (ASCII, lower or upper case) is a public suffix of the list's ICANN section. The
    /// private section (`github.io`, `blogspot.com`) is left out, as Chromium does for wildcards, because its
    /// operators legitimately hold wildcard certificates for their own suffix; so is the implicit `*` rule,
    /// so that a private PKI's `*.corp` under an unlisted top-level name is not refused. Wraps
    /// `psl_is_public_suffix2`.
    static func isPublicSuffix(_ domain: String) -> Bool {
        guard let context = Context.shared.pointer else { return false }
        return psl_is_public_suffix2(context, domain.lowercased(), Int32(PSL_TYPE_ICANN | PSL_TYPE_NO_STAR_RULE)) != 0
    }

    /// libpsl's list, loaded once: the newer of the one built into libpsl and Debian's file
    /// (`psl_latest(NULL)`). `@unchecked Sendable` is true: libpsl never changes a loaded context, and its
    /// lookups only read it.
    private final class Context: @unchecked Sendable {
        static let shared = Context()
        let pointer: OpaquePointer?

        private init() { pointer = psl_latest(nil) ?? psl_builtin() }
    }
}
