import Foundation
import PinpathReachability
import Testing

@testable import PinpathAgent

/// Issue 26, item 3: which targets a module may probe, decided before any connection (``TargetAdmission``): the
/// module's `targets:`, or without one the default refusals (loopback, link-local, the unspecified addresses, the
/// cloud metadata services, the agent's own listener, and their IPv4-mapped forms).
@Suite("Target admission")
struct TargetAdmissionTests {
    func decide(
        _ target: String, module: String = "modules:\n  web: { kind: http }\n", listener: (String, Int)? = nil, local: [String] = []
    ) async throws -> TargetAdmission.Decision {
        let configuration = try loadConfiguration(module)
        let web = try #require(configuration.module(named: "web"))
        let endpoint = try web.endpoint(forTarget: target)
        let admission = TargetAdmission(
            module: "web", allowList: web.targets, listener: listener.map { (IPAddress($0.0)!, $0.1) },
            localAddresses: local.compactMap(IPAddress.init))
        return await admission.decide(endpoint, timeout: .seconds(5))
    }

    static func refusal(_ decision: TargetAdmission.Decision) -> String? {
        if case .refused(let reason) = decision { return reason }
        return nil
    }

    @Test(
        "Without targets:, loopback, link-local, unspecified, metadata and IPv4-mapped forms are refused, naming what they are",
        arguments: [
            ("127.0.0.1", "a loopback address"), ("127.1.2.3", "a loopback address"), ("[::1]", "the loopback address"),
            ("[::ffff:127.0.0.1]", "a loopback address"), ("0.0.0.0", "unspecified"), ("[::]", "the unspecified address"),
            ("169.254.169.254", "the cloud metadata service's address"), ("[::ffff:169.254.169.254]", "metadata service"),
            ("[fd00:ec2::254]", "the AWS metadata service's IPv6 address"),
            ("[fd20:ce::254]", "the GCP metadata service's IPv6 address"), ("100.100.100.200", "Alibaba Cloud metadata"),
            ("168.63.129.16", "Azure platform"), ("169.254.10.1", "a link-local address"), ("[fe80::1]", "a link-local address"),
        ])
    func defaultRefusals(host: String, what: String) async throws {
        let decision = try await decide("http://\(host):8080/")
        let reason = try #require(Self.refusal(decision), "\(decision)")
        #expect(reason.contains(what), "\(reason)")
        #expect(reason.contains("targets:"), "the reason says how to allow it: \(reason)")
    }

    @Test("Without targets:, another address is admitted and pinned")
    func otherAddressAdmitted() async throws {
        let decision = try await decide("http://198.51.100.7:8080/")
        #expect(decision == .admitted(address: IPAddress("198.51.100.7"), resolved: [IPAddress("198.51.100.7")!]))
    }

    @Test("A name that resolves to loopback (localhost) is refused, naming what it resolved to")
    func nameToLoopback() async throws {
        let reason = try #require(Self.refusal(try await decide("http://localhost:8080/")))
        #expect(reason.contains("localhost resolved to 127.0.0.1"), "\(reason)")
    }

    @Test("targets: admits its ranges (loopback included when named) and refuses the rest; a pattern admits a host as written")
    func allowList() async throws {
        let module = "modules:\n  web: { kind: http, targets: [127.0.0.0/8, 198.51.100.0/24, \"**.example.test\"] }\n"
        #expect(
            try await decide("http://127.0.0.1:8080/", module: module)
                == .admitted(address: IPAddress("127.0.0.1"), resolved: [IPAddress("127.0.0.1")!]))
        #expect(
            try await decide("http://localhost:8080/", module: module)
                == .admitted(address: IPAddress("127.0.0.1"), resolved: [IPAddress("127.0.0.1")!]))
        let outside = try #require(Self.refusal(try await decide("http://203.0.113.9/", module: module)))
        #expect(outside == #"203.0.113.9 is outside module "web"'s targets:"#)
        // A pattern names hosts, not the metadata service one of them might resolve to: still refused.
        let metadata = try #require(Self.refusal(try await decide("http://169.254.169.254/", module: module)))
        #expect(metadata.contains("metadata"), "\(metadata)")
    }

    @Test("The agent's own listener is refused, also on the unspecified address through this machine's addresses")
    func listener() async throws {
        let module = "modules:\n  web: { kind: http, targets: [127.0.0.0/8, 192.0.2.0/24] }\n"
        let own = try #require(Self.refusal(try await decide("http://127.0.0.1:9818/", module: module, listener: ("127.0.0.1", 9818))))
        #expect(own.contains("this agent's own listener"), "\(own)")
        #expect(Self.refusal(try await decide("http://127.0.0.1:9819/", module: module, listener: ("127.0.0.1", 9818))) == nil)
        let wildcard = try await decide("http://192.0.2.2:9818/", module: module, listener: ("0.0.0.0", 9818), local: ["192.0.2.2"])
        #expect(Self.refusal(wildcard)?.contains("own listener") == true, "\(wildcard)")
        #expect(
            Self.refusal(try await decide("http://192.0.2.3:9818/", module: module, listener: ("0.0.0.0", 9818), local: ["192.0.2.2"]))
                == nil)
    }

    /// Attacker's second review: 0.0.0.0, `0`, [::ffff:0.0.0.0] and 127.0.0.2 reached the listener unrefused.
    @Test(
        "Every address that reaches the listener is refused as it, whatever targets: says; another port, or another host's address, is not",
        arguments: [
            ("127.0.0.1", "0.0.0.0", true), ("127.0.0.1", "0", true), ("127.0.0.1", "[::ffff:0.0.0.0]", true),
            ("127.0.0.1", "127.0.0.2", true), ("127.0.0.1", "[::1]", true), ("127.0.0.1", "[::]", true),
            ("127.0.0.1", "192.0.2.2", true), ("0.0.0.0", "127.255.255.254", true), ("0.0.0.0", "[::ffff:192.0.2.2]", true),
            ("::", "127.0.0.2", true), ("::1", "0.0.0.0", true), ("192.0.2.2", "192.0.2.2", true), ("192.0.2.2", "0.0.0.0", true),
            ("192.0.2.2", "127.0.0.1", true), ("192.0.2.2", "192.0.2.3", false), ("0.0.0.0", "192.0.2.9", false),
        ])
    func listenerEveryAddress(listener: String, target: String, refused: Bool) async throws {
        let module = "modules:\n  web: { kind: http, targets: [\"0.0.0.0/0\", \"::/0\"] }\n"
        let decision = try await decide(
            "http://\(target):9818/", module: module, listener: (listener, 9818), local: ["192.0.2.2", "192.0.2.3"])
        #expect((Self.refusal(decision)?.contains("own listener") ?? false) == refused, "\(decision)")
        let otherPort = try await decide("http://\(target):9819/", module: module, listener: (listener, 9818), local: ["192.0.2.2"])
        #expect(Self.refusal(otherPort)?.contains("own listener") != true, "\(otherPort)")
    }

    /// Attacker's review of issue 26: `target=http://<eth0's address>:PORT/` reached a service bound to 0.0.0.0,
    /// over `lo`, past firewall rules meant for loopback.
    @Test(
        "Without targets:, this machine's own addresses are refused, IPv4, IPv6 and IPv4-mapped; only a range of targets: admits one",
        arguments: ["192.0.2.2", "[2001:db8::2]", "[::ffff:192.0.2.2]"])
    func ownAddresses(host: String) async throws {
        let local = ["127.0.0.1", "192.0.2.2", "2001:db8::2"]
        let reason = try #require(Self.refusal(try await decide("http://\(host):8080/", local: local)))
        #expect(reason.contains("an address of this machine"), "\(reason)")
        #expect(reason.contains("targets:"), "the reason says how to allow it: \(reason)")
        // Another address of the same networks is not this machine's.
        #expect(Self.refusal(try await decide("http://192.0.2.3:8080/", local: local)) == nil)
        // A range of targets: that contains the address admits it.
        let byRange = "modules:\n  web: { kind: http, targets: [192.0.2.0/24, \"2001:db8::/64\"] }\n"
        #expect(Self.refusal(try await decide("http://\(host):8080/", module: byRange, local: local)) == nil)
    }

    @Test("Through a proxy a name is admitted only by a host pattern, and nothing is pinned; an address literal is still checked")
    func throughProxy() async throws {
        let module = "modules:\n  web: { kind: http, proxy: \"http://192.0.2.10:3128\", targets: [\"**.example.test\"] }\n"
        #expect(try await decide("http://api.example.test/", module: module) == .admitted(address: nil, resolved: []))
        let name = try #require(Self.refusal(try await decide("http://other.test/", module: module)))
        #expect(name.contains("through a proxy"), "\(name)")
        let noList = "modules:\n  web: { kind: http, proxy: \"http://192.0.2.10:3128\" }\n"
        #expect(Self.refusal(try await decide("http://127.0.0.1/", module: noList))?.contains("loopback") == true)
    }
}
