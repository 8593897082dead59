import PinpathReachability

/// The reachability gate: asks the monitor before a request and waits for connectivity when told to.
/// Cheap when the network is up: the monitor's current snapshot answers, with no system call, except for
/// numeric addresses, whose route the monitor answers (``ReachabilityMonitor/routeVerdict(for:)``: kept
/// until it reads the kernel's next change).
struct ReachabilityGate: Sendable {
    let monitor: ReachabilityMonitor

    /// Returns when `host` may be tried, or throws ``HTTPError/Code/unreachable`` with the monitor's verdict.
    /// `host` is the proxy's when the request goes through `proxy`: that is the only address it connects to.
    /// `request` names the request in errors; it is built only for one (it costs more than the check).
    func admit(host: String, proxy: Proxy? = nil, options: RequestOptions, request: @autoclosure () -> String) async throws(HTTPError) {
        var label: String { proxy.map { "\(request()) through the proxy \($0)" } ?? request() }
        switch options.reachability {
        case .ignore:
            return
        case .failFast:
            if let verdict = await blockingVerdict(host: host, options: options) {
                throw Self.error(verdict, request: label)
            }
        case .waitForConnectivity(let timeout):
            guard var verdict = await blockingVerdict(host: host, options: options) else { return }
            let deadline = ContinuousClock.now + timeout
            // Each change of the path or of a target is a reason to look again; nothing is polled.
            let changes = monitor.changes()
            var iterator = changes.makeAsyncIterator()
            while ContinuousClock.now < deadline {
                let changed = await Self.next(&iterator, until: deadline)
                if Task.isCancelled { throw HTTPError(.cancelled, "\(label): cancelled while waiting for connectivity") }
                guard changed else { break }
                guard let still = await blockingVerdict(host: host, options: options) else { return }
                verdict = still
            }
            throw Self.error(verdict, request: label, waited: timeout)
        }
    }

    /// Checks each resolved address from libcurl's thread before it connects; `nil` (connect) once the
    /// monitor has stopped.
    var addressCheck: Transfer.AddressCheck {
        let monitor = monitor
        return { address in try? monitor.routeVerdict(for: address) }
    }

    /// Why `host` cannot be reached now, or `nil` when it may be tried.
    private func blockingVerdict(host: String, options: RequestOptions) async -> TargetReachability? {
        let path = monitor.currentPath
        switch WatchedHostVerdict(host, on: path) {
        case .reachable: return nil
        case .unreachable(let watched):
            // A name's verdict rests on a DNS answer: without ``RequestOptions/nameVerdictMayRefuse`` the path
            // decides, as for a name not watched, and the socket check judges the addresses libcurl resolves.
            if options.nameVerdictMayRefuse || IPAddress(host) != nil { return watched }
        case .leftToResolver, .notWatched: break
        }
        if let address = IPAddress(host) {
            guard let verdict = try? monitor.routeVerdict(for: address) else { return nil }
            return verdict.status == .reachable ? nil : verdict
        }
        // Loopback names never leave the machine; libcurl's socket check still asks about each address.
        if host == "localhost" || host.hasSuffix(".localhost") { return nil }
        let needed = options.ipFamily
        let available = needed.map { path.path(for: $0) != nil } ?? (path.status == .reachable)
        if available { return nil }
        // Without a default path but on a network (routes to some networks only: an internal one, a split VPN),
        // a name whose verdict may not refuse is left to the socket check of the addresses libcurl resolves.
        if !options.nameVerdictMayRefuse, (needed.map { [$0] } ?? [.ipv4, .ipv6]).contains(where: path.hasNetworkAddress) {
            return nil
        }
        // Not reachable: ask the kernel why, for the error (no DNS query, no packet).
        var verdict =
            (try? await monitor.internetReachability(over: needed))
            ?? TargetReachability(target: host, status: .unreachable, interfaceName: nil, address: nil, reason: .noRoute)
        guard verdict.status == .unreachable else { return nil }
        verdict.target = host
        verdict.address = nil  // the well-known address asked about is not the host's
        return verdict
    }

    /// The next change, or `false` when the deadline passes first.
    private static func next(_ iterator: inout AsyncStream<ReachabilityEvent>.Iterator, until deadline: ContinuousClock.Instant) async
        -> Bool
    {
        let box = IteratorBox(iterator)
        let changed = await withTaskGroup(of: Bool.self) { group in
            group.addTask { await box.next() }
            group.addTask {
                try? await Task.sleep(until: deadline)
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
        iterator = box.iterator
        return changed
    }

    private static func error(_ verdict: TargetReachability, request: String, waited: Duration? = nil) -> HTTPError {
        let reason = verdict.reason?.rawValue ?? "unreachable"
        let via = verdict.address.map { "\($0)" }.flatMap { $0 == verdict.target ? nil : " (\($0))" } ?? ""
        let wait = waited.map { " after waiting \($0)" } ?? ""
        return HTTPError(.unreachable, "\(request): \(verdict.target)\(via) is not reachable\(wait): \(reason)", reachability: verdict)
    }
}

/// Lets a child task advance the gate's stream iterator. `@unchecked Sendable`: one task uses it at a time
/// (the group is awaited before the iterator is read back).
private final class IteratorBox: @unchecked Sendable {
    var iterator: AsyncStream<ReachabilityEvent>.Iterator
    init(_ iterator: AsyncStream<ReachabilityEvent>.Iterator) { self.iterator = iterator }
    func next() async -> Bool { await iterator.next() != nil }
}
