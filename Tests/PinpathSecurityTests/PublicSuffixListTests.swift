import Testing

@testable import PinpathSecurity

@Suite("Public suffix list (libpsl, loaded at run time)")
struct PublicSuffixListTests {
    @Test("Debian's list answers: ICANN suffixes are public, registrable domains and private-section suffixes are not")
    func answers() {
        #expect(PublicSuffixList.classify("co.uk") == .publicSuffix)
        #expect(PublicSuffixList.classify("COM") == .publicSuffix)
        #expect(PublicSuffixList.classify("example.co.uk") == .notPublicSuffix)
        #expect(PublicSuffixList.classify("github.io") == .notPublicSuffix)
    }

    @Test("Without libpsl every domain is unavailable, naming why: the wildcard rule then refuses instead of passing")
    func missingLibrary() {
        let missing = PublicSuffixList.Library(path: "/nonexistent/libpsl.so.5")
        guard case .unavailable(let reason) = PublicSuffixList.classify("example.com", in: missing) else {
            Issue.record("a missing libpsl answered as if it were loaded")
            return
        }
        #expect(reason.contains("public suffix list is unavailable") && reason.contains("/nonexistent/libpsl.so.5"))
    }
}
