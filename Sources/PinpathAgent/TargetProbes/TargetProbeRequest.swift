import PinpathSupport

/// One probe of a target that the scraper names (`/probe?target=…&module=…`), not one of the configuration's
/// endpoints: it changes no endpoint's state.
package struct TargetProbeRequest: Sendable {
    /// The module's name, as the query gave it.
    package var module: String
    /// The target, as the query gave it: a URL for http(s) modules, `host:port` for the others.
    package var target: String
    /// The scraper's own deadline (`X-Prometheus-Scrape-Timeout-Seconds` minus 0.5 s), when it sent one; the
    /// probe's timeout is the smaller of this and the module's.
    package var deadline: Duration?
    /// Whether the answer should carry the probe's log (`&debug=true`).
    package var debug: Bool

    package init(module: String, target: String, deadline: Duration?, debug: Bool) {
        self.module = module
        self.target = target
        self.deadline = deadline
        self.debug = debug
    }
}

/// What a target probe request came to.
package enum TargetProbeAnswer: Sendable {
    /// The probe ran (successful or not): its result, and its log when `debug` asked for one.
    case probed(ProbeResult, log: [String]?)
    /// The module's `targets:` (or, without one, the default refusals) do not allow this target: 403 and a
    /// one-line reason; nothing was connected to.
    case refused(String)
    /// The module is unknown or the target does not parse for it: 400 and a one-line reason.
    case invalid(String)
    /// The agent cannot probe yet (it is starting): 503 with `Retry-After`, a condition of the server rather than
    /// of the request.
    case unavailable(String)
}
