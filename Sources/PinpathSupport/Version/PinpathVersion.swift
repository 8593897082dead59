import CLinuxShims

/// pinpath's version, as the CLI, the `User-Agent`, `agent.started` and the man pages report it.
///
/// ``current`` is the one place the version is written: CHANGELOG.md's latest heading and debian/changelog
/// follow it (a test checks that they agree).
public enum PinpathVersion {
    /// The release, in Semantic Versioning: `0.1.0`.
    public static let current = "0.1.0"

    /// The git commit this build was made from, abbreviated to 7 hexadecimal digits (`abc1234`), or nil when it
    /// was not built from a git checkout (a source tarball, a Debian source package). The GitCommit build plugin
    /// reads it before each build into the PinpathBuildCommit target, which is linked, not imported (a weak C
    /// symbol): a new commit then recompiles that one file instead of every module above this one.
    public static let commit: String? = pinpath_linked_build_commit().map { String(cString: $0) }

    /// The version with its commit, as `pinpath --version` prints it after the name: `0.1.0 (git abc1234)`, or
    /// `0.1.0` without a commit.
    public static var description: String {
        commit.map { "\(current) (git \($0))" } ?? current
    }
}
