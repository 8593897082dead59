import FoundationEssentials
import PinpathHTTP
import PinpathReachability
import PinpathSecurity
import PinpathSupport

/// One probe of a target a scraper names: the module read again with the target (``ModuleConfiguration``), the
/// admission (``TargetAdmission``: nothing is connected to before it, and only to an address it checked), then
/// the same ``EndpointProbe`` an endpoint runs, through the agent's gated session. It touches no endpoint's state;
/// its security signals are the caller's (``AgentCore/targetProbed(_:_:module:)``).
struct TargetProbe {
    /// What a request came to, and what the caller needs for the signals.
    struct Outcome {
        let answer: TargetProbeAnswer
        /// The endpoint probed, when the probe ran.
        let endpoint: EndpointConfiguration?
    }

    let modules: [ModuleConfiguration]
    let probe: EndpointProbe
    /// The agent's own listener (`metrics.listen` on TCP).
    let listener: MetricsListenAddress?
    /// This machine's addresses (every interface's), refused by default and, with a listener on the unspecified
    /// address, the listener's.
    let localAddresses: [IPAddress]

    func run(_ request: TargetProbeRequest) async -> Outcome {
        var log = TargetProbeLog(enabled: request.debug)
        guard let module = modules.first(where: { $0.name == request.module }) else {
            // The configuration's module names are not told to any client; `pinpath check-config` lists them.
            // A quote or backslash in the name is escaped, so the quoted name cannot seem to end early.
            let name = request.module.replacing("\\", with: "\\\\").replacing("\"", with: "\\\"")
            return Outcome(
                answer: .invalid("unknown module \(ConfigurationProblem.quoted(name)) (pinpath check-config lists the modules)"),
                endpoint: nil)
        }
        if let deadline = request.deadline, deadline <= .zero {
            return Outcome(answer: .invalid("the scrape timeout leaves no time for a probe"), endpoint: nil)
        }
        var endpoint: EndpointConfiguration
        do throws(ModuleConfiguration.TargetProblem) {
            endpoint = try module.endpoint(forTarget: request.target)
        } catch {
            return Outcome(answer: .invalid(error.message), endpoint: nil)
        }
        endpoint.isTargetProbe = true
        let moduleTimeout = endpoint.timeout
        endpoint.timeout = request.deadline.map { min($0, moduleTimeout) } ?? moduleTimeout
        log.started(module, endpoint, moduleTimeout: moduleTimeout, deadline: request.deadline)

        let admission = TargetAdmission(
            module: module.name, allowList: module.targets, listener: listener.flatMap(Self.tcpListener),
            localAddresses: localAddresses)
        let clock = ContinuousClock()
        let started = clock.now
        let decision = await admission.decide(endpoint, timeout: endpoint.timeout)
        let resolving = started.duration(to: clock.now)
        log.admission(decision, took: resolving)
        switch decision {
        case .refused(let reason):
            return Outcome(answer: .refused(reason), endpoint: nil)
        case .unresolved(let reason):
            var result = ProbeResult(endpoint: endpoint.name, kind: endpoint.kind, outcome: .failure, started: Date())
            result.errorCategory = .resolveFailed
            result.message = reason
            log.finished(result, endpoint)
            return Outcome(answer: .probed(result, log: log.lines), endpoint: endpoint)
        case .admitted(let address, _):
            endpoint.address = address
        }
        // The look-up spent part of the time: the probe has what is left, at least a millisecond (it then times out).
        endpoint.timeout = max(endpoint.timeout - resolving, .milliseconds(1))
        let result = await probe.probe(endpoint)
        log.finished(result, endpoint)
        return Outcome(answer: .probed(result, log: log.lines), endpoint: endpoint)
    }

    /// The listener's address and port, when it listens on a numeric TCP address.
    private static func tcpListener(_ listen: MetricsListenAddress) -> (address: IPAddress, port: Int)? {
        guard case .tcp(let host, let port) = listen, let address = IPAddress(host) else { return nil }
        return (address, port)
    }
}
