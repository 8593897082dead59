import PinpathSecurity
import Testing

@testable import PinpathAgent

/// The `profile` and `max_chain_depth` keys of a policy.
@Suite("Configuration: profile and max_chain_depth")
struct ProfileConfigurationTests {
    static let endpoint = "endpoints:\n  - name: api\n    url: https://api.example/\n    policy: p\npolicies:\n  p:\n    mode: none\n"

    @Test("Read into the policy; auto and no depth limit by default, also for an endpoint with no policy")
    func values() throws {
        let lenient = try loadConfiguration(Self.endpoint + "    profile: rfc5280\n    max_chain_depth: 3\n")
        #expect(lenient.policies[0].policy.profile == .rfc5280)
        #expect(lenient.policies[0].policy.maximumChainDepth == 3)
        #expect(lenient.endpoints[0].security?.policy.profile == .rfc5280)
        let plain = try loadConfiguration(Self.endpoint)
        #expect(plain.policies[0].policy.profile == .auto)
        let forced = try loadConfiguration(Self.endpoint + "    profile: webpki\n")
        #expect(forced.policies[0].policy.profile == .webpki)
        #expect(try loadConfiguration(Self.endpoint + "    profile: auto\n").policies[0].policy.profile == .auto)
        #expect(plain.policies[0].policy.maximumChainDepth == nil)
        let unpolicied = try loadConfiguration("endpoints:\n  - { name: api, url: \"https://api.example/\" }\n")
        #expect(unpolicied.endpoints[0].security == nil)  // the session's default policy: auto
        #expect(try SecurityPolicy(mode: .none).profile == .auto)
    }

    @Test(
        "Bad values are problems at their line and column",
        arguments: [
            ("    profile: browser", #"test.yaml:8:14: policies.p.profile: "browser" is not one of auto, webpki, rfc5280"#),
            (
                "    profile: rfc5820",
                #"test.yaml:8:14: policies.p.profile: "rfc5820" is not one of auto, webpki, rfc5280; did you mean "rfc5280"?"#
            ),
            (
                "    max_chain_depth: 0",
                "test.yaml:8:22: policies.p.max_chain_depth: 0 is out of range (expected a whole number from 1 to 100)"
            ),
            (
                "    max_chain_depth: deep",
                #"test.yaml:8:22: policies.p.max_chain_depth: expected a whole number from 1 to 100, found "deep""#
            ),
        ])
    func problems(line: String, expected: String) {
        #expect(configurationProblems(Self.endpoint + line + "\n") == [expected])
    }
}
