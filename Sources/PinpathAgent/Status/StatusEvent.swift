import PinpathSupport

/// One of the last events of interest the status document lists: taken from the event as the agent writes it
/// (the same redacted values the event output gets), with a one-line plain-text summary made of its fields.
struct StatusEvent: Sendable {
    var time: String
    var event: String
    var level: EventLevel
    var endpoint: String?
    var summary: String

    /// The events the document keeps, by name.
    static let ofInterest: Set<String> = [
        EventCatalog.endpointStateChanged.name, EventCatalog.pinFailure.name, EventCatalog.certificateExpiring.name,
        EventCatalog.certificateExpired.name, EventCatalog.configReloaded.name, EventCatalog.configRejected.name,
        EventCatalog.reachabilityChanged.name, EventCatalog.connectivityChanged.name, EventCatalog.revocationChecked.name,
    ]

    /// The summary's longest length, in scalars.
    static let summaryLimit = 512

    /// `nil` for an event not of interest.
    init?(_ event: AgentEvent, time: String) {
        guard Self.ofInterest.contains(event.name) else { return nil }
        self.time = time
        self.event = event.name
        level = event.level
        let fields = EventFields(event.fields)
        endpoint = fields.string("endpoint")
        // Escaped as text: one line whatever a server or a file put in the fields (controls, bidi scalars).
        summary = UntrustedText.escaped(Self.summary(event.name, fields), limit: Self.summaryLimit)
    }

    /// `up → down (tls_invalid)`, `pin mismatch on example.com:443 (enforced)`, ….
    private static func summary(_ name: String, _ fields: EventFields) -> String {
        switch name {
        case EventCatalog.endpointStateChanged.name:
            let previous = fields.string("previous_state") ?? "unknown"
            let state = fields.string("state") ?? "?"
            // The probe's error category says more than `probe_failed`.
            let reason = fields.object("probe").flatMap { EventFields($0).string("error_category") } ?? fields.string("cause") ?? "?"
            return "\(previous) → \(state) (\(reason))"
        case EventCatalog.pinFailure.name:
            let place = [fields.string("hostname"), fields.int("port").map(String.init)].compactMap { $0 }.joined(separator: ":")
            let mode = fields.bool("enforced") == false ? "report-only" : "enforced"
            return "pin mismatch on \(place.isEmpty ? "?" : place) (\(mode))"
        case EventCatalog.certificateExpiring.name:
            return "\(fields.string("subject") ?? "?") expires in \(fields.int("days_left").map(String.init) ?? "?") days "
                + "(\(fields.string("not_after") ?? "?"))"
        case EventCatalog.certificateExpired.name:
            return "\(fields.string("subject") ?? "?") expired \(fields.int("days_expired").map(String.init) ?? "?") days ago "
                + "(\(fields.string("not_after") ?? "?"))"
        case EventCatalog.configReloaded.name:
            let counts = ["added", "removed", "changed"].map { "\(fields.count($0)) \($0)" }.joined(separator: ", ")
            return "configuration reloaded: \(fields.int("endpoints") ?? 0) endpoints (\(counts))"
        case EventCatalog.configRejected.name:
            let count = fields.count("errors")
            return "configuration rejected: \(count) problem\(count == 1 ? "" : "s"); the running configuration stays"
        case EventCatalog.reachabilityChanged.name:
            let via = fields.string("interface").map { " via \($0)" } ?? ""
            let reason = fields.string("reason").map { " (\($0))" } ?? ""
            return "path \(fields.string("previous_status") ?? "unknown") → \(fields.string("status") ?? "?")\(via)\(reason)"
        case EventCatalog.connectivityChanged.name:
            let reason = fields.string("reason").map { ": \($0)" } ?? ""
            return "connectivity \(fields.string("previous") ?? "unknown") → \(fields.string("state") ?? "?")\(reason)"
        case EventCatalog.revocationChecked.name:
            return "OCSP \(fields.string("status") ?? "?") for \(fields.string("host") ?? "?")"
                + (fields.string("previous_status").map { " (was \($0))" } ?? "")
        default:
            return name
        }
    }
}

/// An event's fields, read by name: what the status document takes from the events the agent writes.
struct EventFields {
    private let object: JSONValue

    init(_ members: [(String, JSONValue)]) { object = .object(members) }

    func string(_ name: String) -> String? {
        if case .string(let text)? = object[name] { return text }
        return nil
    }

    func int(_ name: String) -> Int? {
        if case .int(let number)? = object[name] { return number }
        return nil
    }

    func bool(_ name: String) -> Bool? {
        if case .bool(let flag)? = object[name] { return flag }
        return nil
    }

    /// The number of elements of an array field; 0 when it is absent or not an array.
    func count(_ name: String) -> Int {
        if case .array(let elements)? = object[name] { return elements.count }
        return 0
    }

    func object(_ name: String) -> [(String, JSONValue)]? {
        if case .object(let members)? = object[name] { return members }
        return nil
    }
}
