import FoundationEssentials
import PinpathHTTP
import PinpathSupport

/// The status document, version 1 (docs/status-api.md, docs/status-api.schema.json): a snapshot rendered as
/// JSON. Fields are added within a version, never renamed or removed.
///
/// Every text from outside (endpoint names, URLs, certificate names, messages) is a JSON string, escaped by
/// ``JSONValue`` (controls, U+2028, U+2029); `<`, `>` and `&` are written `\u003c`, `\u003e` and `\u0026` too,
/// so that the document stays inert even embedded in a page's markup.
enum StatusDocument {
    /// The document's version.
    static let version = 1

    /// The response's headers: JSON, never cached, never sniffed as something else.
    static let headers: [(String, String)] = [
        ("Content-Type", "application/json"), ("Cache-Control", "no-store"), ("X-Content-Type-Options", "nosniff"),
    ]

    /// The document for `snapshot` at `now`.
    static func render(_ snapshot: StatusSnapshot, now: Date = Date()) -> [UInt8] {
        var output: [UInt8] = []
        // About 3.4 KB an endpoint once its durations are full: one allocation, no regrowth copies of megabytes.
        output.reserveCapacity(4096 + snapshot.endpoints.count * 3584)
        var scratch: [UInt8] = []
        scratch.reserveCapacity(4096)
        func append(_ value: JSONValue) {
            scratch.removeAll(keepingCapacity: true)
            value.encode(into: &scratch)
            appendInert(scratch[...], to: &output)
        }
        func literal(_ text: StaticString) {
            output.append(contentsOf: UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
        }
        literal(#"{"version":"#)
        append(.int(version))
        literal(#","generated_at":"#)
        append(.string(EndpointStatus.format(now)))
        literal(#","agent":"#)
        append(agent(snapshot, now: now))
        literal(#","path":"#)
        append(.object((snapshot.path.isEmpty ? noPath : snapshot.path) + [("reason", .string(snapshot.pathReason))]))
        literal(#","connectivity":"#)
        append(
            snapshot.connectivity.map {
                .object([("state", .string($0.state)), ("since", .string($0.since)), ("reason", .string($0.reason))])
            }
                ?? .null)
        literal(#","endpoints":["#)
        // One endpoint at a time: the scratch buffer holds one, not 1,000.
        for (index, endpoint) in snapshot.endpoints.enumerated() {
            if index > 0 { output.append(UInt8(ascii: ",")) }
            // The members before the durations, the durations written directly, then the members after them.
            let (head, tail) = members(of: endpoint, now: now)
            scratch.removeAll(keepingCapacity: true)
            JSONValue.object(head).encode(into: &scratch)
            scratch.removeLast()  // its `}`
            appendInert(scratch[...], to: &output)
            literal(#","durations":["#)
            appendDurations(endpoint, to: &output)
            literal("],")
            scratch.removeAll(keepingCapacity: true)
            JSONValue.object(tail).encode(into: &scratch)
            appendInert(scratch.dropFirst(), to: &output)  // without its `{`
        }
        literal(#"],"events":"#)
        append(
            .array(
                snapshot.events.map { event in
                    .object([
                        ("time", .string(event.time)), ("event", .string(event.event)), ("level", .string(event.level.name)),
                        ("endpoint", .string(event.endpoint)), ("summary", .string(event.summary)),
                    ])
                }))
        literal("}\n")
        return output
    }

    /// The path before the monitor's first snapshot (the listener starts first): every key, nothing known.
    private static let noPath: [(String, JSONValue)] = [
        ("status", "unknown"), ("interface", nil), ("kind", nil), ("gateways", []), ("ipv4", false), ("ipv6", false),
    ]

    private static func agent(_ snapshot: StatusSnapshot, now: Date) -> JSONValue {
        .object([
            ("version", .string(PinpathVersion.current)),
            ("started_at", .string(EndpointStatus.format(snapshot.startedAt))),
            ("uptime_s", .int(max(0, Int(now.timeIntervalSince(snapshot.startedAt).rounded(.down))))),
            ("config", .string(snapshot.configurationPath)),
            (
                "last_reload",
                snapshot.lastReload.map { reload in
                    .object([
                        ("time", .string(reload.time)), ("outcome", .string(reload.errors == nil ? "reloaded" : "rejected")),
                        ("errors", .array((reload.errors ?? []).map(JSONValue.string))),
                    ])
                } ?? .null
            ),
            ("refresh_ms", .int(snapshot.refreshMilliseconds)),
        ])
    }

    /// An endpoint's members before `durations` and after it.
    private static func members(
        of endpoint: EndpointStatus, now: Date
    ) -> (head: [(String, JSONValue)], tail: [(String, JSONValue)]) {
        let configured = endpoint.configured
        var policy = JSONValue.null
        if let configuredPolicy = configured.policy {
            let matched: JSONValue = endpoint.pinsMatched.map(JSONValue.bool) ?? .null
            policy = .object([
                ("names", .array(configuredPolicy.names.map(JSONValue.string))), ("mode", .string(configuredPolicy.mode.rawValue)),
                ("profile", .string(endpoint.profile)), ("pins", .array(configuredPolicy.pins.map(JSONValue.string))),
                ("enforced", .bool(configuredPolicy.enforced)), ("pins_matched", matched),
            ])
        }
        var pinFailure = JSONValue.null
        if let failure = endpoint.lastPinFailure {
            pinFailure = .object([
                ("time", .string(failure.time)), ("enforced", .bool(failure.enforced)), ("message", .string(failure.message)),
                ("served_pins", .array(failure.servedPins.map(JSONValue.string))),
            ])
        }
        let lastProbe: JSONValue = endpoint.lastProbe.map { Self.lastProbe($0, kind: configured.kind) } ?? .null
        let certificate: JSONValue = endpoint.certificate.map { Self.certificate($0, now: now) } ?? .null
        let head: [(String, JSONValue)] = [
            ("name", .string(configured.name)),
            ("url", .string(configured.url)),
            ("kind", .string(configured.kind.rawValue)),
            ("interval_ms", .int(configured.intervalMilliseconds)),
            ("state", .string(endpoint.state.rawValue)),
            ("since", .string(endpoint.since)),
            ("cause", .string(endpoint.cause)),
            ("last_probe", lastProbe),
        ]
        return (head, [("certificate", certificate), ("policy", policy), ("last_pin_failure", pinFailure)])
    }

    /// The durations, oldest first, written without building JSON values: they are most of the document (30 per
    /// endpoint) and hold only pinpath's own times and numbers, nothing to escape.
    private static func appendDurations(_ endpoint: EndpointStatus, to output: inout [UInt8]) {
        var first = true
        endpoint.forEachDuration { duration in
            output.append(contentsOf: (first ? #"{"time":""# : #",{"time":""#).utf8)
            first = false
            output.append(contentsOf: duration.time.utf8)
            output.append(contentsOf: #"","total_ms":"#.utf8)
            if let microseconds = duration.totalMicroseconds {
                appendMilliseconds(microseconds, to: &output)
            } else {
                output.append(contentsOf: "null".utf8)
            }
            output.append(contentsOf: (duration.success ? #","success":true}"# : #","success":false}"#).utf8)
        }
    }

    /// `12345` µs as `12.345`.
    private static func appendMilliseconds(_ microseconds: Int, to output: inout [UInt8]) {
        let value = max(0, microseconds)
        output.append(contentsOf: String(value / 1000).utf8)
        let fraction = value % 1000
        output.append(UInt8(ascii: "."))
        output.append(UInt8(ascii: "0") + UInt8(fraction / 100))
        output.append(UInt8(ascii: "0") + UInt8(fraction / 10 % 10))
        output.append(UInt8(ascii: "0") + UInt8(fraction % 10))
    }

    private static func lastProbe(_ probe: EndpointStatus.LastProbe, kind: ServiceKind) -> JSONValue {
        .object([
            ("time", .string(probe.time)),
            ("outcome", .string(probe.outcome.rawValue)),
            ("error_category", .string(probe.errorCategory)),
            ("message", .string(probe.message)),
            ("status_code", probe.statusCode.map(JSONValue.int) ?? .null),
            ("total_ms", probe.timings?.totalMillisecondsJSON ?? .null),
            ("phases_ms", probe.timings?.phasesMillisecondsJSON(of: kind) ?? .null),
            ("remote_address", .string(probe.remoteAddress)),
            ("tls_version", .string(probe.tlsVersion)),
        ])
    }

    private static func certificate(_ certificate: EndpointStatus.CertificateSummary, now: Date) -> JSONValue {
        .object([
            ("subject", .string(certificate.subject)),
            ("issuer", .string(certificate.issuer)),
            ("sans", .array(certificate.sans.map(JSONValue.string))),
            ("sans_omitted", .int(certificate.sansOmitted)),
            ("not_after", .string(certificate.notAfterText)),
            ("days_left", .int(Int((certificate.notAfter.timeIntervalSince(now) / 86_400).rounded(.down)))),
            (
                "chain",
                .array(
                    certificate.chain.enumerated().map { depth, entry in
                        .object([
                            ("depth", .int(depth)), ("subject", .string(entry.subject)), ("issuer", .string(entry.issuer)),
                            ("not_after", .string(entry.notAfter)), ("spki_pin", .string(entry.pin)),
                        ])
                    })
            ),
            ("chain_omitted", .int(certificate.chainOmitted)),
        ])
    }

    /// Appends encoded JSON with `<`, `>` and `&` as `\u003c`, `\u003e`, `\u0026`: those bytes occur only inside
    /// strings (the structure has none), where the escape means the same character.
    private static func appendInert(_ bytes: ArraySlice<UInt8>, to output: inout [UInt8]) {
        var start = bytes.startIndex
        for index in bytes.indices {
            let byte = bytes[index]
            guard byte == UInt8(ascii: "<") || byte == UInt8(ascii: ">") || byte == UInt8(ascii: "&") else { continue }
            output.append(contentsOf: bytes[start..<index])
            switch byte {
            case UInt8(ascii: "<"): output.append(contentsOf: #"\u003c"#.utf8)
            case UInt8(ascii: ">"): output.append(contentsOf: #"\u003e"#.utf8)
            default: output.append(contentsOf: #"\u0026"#.utf8)
            }
            start = index + 1
        }
        output.append(contentsOf: bytes[start...])
    }
}
