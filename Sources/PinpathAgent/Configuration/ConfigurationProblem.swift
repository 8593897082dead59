import PinpathSupport

/// One thing wrong with a configuration file: where it is, which key, and what to do about it.
///
/// The agent puts these into its `config.rejected` event (``jsonValue``) and `pinpath check-config` prints
/// their ``description``, which reads
/// `etc/pinpath.yaml:14:9: endpoints[2].interval: "5 minutes" is not a duration (use 300s or 5m)`.
public struct ConfigurationProblem: Sendable, Hashable, CustomStringConvertible {
    /// What kind of problem, as an extensible set of codes (for machines; people read ``message``).
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        let name: String
        /// The name, as written in JSON.
        public var description: String { name }
        /// The file cannot be read, or is not UTF-8 text.
        public static let unreadableFile = Code(name: "unreadable_file")
        /// Not valid YAML (the parser's own message).
        public static let syntax = Code(name: "syntax")
        /// A key that pinpath does not know (a typo, usually; the message suggests the closest known key).
        public static let unknownKey = Code(name: "unknown_key")
        /// The same key twice in one mapping, or two endpoints, targets or headers with the same name.
        public static let duplicate = Code(name: "duplicate")
        /// A required key is missing.
        public static let missingKey = Code(name: "missing_key")
        /// A list where a value was expected, text where a number was expected, and so on.
        public static let wrongType = Code(name: "wrong_type")
        /// The right type but an unusable value (a bad duration, URL, pin, regex or status range).
        public static let invalidValue = Code(name: "invalid_value")
        /// A reference to a policy that is not defined.
        public static let undefinedReference = Code(name: "undefined_reference")
        /// `${NAME}` in a header names an environment variable that is not set.
        public static let missingEnvironmentVariable = Code(name: "missing_environment_variable")
        /// A file the configuration names (a certificate, a CA file) cannot be read or holds nothing usable.
        public static let unusableFile = Code(name: "unusable_file")
        /// A security policy that PinpathSecurity refuses (no pins, no backup pin, accepts anything).
        public static let refusedPolicy = Code(name: "refused_policy")
        /// A warning: a policy's `expires` date has passed, so its pins are no longer checked.
        public static let expiredPins = Code(name: "expired_pins")
        /// A warning: the policy authenticates nothing (invalid certificates allowed, no host check, no pins),
        /// as AFNetworking allows for development servers; a server on the path can impersonate the host.
        public static let acceptsAnyCertificate = Code(name: "accepts_any_certificate")
        /// A file the agent writes (events, metrics) is in a directory that is missing, or that this user cannot
        /// write to: the agent could not start, or would write nothing.
        public static let unwritableDirectory = Code(name: "unwritable_directory")
        /// A warning: no endpoint and no reachability target, so the agent has nothing to probe or watch but the
        /// machine's own path.
        public static let nothingToMonitor = Code(name: "nothing_to_monitor")
        /// A warning: a `report_uri` is plain http, so pin failure reports (and any credentials in the URL) cross
        /// the network unencrypted and can be read or changed on the way.
        public static let plainHTTPReportURI = Code(name: "plain_http_report_uri")
        /// A warning: an `include` pattern matches no file, so it adds no endpoints.
        public static let nothingIncluded = Code(name: "nothing_included")
        /// A key or `${NAME}` in an included file that would reach what only the main file may: a local file
        /// (`body_file`, a client certificate or key) or the environment.
        public static let notInIncludedFile = Code(name: "not_in_included_file")
        /// A warning: a credential default (a secret header, a client certificate, a `body_file`) is not applied
        /// to an endpoint, because it is plain http, or in an included file that `include`'s `credentials_for`
        /// does not scope to its host or whose policy does not authenticate the server.
        public static let credentialDefaultWithheld = Code(name: "credential_default_withheld")
        /// The configuration stands for more than pinpath reads: `defaults:` copied into the endpoints past the
        /// limit (the nodes the files write, ten times over).
        public static let tooLarge = Code(name: "too_large")
        /// A warning: the metrics listener is reachable from other hosts with neither credentials nor
        /// `probe_unauthenticated`, so `/probe` is refused there.
        public static let unprotectedListener = Code(name: "unprotected_listener")
        /// A warning of a reload: `metrics.listen` changed or was removed, which waits for a restart, so the running
        /// listener keeps the access (`tls`, `basic_auth`, `probe_unauthenticated`) it had; the rest applies.
        public static let listenerAccessKept = Code(name: "listener_access_kept")
        /// A warning: `metrics.basic_auth.users` have bcrypt hashes of different costs, so the time a 401 takes tells
        /// a user of a lower cost from an unknown one (checked against a decoy of the highest cost).
        public static let mixedBcryptCosts = Code(name: "mixed_bcrypt_costs")
    }

    /// The configuration file, as it was given (relative paths stay relative).
    public let file: String
    /// The line, from 1; `nil` when the problem is the whole file (it cannot be read).
    public let line: Int?
    /// The column, from 1, counted in Unicode scalars as libyaml counts them; `nil` with ``line``.
    public let column: Int?
    /// Where in the document: `endpoints[2].interval`, `policies.api-pins.pins[0]`; empty for the document.
    public let keyPath: String
    /// What kind of problem.
    public let code: Code
    /// A sentence for a person: names the value and says what to write instead. Never holds the value of
    /// an environment variable.
    public let message: String

    /// The most scalars of a value a message quotes: enough to recognize it, too few to carry a token or a key
    /// that a mistaken `include:` pattern or `--config` read.
    static let quotedLength = 32

    /// The most scalars of a whole message the loader writes, however many values it quotes.
    static let maximumMessageLength = 1024

    /// `value` as a message quotes it: in double quotes, at most ``quotedLength`` scalars, controls and bidi
    /// formatting escaped (`UntrustedText`), the cut marked.
    static func quoted(_ value: String) -> String {
        "\"" + UntrustedText.escaped(value, limit: quotedLength) + "\""
    }

    /// Creates a problem; the loader makes these, tests and other front ends may too.
    package init(file: String, line: Int?, column: Int?, keyPath: String, code: Code, message: String) {
        self.file = file
        self.line = line
        self.column = column
        self.keyPath = keyPath
        self.code = code
        self.message = message
    }

    /// `file:line:column: key.path: message`, the form compilers use, so editors can jump to it.
    public var description: String {
        var text = file
        if let line { text += ":\(line)" }
        if let column { text += ":\(column)" }
        text += ": "
        if !keyPath.isEmpty { text += "\(keyPath): " }
        return text + message
    }

    /// The problem as an event field: `{"file":…,"line":…,"column":…,"key":…,"code":…,"message":…}`.
    package var jsonValue: JSONValue {
        .object([
            ("file", .string(file)), ("line", line.map(JSONValue.int) ?? .null),
            ("column", column.map(JSONValue.int) ?? .null), ("key", .string(keyPath)),
            ("code", .string(code.description)), ("message", .string(message)),
        ])
    }
}

/// A configuration that cannot be used: every problem found, in document order, not just the first, so one
/// edit can fix them all and a rejected reload can report them all.
public struct ConfigurationError: Error, Sendable, CustomStringConvertible {
    /// The problems, sorted by line and column (whole-file problems first). Never empty.
    public let problems: [ConfigurationProblem]

    /// Creates an error from problems found; they are sorted by position.
    package init(problems: [ConfigurationProblem]) {
        self.problems = problems.sorted { ($0.line ?? 0, $0.column ?? 0) < ($1.line ?? 0, $1.column ?? 0) }
    }

    /// One problem per line.
    public var description: String { problems.map(\.description).joined(separator: "\n") }
}
