import PinpathSupport
import PinpathTestSupport
import Testing

@testable import PinpathAgent

/// `pinpath_build_info{version,commit}`: the build a scrape came from, as `pinpath --version` names it.
@Suite("Metrics: pinpath_build_info")
struct BuildInfoMetricTests {
    @Test("The default labels are the version and the commit --version prints (unknown outside a git checkout)")
    func versionAndCommit() {
        let text = MetricsExposition.render(MetricsSnapshot(endpoints: []))
        let commit = PinpathVersion.commit ?? "unknown"
        #expect(text.contains("pinpath_build_info{version=\"\(PinpathVersion.current)\",commit=\"\(commit)\"} 1\n"), "\(text)")
    }

    @Test("The commit is the one pinpath --version prints, when built from this checkout")
    func commitMatchesVersion() throws {
        let version = try Shell.check([Shell.pinpath, "--version"])
        #expect(version == "pinpath \(PinpathVersion.description)\n")
    }
}
