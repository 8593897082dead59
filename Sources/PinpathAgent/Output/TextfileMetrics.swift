import Glibc

/// Metrics for node_exporter's textfile collector: Prometheus text format, written to a temporary file in
/// the same directory and renamed into place, so the collector never reads half a file. No timestamps: the
/// collector rejects them.
///
/// The names follow blackbox_exporter's where they mean the same, prefixed `pinpath_`:
/// `pinpath_probe_success`, `pinpath_probe_duration_seconds{phase=…}`, `pinpath_endpoint_state{state=…}`,
/// `pinpath_ssl_earliest_cert_expiry`, `pinpath_ssl_last_chain_expiry_timestamp_seconds`,
/// `pinpath_ssl_ocsp_response_status`, `pinpath_pin_failures_total`, `pinpath_events_dropped_total`.
///
/// ``render(endpoints:eventsDroppedTotal:)`` is pure; ``write(_:)`` does blocking file I/O: call it from
/// the agent's loop after a round of probes, not on a probe's path.
public struct TextfileMetrics: Sendable {
    /// What one endpoint contributes.
    public struct Endpoint: Sendable {
        /// The endpoint's name (the `endpoint` label).
        public var name: String
        /// The last probe's outcome; nil before the first (no sample is written).
        public var probeSucceeded: Bool?
        /// The last probe's phases (`resolve`, `connect`, `tls`, `processing`, `transfer`) in seconds.
        public var phaseDurations: [(phase: String, seconds: Double)]
        /// The state.
        public var state: EndpointState.Status
        /// The earliest `notAfter` of every certificate served, in seconds since the epoch.
        public var earliestCertificateExpiry: Double?
        /// The earliest `notAfter` of the verified chain, in seconds since the epoch.
        public var lastChainExpiry: Double?
        /// Pin failures since start.
        public var pinFailures: Int
        /// The status in the OCSP response the server stapled in the last probe (0 good, 1 revoked, 2 unknown,
        /// as blackbox_exporter's `probe_ssl_ocsp_response_status`); nil without a staple (no sample).
        public var ocspResponseStatus: Int?

        /// - Parameters: as the properties.
        public init(
            name: String, probeSucceeded: Bool?, phaseDurations: [(phase: String, seconds: Double)] = [],
            state: EndpointState.Status, earliestCertificateExpiry: Double? = nil, lastChainExpiry: Double? = nil,
            pinFailures: Int = 0, ocspResponseStatus: Int? = nil
        ) {
            self.name = name
            self.probeSucceeded = probeSucceeded
            self.phaseDurations = phaseDurations
            self.state = state
            self.earliestCertificateExpiry = earliestCertificateExpiry
            self.lastChainExpiry = lastChainExpiry
            self.pinFailures = pinFailures
            self.ocspResponseStatus = ocspResponseStatus
        }
    }

    /// The `.prom` file written.
    public let path: String

    /// - Parameter path: the file in node_exporter's textfile directory; it should end in `.prom`.
    public init(path: String) {
        self.path = path
    }

    /// The metrics as Prometheus text: HELP and TYPE once per family, samples in the endpoints' order.
    public static func render(endpoints: [Endpoint], eventsDroppedTotal: Int) -> String {
        var text = ""
        text.reserveCapacity(256 + endpoints.count * 512)
        func family(_ name: String, _ type: String, _ help: String, _ samples: (inout String) -> Void) {
            text += "# HELP pinpath_\(name) \(help)\n# TYPE pinpath_\(name) \(type)\n"
            samples(&text)
        }
        func sample(_ text: inout String, _ name: String, _ labels: [(String, String)], _ value: Double) {
            text += "pinpath_\(name)"
            if !labels.isEmpty {
                text += "{" + labels.map { "\($0)=\"\(escape($1))\"" }.joined(separator: ",") + "}"
            }
            text += " \(format(value))\n"
        }
        family("probe_success", "gauge", "Whether the endpoint's last probe succeeded.") { text in
            for endpoint in endpoints {
                guard let succeeded = endpoint.probeSucceeded else { continue }
                sample(&text, "probe_success", [("endpoint", endpoint.name)], succeeded ? 1 : 0)
            }
        }
        family("probe_duration_seconds", "gauge", "Duration of each phase of the endpoint's last probe.") { text in
            for endpoint in endpoints {
                for (phase, seconds) in endpoint.phaseDurations {
                    sample(&text, "probe_duration_seconds", [("endpoint", endpoint.name), ("phase", phase)], seconds)
                }
            }
        }
        family("endpoint_state", "gauge", "The endpoint's state: 1 for the current one.") { text in
            for endpoint in endpoints {
                for state in EndpointState.Status.allCases {
                    sample(
                        &text, "endpoint_state", [("endpoint", endpoint.name), ("state", state.rawValue)],
                        endpoint.state == state ? 1 : 0)
                }
            }
        }
        family("ssl_earliest_cert_expiry", "gauge", "Earliest expiry of the certificates served, in Unix time.") { text in
            for endpoint in endpoints {
                guard let expiry = endpoint.earliestCertificateExpiry else { continue }
                sample(&text, "ssl_earliest_cert_expiry", [("endpoint", endpoint.name)], expiry)
            }
        }
        family(
            "ssl_last_chain_expiry_timestamp_seconds", "gauge", "Earliest expiry in the verified chain, in Unix time."
        ) { text in
            for endpoint in endpoints {
                guard let expiry = endpoint.lastChainExpiry else { continue }
                sample(&text, "ssl_last_chain_expiry_timestamp_seconds", [("endpoint", endpoint.name)], expiry)
            }
        }
        // Only when some server stapled: most endpoints never do, and a family without samples says nothing.
        if endpoints.contains(where: { $0.ocspResponseStatus != nil }) {
            family("ssl_ocsp_response_status", "gauge", "The stapled OCSP response's status: 0 good, 1 revoked, 2 unknown.") { text in
                for endpoint in endpoints {
                    guard let status = endpoint.ocspResponseStatus else { continue }
                    sample(&text, "ssl_ocsp_response_status", [("endpoint", endpoint.name)], Double(status))
                }
            }
        }
        family("pin_failures_total", "counter", "Pin validation failures since the agent started.") { text in
            for endpoint in endpoints {
                sample(&text, "pin_failures_total", [("endpoint", endpoint.name)], Double(endpoint.pinFailures))
            }
        }
        family("events_dropped_total", "counter", "Event lines the agent dropped (queue full or output failing).") {
            sample(&$0, "events_dropped_total", [], Double(eventsDroppedTotal))
        }
        return text
    }

    /// Writes `text` to `path` through a temporary file and a rename, so readers see the old file or the new
    /// one, never a mix. The temporary file gets a random name starting with a dot (the collector reads only
    /// `*.prom`) and is created exclusively, never through a link (`O_CREAT|O_EXCL|O_NOFOLLOW`): a link planted
    /// at a predictable name would make the agent overwrite its target. The rename replaces a link planted at
    /// `path` itself rather than writing through it.
    /// - Throws: `SystemCallError`; the temporary file is removed and the old metrics stay.
    public func write(_ text: String) throws(SystemCallError) {
        let (descriptor, temporary) = try createTemporaryFile()
        do {
            try LineOutput(descriptor: descriptor).write(text)
        } catch {
            close(descriptor)
            unlink(temporary)
            throw SystemCallError("write", temporary, errno: error.errno)
        }
        close(descriptor)
        guard rename(temporary, path) == 0 else {
            let failure = errno
            unlink(temporary)
            throw SystemCallError("rename into place", path, errno: failure)
        }
    }

    /// Refuses a textfile path that is a symbolic link, for the agent's start-up: the operator named a link
    /// (or someone planted one), and the first write would silently replace it.
    public func checkNotALink() throws(SystemCallError) {
        var status = stat()
        if lstat(path, &status) == 0 && (status.st_mode & S_IFMT) == S_IFLNK {
            throw SystemCallError("write metrics to", path, errno: ELOOP)
        }
    }

    /// A new, empty file beside `path`, opened for writing: `.NAME.RANDOM.tmp`, mode 0644 (node_exporter
    /// runs as another user).
    private func createTemporaryFile() throws(SystemCallError) -> (Int32, String) {
        let slash = path.lastIndex(of: "/")
        let directory = slash.map { String(path[...$0]) } ?? ""
        let name = slash.map { String(path[path.index(after: $0)...]) } ?? path
        while true {
            let temporary = "\(directory).\(name).\(String(UInt64.random(in: .min ... .max), radix: 36)).tmp"
            let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o644)
            if descriptor >= 0 {
                // open's mode passes through the umask, and the shipped unit's UMask=0027 would make the file
                // 0640, unreadable by node_exporter: the metrics are meant for another user, so say 0644 again.
                guard fchmod(descriptor, 0o644) == 0 else {
                    let failure = errno
                    close(descriptor)
                    unlink(temporary)
                    throw SystemCallError("chmod", temporary, errno: failure)
                }
                return (descriptor, temporary)
            }
            guard errno == EEXIST else { throw SystemCallError("create", temporary, errno: errno) }
        }
    }

    /// Label values escape backslash, double quote and newline (the text format's rule).
    static func escape(_ value: String) -> String {
        var escaped = ""
        for character in value {
            switch character {
            case "\\": escaped += "\\\\"
            case "\"": escaped += "\\\""
            case "\n": escaped += "\\n"
            default: escaped.append(character)
            }
        }
        return escaped
    }

    /// Integers without a fraction; the text format's spelling of infinities and NaN.
    static func format(_ value: Double) -> String {
        if value.isNaN { return "NaN" }
        if value.isInfinite { return value > 0 ? "+Inf" : "-Inf" }
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return String(value)
    }
}
