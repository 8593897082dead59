import Foundation
import PackagePlugin

/// Writes the git commit the package is built from into PinpathBuildCommit before every build, as the C function
/// `pinpath_build_commit` that `PinpathVersion.commit` reads: `git rev-parse` on the package's own checkout, or
/// NULL when the package is not one (a source tarball, a Debian source build, a copy). The file is rewritten
/// only when its text changes, so an unchanged commit recompiles nothing, and a new one only this target.
@main
struct GitCommit: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        let outputDirectory = context.pluginWorkDirectoryURL.appending(path: "GitCommit")
        return [
            .prebuildCommand(
                displayName: "Reading the git commit of \(context.package.directoryURL.path)",
                executable: URL(filePath: "/bin/sh"),
                arguments: ["-c", Self.script, "git-commit", context.package.directoryURL.path, outputDirectory.path],
                outputFilesDirectory: outputDirectory)
        ]
    }

    /// A shell script, because a prebuild command cannot run a tool built from this package. It never fails the
    /// build: without git, outside a checkout, or inside someone else's checkout (a tarball unpacked in a git
    /// tree), the commit is nil.
    static let script = #"""
        package=$1 output=$2
        mkdir -p "$output" || exit 1
        commit=nil
        if command -v git >/dev/null 2>&1; then
            top=$(git -C "$package" rev-parse --show-toplevel 2>/dev/null)
            if [ -n "$top" ] && [ "$(cd "$top" && pwd -P)" = "$(cd "$package" && pwd -P)" ]; then
                hash=$(git -C "$package" rev-parse --short=7 HEAD 2>/dev/null) && [ -n "$hash" ] && commit="\"$hash\""
            fi
        fi
        [ "$commit" = nil ] && value=nil || value="UnsafeRawPointer(($commit as StaticString).utf8Start).assumingMemoryBound(to: CChar.self)"
        text="// Written by the GitCommit plugin (Plugins/GitCommit) before each build.
        @_cdecl(\"pinpath_build_commit\") public func pinpathBuildCommit() -> UnsafePointer<CChar>? { $value }"
        [ "$(cat "$output/GitCommit.swift" 2>/dev/null)" = "$text" ] || printf '%s\n' "$text" > "$output/GitCommit.swift"
        """#
}
