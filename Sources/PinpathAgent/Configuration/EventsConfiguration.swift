import PinpathYAML

/// Where the agent writes its events, which probe results become events, and how much of a certificate they
/// carry (`events:`).
package struct EventsConfiguration: Sendable, Equatable {
    /// Where event lines go.
    package enum Output: Sendable, Equatable, CustomStringConvertible {
        /// Standard output (the journal, under systemd). The default.
        case stdout
        /// A file, appended to and rotated by size; the path is resolved against the configuration's directory.
        case file(String)

        /// `stdout` or the path.
        package var description: String {
            switch self {
            case .stdout: return "stdout"
            case .file(let path): return path
            }
        }
    }

    /// Which probe results are written as events.
    package enum Probes: String, Sendable, CaseIterable {
        /// Only results that change an endpoint's state (after the thresholds). The default.
        case changes
        /// Every probe result as well (`probe.result`), for shipping to a log store.
        case all
    }

    /// Where events go. Default `stdout`.
    package let output: Output
    /// A file output is rotated when it would grow past this many bytes. Default 10 MiB.
    package let maxSize: Int
    /// How many rotated files are kept (`events.jsonl.1` … `.N`); 0 keeps none. Default 5.
    package let keep: Int
    /// Which probe results become events. Default `changes`.
    package let probes: Probes
    /// Whether `pin.failure` carries both chains as PEM (RFC 7469's `served-certificate-chain` and
    /// `validated-certificate-chain`) besides each certificate's subject, pin and notAfter. Default `false`: a
    /// PEM is kilobytes per certificate in every failure's line, and a journal keeps what it is sent; the
    /// reports POSTed to `report_uri` collectors carry the PEMs whatever this says (RFC 7469 requires them).
    package let includeCertificates: Bool

    /// 10 MiB.
    package static let defaultMaxSize = 10 * 1024 * 1024
    /// 5 files.
    package static let defaultKeep = 5

    /// Creates the settings; every parameter has the documented default.
    package init(
        output: Output = .stdout, maxSize: Int = defaultMaxSize, keep: Int = defaultKeep, probes: Probes = .changes,
        includeCertificates: Bool = false
    ) {
        self.output = output
        self.maxSize = maxSize
        self.keep = keep
        self.probes = probes
        self.includeCertificates = includeCertificates
    }

    static let keys = ["output", "max_size", "keep", "probes", "include_certificates"]

    /// The settings with those a reload applies at once (`probes`, `include_certificates`: read per result) at
    /// their defaults, for telling whether a reload changed what only a restart applies (the output and its
    /// rotation). A key added later counts as needing a restart until it is put here: a reload may over-report,
    /// never hide a change it did not apply.
    var restartSettings: EventsConfiguration {
        EventsConfiguration(output: output, maxSize: maxSize, keep: keep)
    }

    /// Reads `events:`; absent, or `nil` here, means all defaults.
    init?(reading node: Node, at keyPath: String, in _: Void, _ decoder: ConfigurationDecoder) {
        guard let fields = decoder.mapping(node, keyPath, known: Self.keys) else { return nil }
        var output = Output.stdout
        if let value = fields["output"], let text = decoder.string(value, fields.path("output"), "stdout or a file path") {
            if text.isEmpty || text.hasSuffix("/") {
                decoder.report(
                    .invalidValue, at: value, fields.path("output"),
                    "\(ConfigurationProblem.quoted(text)) is not a file path (use stdout or a file such as /var/log/pinpath/events.jsonl)")
            } else if text != "stdout" {
                let path = decoder.resolve(path: text)
                output = .file(path)
                decoder.reportUnwritableDirectory(of: path, at: value, fields.path("output"))
            }
        }
        let maxSize = fields["max_size"].flatMap { decoder.byteSize($0, fields.path("max_size")) } ?? Self.defaultMaxSize
        let keep = fields["keep"].flatMap { decoder.integer($0, fields.path("keep"), in: 0...1000) } ?? Self.defaultKeep
        let probes = fields["probes"].flatMap { decoder.choice($0, fields.path("probes"), Probes.self) } ?? .changes
        let includeCertificates = fields["include_certificates"].flatMap { decoder.bool($0, fields.path("include_certificates")) } ?? false
        self.init(output: output, maxSize: maxSize, keep: keep, probes: probes, includeCertificates: includeCertificates)
    }
}

extension ConfigurationDecoder {
    /// A size in bytes: a plain number, or with `KiB`, `MiB`, `GiB` (or `KB`, `MB`, `GB`, powers of 1000),
    /// at least 1 KiB, which is room for a few event lines.
    func byteSize(_ node: Node, _ keyPath: String) -> Int? {
        guard let text = string(node, keyPath, "a size (like 10MiB)") else { return nil }
        let units: [(String, Int)] = [
            ("KiB", 1 << 10), ("MiB", 1 << 20), ("GiB", 1 << 30), ("KB", 1000), ("MB", 1_000_000), ("GB", 1_000_000_000), ("B", 1),
        ]
        let unit = units.first { text.hasSuffix($0.0) }
        let digits = unit.map { String(text.dropLast($0.0.count)) } ?? text
        guard let number = Int(digits), number >= 0 else {
            report(
                .invalidValue, at: node, keyPath,
                "\(ConfigurationProblem.quoted(text)) is not a size (use a whole number of bytes, or KiB, MiB, GiB: 10MiB)")
            return nil
        }
        let (bytes, overflow) = number.multipliedReportingOverflow(by: unit?.1 ?? 1)
        guard !overflow, bytes >= 1024 else {
            report(.invalidValue, at: node, keyPath, "\(text) is \(overflow ? "too large" : "too small (at least 1KiB)")")
            return nil
        }
        return bytes
    }
}

extension EventsConfiguration: ConfigurationReadable {}
