/// The parameters of a `/probe` request (`?target=T&module=M[&debug=true]`), read from the request's query as
/// Prometheus writes it (`url.Values.Encode`: `%XX` escapes, `+` for a space).
///
/// Stricter than blackbox_exporter, which takes the first of repeated parameters and decodes the target twice: a
/// request that could mean two things is refused with a one-line reason naming the parameter, never guessed at.
/// Other parameters are ignored, as blackbox_exporter does (`hostname` included: pinpath has no equivalent).
struct ProbeQuery: Equatable, Sendable {
    /// The target, decoded: a URL or `host:port`, judged by the module.
    var target: String
    /// The module's name, decoded.
    var module: String
    /// Whether the answer is the probe's log (`debug=true`).
    var debug: Bool

    /// Longer than any URL a scraper sends (browsers and proxies cut at 8 KiB; targets are host names and paths).
    static let maximumTargetBytes = 2048
    /// Module names are configuration keys.
    static let maximumModuleBytes = 128

    /// Why a query was refused: the parameter it is about (nil for the query as a whole) and a sentence.
    struct Problem: Error, Equatable, CustomStringConvertible {
        let parameter: String?
        let reason: String

        var description: String { parameter.map { "\($0): \(reason)" } ?? reason }
    }

    /// Reads `query`, the part of the request target after `?` (empty when there is none).
    /// - Throws: ``Problem`` for a bad escape, a value that is not UTF-8 or holds a control character, a missing,
    ///   empty, repeated or over-long `target` or `module`, or a `debug` other than `true` or `false`.
    init(parsing query: Substring) throws(Problem) {
        var query = query
        // On the query's bytes, split at `&` and the first `=` as Go's url.ParseQuery does (never on `Character`s: a
        // combining mark after a separator must not hide it), with no substring per pair: this runs on the
        // listener's thread for every scrape.
        let parsed = query.withUTF8 { bytes in Result { () throws(Problem) in try Self(bytes) } }
        self = try parsed.get()
    }

    private init(_ query: UnsafeBufferPointer<UInt8>) throws(Problem) {
        // Three slots rather than a dictionary.
        var target: String?
        var module: String?
        var debug: String?
        var pairStart = 0
        while pairStart < query.count {
            let pairEnd = query[pairStart...].firstIndex(of: UInt8(ascii: "&")) ?? query.count
            defer { pairStart = pairEnd + 1 }
            guard pairEnd > pairStart else { continue }
            let pair = UnsafeBufferPointer(rebasing: query[pairStart..<pairEnd])
            let equals = pair.firstIndex(of: UInt8(ascii: "="))
            let name = UnsafeBufferPointer(rebasing: pair[..<(equals ?? pair.count)])
            let value = UnsafeBufferPointer(rebasing: pair[(equals.map { $0 + 1 } ?? pair.count)...])
            switch try Self.parameter(named: name) {
            case .target: try Self.take(value, named: "target", into: &target)
            case .module: try Self.take(value, named: "module", into: &module)
            case .debug: try Self.take(value, named: "debug", into: &debug)
            case nil: continue
            }
        }
        self.target = try Self.required("target", target, maximumBytes: Self.maximumTargetBytes)
        self.module = try Self.required("module", module, maximumBytes: Self.maximumModuleBytes)
        switch debug {
        case nil, "false": self.debug = false
        case "true": self.debug = true
        default: throw Problem(parameter: "debug", reason: "expected true or false")
        }
    }

    /// The parameters read; the others are ignored.
    private enum Parameter {
        case target, module, debug
    }

    /// Which parameter `name` (still encoded) names. Every name is decoded and checked as a value is, so that a
    /// malformed one is refused whatever it names; a plain one (printable ASCII without `%` or `+`) is its own
    /// decoding and is compared as it is.
    private static func parameter(named name: UnsafeBufferPointer<UInt8>) throws(Problem) -> Parameter? {
        func plain(_ expected: StaticString) -> Bool {
            name.elementsEqual(UnsafeBufferPointer(start: expected.utf8Start, count: expected.utf8CodeUnitCount))
        }
        guard isPlain(name) else {
            switch try decode(name, parameter: nil) {
            case "target": return .target
            case "module": return .module
            case "debug": return .debug
            default: return nil
            }
        }
        if plain("target") { return .target }
        if plain("module") { return .module }
        if plain("debug") { return .debug }
        return nil
    }

    /// Decodes the value of the parameter `name` into its slot, which must still be empty.
    private static func take(_ value: UnsafeBufferPointer<UInt8>, named name: String, into slot: inout String?) throws(Problem) {
        guard slot == nil else { throw Problem(parameter: name, reason: "given more than once") }
        slot = try decode(value, parameter: name)
    }

    private static func required(_ name: String, _ value: String?, maximumBytes: Int) throws(Problem) -> String {
        guard let value else { throw Problem(parameter: name, reason: "missing (add \(name)=… to the query)") }
        guard !value.isEmpty else { throw Problem(parameter: name, reason: "empty") }
        guard value.utf8.count <= maximumBytes else {
            throw Problem(parameter: name, reason: "longer than \(maximumBytes) bytes")
        }
        return value
    }

    /// Whether `text` is printable ASCII without `%` or `+`: then it decodes to itself.
    private static func isPlain(_ text: UnsafeBufferPointer<UInt8>) -> Bool {
        !text.contains { $0 < 0x20 || $0 > 0x7E || $0 == UInt8(ascii: "%") || $0 == UInt8(ascii: "+") }
    }

    /// Percent-decodes one name or value (`+` is a space): the result must be UTF-8 without control characters,
    /// so that no reason, log line or label built from it can be split or rewritten.
    private static func decode(_ text: UnsafeBufferPointer<UInt8>, parameter: String?) throws(Problem) -> String {
        if isPlain(text) { return String(decoding: text, as: UTF8.self) }
        let what = parameter ?? "a parameter name"
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.count)
        var index = 0
        while index < text.count {
            let byte = text[index]
            switch byte {
            case UInt8(ascii: "%"):
                guard index + 2 < text.count, let high = hexValue(text[index + 1]), let low = hexValue(text[index + 2]) else {
                    throw Problem(parameter: parameter, reason: "\(what) has a % not followed by two hexadecimal digits")
                }
                bytes.append(high << 4 | low)
                index += 3
                continue
            case UInt8(ascii: "+"):
                bytes.append(UInt8(ascii: " "))
            default:
                bytes.append(byte)
            }
            index += 1
        }
        guard let decoded = String(validating: bytes, as: UTF8.self) else {
            throw Problem(parameter: parameter, reason: "\(what) is not UTF-8 once decoded")
        }
        guard !decoded.unicodeScalars.contains(where: { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) }) else {
            throw Problem(parameter: parameter, reason: "\(what) holds a control character")
        }
        return decoded
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}

/// The deadline a scraper gives a probe: `X-Prometheus-Scrape-Timeout-Seconds` minus blackbox_exporter's default
/// offset (`--timeout-offset`, 0.5 s), so that the answer arrives before the scrape gives up.
///
/// blackbox_exporter's rules (prober/handler.go, `getTimeout`): a missing or zero header means no scraper deadline;
/// a header not above the offset leaves the module's own timeout. It answers 500 to a header that is not a number;
/// pinpath refuses that, a negative number, `NaN` and infinities with 400, since the request is the fault.
enum ScrapeDeadline {
    /// The header's name, as Prometheus sends it.
    static let header = "X-Prometheus-Scrape-Timeout-Seconds"
    /// blackbox_exporter's default `--timeout-offset`.
    static let offset = 0.5
    /// A deadline longer than this is this: the module's timeout is the smaller anyway, and `Duration` stays exact.
    static let maximumSeconds = 86_400.0

    /// The deadline for the header's values in a request (none, one, or a repeated header).
    /// - Throws: ``ProbeQuery/Problem`` naming the header when it is repeated (as a repeated query parameter is:
    ///   which one a proxy or the scraper meant cannot be told), or as ``deadline(header:)`` does.
    static func deadline(headers values: [String]) throws(ProbeQuery.Problem) -> Duration? {
        guard values.count <= 1 else { throw ProbeQuery.Problem(parameter: header, reason: "given more than once") }
        return try deadline(header: values.first)
    }

    /// The deadline for a header value (nil for no header).
    /// - Returns: nil when the header is absent, zero or not above the offset: the module's timeout then holds.
    /// - Throws: ``ProbeQuery/Problem`` naming the header when its value is not a finite, non-negative number.
    static func deadline(header value: String?) throws(ProbeQuery.Problem) -> Duration? {
        guard let value else { return nil }
        guard let seconds = Double(value), seconds.isFinite, seconds >= 0 else {
            throw ProbeQuery.Problem(parameter: header, reason: "expected a number of seconds, 0 or more")
        }
        let remaining = min(seconds, maximumSeconds) - offset
        guard seconds != 0, remaining > 0 else { return nil }
        return .microseconds(Int64((remaining * 1_000_000).rounded()))
    }
}
