import FoundationEssentials
import PinpathHTTP
import PinpathReachability
import PinpathSecurity

/// Probes endpoints through the gated request core: a fresh connection and a full TLS handshake every time,
/// so every probe checks the chain and the pins (blackbox_exporter's rule, with pinning added).
struct EndpointProbe: Sendable {
    let session: Session

    /// Response bodies are read up to this size; an endpoint that sends more fails with `protocol_error`.
    static let maximumBodySize = 4 << 20

    /// Probes once. Never throws: every way a probe can end is a result.
    func probe(_ endpoint: EndpointConfiguration) async -> ProbeResult {
        var result = ProbeResult(endpoint: endpoint.name, kind: endpoint.kind, outcome: .failure, started: Date())
        let request = SessionRequest(
            method: endpoint.method, url: endpoint.url, headers: endpoint.kind.isHTTP ? endpoint.requestHeaders : HeaderFields(),
            body: endpoint.body.map(RequestBody.bytes))
        do throws(HTTPError) {
            let response = try await session.send(request, options: Self.options(for: endpoint))
            result.statusCode = endpoint.kind.isHTTP ? response.statusCode : nil
            result.timings = response.timings
            result.remoteAddress = response.remoteAddress
            result.tlsVersion = response.tls?.version
            result.evaluation = response.tls?.evaluation
            if endpoint.expect.searchesPatterns {
                // Off the cooperative pool: a search may take its whole CPU budget, and hundreds of them must not
                // stop the other probes, the events or a SIGTERM.
                let judged = result
                let lane = PatternSearchLane.for(endpoint)
                result = await lane.run(for: endpoint.name) {
                    var result = judged
                    judge(response, against: endpoint, into: &result)
                    return (result, result.errorCategory == .patternLimit)
                } refused: { refusal in
                    Self.unsearched(judged, refusal, lane: lane)
                }
            } else {
                judge(response, against: endpoint, into: &result)
            }
            checkDuration(endpoint, &result)
        } catch {
            result.errorCategory = error.code
            result.message = error.message
            // A refused https proxy's evaluation is about the proxy: not the endpoint's pin failure, not a report
            // to the endpoint's collectors, not its certificate's expiry. The message names the proxy.
            result.evaluation = error.refusingProxy == nil ? error.evaluation : nil
            result.statusCode = error.response?.statusCode
            result.timings = error.response?.timings ?? error.timings
            result.remoteAddress = error.response?.remoteAddress ?? error.remoteAddress
            result.tlsVersion = error.response?.tls?.version ?? error.tlsVersion
            if error.code == .unreachable {
                result.reachability = error.reachability
                // A failure when the refusal rests on a DNS answer, which may only raise.
                result.outcome = session.monitor.map { EndpointTracker.outcomeOfRefusedProbe(endpoint, on: $0.currentPath) } ?? .unreachable
            }
        }
        return result
    }

    private func judge(_ response: SessionResponse, against endpoint: EndpointConfiguration, into result: inout ProbeResult) {
        let expect = endpoint.expect
        guard endpoint.kind.isHTTP else {
            if let banner = expect.banner, !(response.banner ?? "").contains(banner) {
                result.errorCategory = .unexpectedBanner
                result.message = "the server's \(endpoint.kind == .tcp ? "answer" : "greeting") does not contain \"\(banner)\""
                return
            }
            result.outcome = .success
            return
        }
        guard expect.accepts(status: response.statusCode) else {
            result.errorCategory = .unexpectedStatus
            result.message = "status \(response.statusCode), expected \(expect.statusDescription)"
            return
        }
        do throws(PatternMatchError) {
            if expect.checksBody, try !expect.accepts(body: String(decoding: response.body, as: UTF8.self)) {
                result.errorCategory = .unexpectedBody
                result.message =
                    expect.bodyContains.map { "the body does not contain \"\($0)\"" }
                    ?? "the body does not match \(expect.bodyMatches?.description ?? "the pattern")"
                return
            }
        } catch {
            failOnPatternLimit(&result, error, key: "body_matches")
            return
        }
        for header in expect.headers {
            let value = response.headers[header.name]
            do throws(PatternMatchError) {
                if try header.accepts(value) { continue }
            } catch {
                failOnPatternLimit(&result, error, key: "expect.headers.\(header.name)")
                return
            }
            result.errorCategory = .unexpectedHeader
            result.message =
                value == nil ? "the response has no \(header.name) header" : "the \(header.name) header does not \(header.requirement)"
            return
        }
        result.outcome = .success
    }

    /// What a probe whose patterns its lane did not search reports: a failure, never a pass (`pattern_limit`, or
    /// `cancelled` when the agent stopped or reloaded meanwhile).
    private static func unsearched(_ result: ProbeResult, _ refusal: PatternSearchLane.Refusal, lane: PatternSearchLane) -> ProbeResult {
        var result = result
        result.outcome = .failure
        switch refusal {
        case .full(let waiting, let standing):
            let whose =
                switch standing {
                case .cheap: ""
                case .unproven: " not searched before"
                case .costly: " whose last search reached a limit"
                }
            result.errorCategory = .patternLimit
            result.message = "the patterns were not searched: \(waiting) searches of \(lane.files) endpoints\(whose) were already waiting"
        case .cancelled:
            result.errorCategory = .cancelled
            result.message = "the probe was cancelled before its patterns were searched"
        }
        return result
    }

    /// A pattern that could not decide within its limits fails the probe with its own category: neither
    /// the response nor the server is judged, but nothing passes that was not checked.
    private func failOnPatternLimit(_ result: inout ProbeResult, _ error: PatternMatchError, key: String) {
        result.errorCategory = .patternLimit
        result.message = error.message(forKey: key)
    }

    /// A result that took longer than `expect.max_duration` fails as `too_slow`, whatever else it found.
    private func checkDuration(_ endpoint: EndpointConfiguration, _ result: inout ProbeResult) {
        guard result.outcome == .success, let limit = endpoint.expect.maxDuration, let total = result.timings?.total,
            total > Double(limit.wholeMilliseconds) / 1000
        else { return }
        result.outcome = .failure
        result.errorCategory = .tooSlow
        result.message = "the probe took \(Int((total * 1000).rounded())) ms, more than max_duration \(DurationSyntax.format(limit))"
    }

    static func options(for endpoint: EndpointConfiguration) -> RequestOptions {
        var options = RequestOptions()
        options.timeout = endpoint.timeout
        options.connectTimeout = min(endpoint.timeout, .seconds(10))
        options.followRedirects = endpoint.followRedirects
        options.freshConnection = true
        options.reachability = .failFast
        options.nameVerdictMayRefuse = !EndpointTracker.hostVerdictMayOnlyRaise(endpoint)
        options.maximumBodySize = maximumBodySize
        options.ipFamily = endpoint.ipFamily
        options.securityPolicy = endpoint.security?.policy
        options.trustStore = endpoint.security?.trustStore
        // Redirect hops to other hosts are held to the configured policies for them, with their stores.
        options.policies = HostPolicySet(endpoint.redirectPolicies.map(\.hostPolicy))
        options.proxies = endpoint.proxy.settings
        options.serverName = endpoint.serverName
        options.redirectsStayOnHostAndPort = endpoint.isTargetProbe
        // The URL's host is the one connected to (a server name stands for it): its address is pinned.
        if let address = endpoint.address, let host = endpoint.url.host(percentEncoded: false),
            let port = endpoint.url.port ?? endpoint.kind.defaultPort
        {
            options.resolvedAddresses = [ResolvedAddress(host: host, port: port, address: address)]
        }
        if let files = endpoint.clientCertificate {
            options.clientCertificate = ClientCertificate(
                certificatePath: files.certificate, keyPath: files.key, password: files.password?.unredacted)
        }
        if endpoint.kind == .tcp && (endpoint.send != nil || endpoint.expect.banner != nil) {
            options.tcpExchange = TCPExchange(send: endpoint.send.map { Array($0.utf8) }, readUntil: endpoint.expect.banner)
        }
        return options
    }
}
