import FoundationEssentials
import PinpathHTTP
import PinpathSecurity
import Synchronization

/// One pin failure report on its way to one collector: the body to POST, and what its events name.
struct PinReportJob: Sendable {
    /// Whose probe failed: one of the configuration's endpoints, or a target a scraper named (`/probe`). Each has
    /// its own share of a collector's queue.
    enum Origin: Sendable {
        case endpoint
        case targetProbe
    }

    /// The endpoint whose probe failed.
    let endpoint: String
    /// The host and port the report is about.
    let hostname: String
    let port: Int
    /// RFC 7469's report as JSON.
    let body: [UInt8]
    let collector: ReportCollector
    var origin = Origin.endpoint

    /// `report` for each of `collectors`, its body encoded once: RFC 7469's JSON object, the fields `pin.failure`
    /// carries after `suppressed`.
    static func jobs(
        _ report: PinFailureReport, endpoint: String, collectors: [ReportCollector], origin: Origin = .endpoint
    ) -> [PinReportJob] {
        guard !collectors.isEmpty else { return [] }
        let body = Array(AgentEvents.reportBody(report).encoded().utf8)
        return collectors.map {
            PinReportJob(endpoint: endpoint, hostname: report.hostname, port: report.port, body: body, collector: $0, origin: origin)
        }
    }
}

/// POSTs pin failure reports (RFC 7469 §3's JSON) to their collectors through the agent's gated ``Session``,
/// away from the probes: ``submit(_:)`` only queues, and each collector has a task of its own that sends its
/// queue in order, so a slow or dead collector delays neither the probes nor another collector.
///
/// - Each collector's queue holds at most `capacity` reports (sent or waiting) of the configuration's endpoints,
///   and apart from them at most `capacity` of target probes (`/probe`): whoever can scrape `/probe` can provoke
///   pin failures at will, and must not take the room of an endpoint's report. Endpoint reports are sent first.
///   A report arriving at its full share is dropped, the newest rather than the oldest, so that failures provoked
///   later cannot push out the reports of the first ones; the drops are counted and carried by that collector's
///   next `report.*` event.
/// - A report is tried up to ``ReportRetry/attempts`` times, with backoff and jitter between tries, while the
///   failure is transient; then `report.delivery_failed` is written once. `report.delivered` says it arrived.
/// - A failed delivery never causes another report: a collector whose certificate its own policy refuses
///   is a delivery failure, not a `pin.failure`.
final class PinReportDelivery: Sendable {
    /// What happened to one report.
    enum Outcome: Sendable {
        case delivered(attempts: Int, statusCode: Int)
        case failed(attempts: Int, reason: String, statusCode: Int?, message: String)
    }

    private struct Queue {
        /// Endpoint reports, then target probe reports: each list is sent in order, the first before the second.
        var endpointReports: [PinReportJob] = []
        var targetProbeReports: [PinReportJob] = []
        /// Whose report is being sent, if one is.
        var inFlight: PinReportJob.Origin?
        var dropped = 0
        var worker: Task<Void, Never>?

        /// Reports of `origin` held (the one being sent included).
        func held(_ origin: PinReportJob.Origin) -> Int {
            (origin == .endpoint ? endpointReports.count : targetProbeReports.count) + (inFlight == origin ? 1 : 0)
        }

        mutating func append(_ job: PinReportJob) {
            switch job.origin {
            case .endpoint: endpointReports.append(job)
            case .targetProbe: targetProbeReports.append(job)
            }
        }

        /// The next report to send, endpoint reports first.
        mutating func takeNext() -> PinReportJob? {
            if !endpointReports.isEmpty { return endpointReports.removeFirst() }
            if !targetProbeReports.isEmpty { return targetProbeReports.removeFirst() }
            return nil
        }
    }

    private struct State {
        var queues: [String: Queue] = [:]
        var stopping = false
    }

    /// Reports held per collector (the one being sent included), for endpoints and, apart, for target probes.
    /// Default 100 each.
    let capacity: Int
    let retry: ReportRetry
    private let session: Session
    private let emit: @Sendable (AgentEvent) -> Void
    private let state = Mutex(State())

    /// - Parameters:
    ///   - session: the agent's session: the collector's host gets its policies and the reachability gate, as any
    ///     request.
    ///   - emit: writes an event; called from the delivery tasks.
    init(
        session: Session, capacity: Int = 100, retry: ReportRetry = ReportRetry(), emit: @escaping @Sendable (AgentEvent) -> Void
    ) {
        precondition(capacity > 0, "capacity must be positive")
        self.session = session
        self.capacity = capacity
        self.retry = retry
        self.emit = emit
    }

    /// Queues each job for its collector and returns at once; after ``shutdown(grace:)`` began, drops them.
    func submit(_ jobs: [PinReportJob]) {
        for job in jobs {
            let key = job.collector.url.absoluteString
            state.withLock { state in
                guard !state.stopping else { return }
                var queue = state.queues[key] ?? Queue()
                if queue.held(job.origin) >= capacity {
                    queue.dropped += 1
                } else {
                    queue.append(job)
                }
                if queue.worker == nil { queue.worker = Task { await self.work(key) } }
                state.queues[key] = queue
            }
        }
    }

    /// Gives the reports queued or being sent up to `grace` to arrive, then stops their tasks: each report
    /// left gets `report.delivery_failed` with reason `shutdown`. Returns within `grace` and one more second
    /// (for cancelled transfers to end); new reports are refused from the start.
    func shutdown(grace: Duration) async {
        let deadline = ContinuousClock.now + grace
        state.withLock { $0.stopping = true }
        while isBusy, ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(10))
        }
        for worker in state.withLock({ $0.queues.values.compactMap(\.worker) }) { worker.cancel() }
        let cancelled = ContinuousClock.now
        while isBusy, ContinuousClock.now < cancelled + .seconds(1) {
            try? await Task.sleep(for: .milliseconds(10))
        }
    }

    /// Whether any collector's task is still running.
    private var isBusy: Bool { state.withLock { !$0.queues.isEmpty } }

    // MARK: One collector's task

    private func work(_ key: String) async {
        while let job = next(key) {
            if Task.isCancelled {
                finish(key, job, .failed(attempts: 0, reason: "shutdown", statusCode: nil, message: Self.shutdownMessage))
                continue
            }
            finish(key, job, await deliver(job))
        }
    }

    /// The next report of `key`'s queue, or `nil` (and the queue is gone) when it is empty.
    private func next(_ key: String) -> PinReportJob? {
        state.withLock { state in
            guard var queue = state.queues[key], let job = queue.takeNext() else {
                state.queues[key] = nil
                return nil
            }
            queue.inFlight = job.origin
            state.queues[key] = queue
            return job
        }
    }

    /// Writes the report's event, with the drops counted since the last one.
    private func finish(_ key: String, _ job: PinReportJob, _ outcome: Outcome) {
        let dropped = state.withLock { state in
            let dropped = state.queues[key]?.dropped ?? 0
            state.queues[key]?.dropped = 0
            state.queues[key]?.inFlight = nil
            return dropped
        }
        switch outcome {
        case .delivered(let attempts, let statusCode):
            emit(AgentEvents.reportDelivered(job, attempts: attempts, statusCode: statusCode, dropped: dropped))
        case .failed(let attempts, let reason, let statusCode, let message):
            emit(
                AgentEvents.reportDeliveryFailed(
                    job, attempts: attempts, reason: reason, statusCode: statusCode, message: message, dropped: dropped))
        }
    }

    /// Tries one report until it arrives, fails for good, or runs out of tries; a cancelled task (the agent
    /// stopping) ends it at once with reason `shutdown`.
    func deliver(_ job: PinReportJob) async -> Outcome {
        let request = Self.request(job)
        let options = Self.options(for: job.collector)
        var attempts = 0
        while true {
            attempts += 1
            let reason: String
            let statusCode: Int?
            let message: String
            let transient: Bool
            do throws(HTTPError) {
                let response = try await session.send(request, options: options)
                if (200...299).contains(response.statusCode) { return .delivered(attempts: attempts, statusCode: response.statusCode) }
                reason = "unexpected_status"
                statusCode = response.statusCode
                message = "\(request.method) \(request.displayURL): status \(response.statusCode), expected 2xx"
                transient = ReportRetry.isTransient(status: response.statusCode)
            } catch {
                reason = error.code.description
                statusCode = error.response?.statusCode
                message = error.message
                transient = ReportRetry.isTransient(error.code)
            }
            if Task.isCancelled {
                return .failed(
                    attempts: attempts, reason: "shutdown", statusCode: statusCode,
                    message: "\(Self.shutdownMessage) (last try: \(message))")
            }
            guard transient, attempts < retry.attempts else {
                return .failed(attempts: attempts, reason: reason, statusCode: statusCode, message: message)
            }
            do {
                try await Task.sleep(for: retry.delay(afterFailedTries: attempts, random: .random(in: 0...1)))
            } catch {
                return .failed(
                    attempts: attempts, reason: "shutdown", statusCode: statusCode,
                    message: "\(Self.shutdownMessage) (last try: \(message))")
            }
        }
    }

    private static let shutdownMessage = "the agent stopped before the report was delivered"

    /// The POST of the report's JSON.
    static func request(_ job: PinReportJob) -> SessionRequest {
        SessionRequest(method: .post, url: job.collector.url, headers: ["Content-Type": "application/json"], body: .bytes(job.body))
    }

    /// Like a probe's: a fresh connection (every try is a full handshake held to the collector's policies),
    /// the reachability gate (for the proxy's host when the report goes through one), no redirects (a collector that moved is a failure, and a redirect could carry the
    /// URL's credentials elsewhere), a small response limit.
    static func options(for collector: ReportCollector) -> RequestOptions {
        var options = RequestOptions()
        options.timeout = .seconds(10)
        options.connectTimeout = .seconds(5)
        options.followRedirects = false
        options.freshConnection = true
        options.reachability = .failFast
        options.maximumBodySize = 64 << 10
        options.securityPolicy = collector.security?.policy
        options.trustStore = collector.security?.trustStore
        options.proxies = collector.proxies
        return options
    }
}
