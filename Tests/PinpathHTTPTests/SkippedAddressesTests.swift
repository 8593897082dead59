import PinpathReachability
import Testing

@testable import PinpathHTTP

/// The `unreachable` message of a request whose every resolved address the reachability gate skipped: it names
/// them, so that a name resolved where nothing leads (a spoofed DNS answer, say) shows in the probe's message.
/// End to end: `Request gating on the kernel` › `cli` and `A DNS answer in a namespace`.
@Suite("Skipped addresses in messages")
struct SkippedAddressesTests {
    static func skipped(_ address: String, _ reason: UnreachableReason) -> TargetReachability {
        TargetReachability(target: address, status: .unreachable, interfaceName: nil, address: IPAddress(address), reason: reason)
    }

    @Test("Each address once, in libcurl's order, with the kernel's reason; beyond four, how many more")
    func named() {
        #expect(HTTPError.skippedList([Self.skipped("2001:db8::1", .noRoute)]) == "2001:db8::1: no_route")
        let twice = [
            Self.skipped("192.0.2.1", .blackholeRoute), Self.skipped("2001:db8::1", .noRoute), Self.skipped("192.0.2.1", .blackholeRoute),
        ]
        #expect(HTTPError.skippedList(twice) == "192.0.2.1: blackhole_route, 2001:db8::1: no_route")
        let many = (1...7).map { Self.skipped("192.0.2.\($0)", .unreachableRoute) }
        #expect(
            HTTPError.skippedList(many)
                == "192.0.2.1: unreachable_route, 192.0.2.2: unreachable_route, 192.0.2.3: unreachable_route, 192.0.2.4: unreachable_route and 3 more"
        )
    }
}
