import Foundation

/// The rules the agent's JSON-lines output keeps, checked after the fact:
///
/// 1. Every line is whole: the output ends with a newline and each line is one JSON object.
/// 2. `seq` counts 1, 2, 3… with no gap or repeat, and `time` never goes backwards.
/// 3. `reachability.changed` events chain: each one's `previous_status` is the status last reported
///    (`agent.started`'s path for the first), and each changes what a user sees (status, interface, kind,
///    IPv4 or IPv6), so no two in a row say the same.
/// 4. `reachability.target_changed` events chain the same way per target (status and interface).
/// 5. `endpoint.state_changed` events chain per endpoint: `previous_state` is the state last reported
///    (null only for the first), and `state` differs from it.
enum AgentOutputAudit {
    struct Counts: CustomStringConvertible {
        var lines = 0
        var byType: [String: Int] = [:]
        var description: String {
            "\(lines) lines: " + byType.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
        }
    }

    /// Parses the output; returns the events, every broken rule, and the counts.
    static func check(_ text: String) -> (events: [[String: Any]], violations: [String], counts: Counts) {
        var violations: [String] = []
        var counts = Counts()
        if !text.isEmpty && !text.hasSuffix("\n") { violations.append("the output ends inside a line: \(text.suffix(200))") }
        var events: [[String: Any]] = []
        for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).dropLast().enumerated() {
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
                violations.append("line \(number + 1) is not a JSON object: \(line.prefix(200))")
                continue
            }
            events.append(object)
        }
        counts.lines = events.count

        var lastTime = ""
        var lastPath: String?
        var lastTarget: [String: String] = [:]
        var lastState: [String: String] = [:]
        for (index, event) in events.enumerated() {
            let type = event["event"] as? String ?? "?"
            counts.byType[type, default: 0] += 1
            if event["seq"] as? Int != index + 1 { violations.append("line \(index + 1): seq \(event["seq"] ?? "none")") }
            let time = event["time"] as? String ?? ""
            // Fixed-width RFC 3339 UTC with microseconds: text order is time order.
            if time < lastTime { violations.append("line \(index + 1): time \(time) before \(lastTime)") }
            lastTime = max(lastTime, time)
            switch type {
            case "agent.started":
                lastPath = (event["path"] as? [String: Any]).map(visiblePath)
            case "reachability.changed":
                let visible = visiblePath(event)
                if let lastPath {
                    if visible == lastPath { violations.append("line \(index + 1): reachability.changed repeats \(visible)") }
                    if event["previous_status"] as? String != lastPath.split(separator: " ").first.map(String.init) {
                        violations.append("line \(index + 1): previous_status \(event["previous_status"] ?? "null") after \(lastPath)")
                    }
                }
                lastPath = visible
            case "reachability.target_changed":
                let target = event["target"] as? String ?? "?"
                let visible = "\(event["status"] ?? "?") \(event["interface"] ?? "-")"
                if let last = lastTarget[target] {
                    if visible == last { violations.append("line \(index + 1): \(target) repeats \(visible)") }
                    if event["previous_status"] as? String != last.split(separator: " ").first.map(String.init) {
                        violations.append(
                            "line \(index + 1): \(target) previous_status \(event["previous_status"] ?? "null") after \(last)")
                    }
                }
                lastTarget[target] = visible
            case "endpoint.state_changed":
                let endpoint = event["endpoint"] as? String ?? "?"
                let state = event["state"] as? String ?? "?"
                let previous = event["previous_state"] as? String
                if previous != lastState[endpoint] {
                    violations.append(
                        "line \(index + 1): \(endpoint) previous_state \(previous ?? "null") after \(lastState[endpoint] ?? "none")")
                }
                if previous == state { violations.append("line \(index + 1): \(endpoint) state_changed from \(state) to itself") }
                lastState[endpoint] = state
            default:
                break
            }
        }
        return (events, violations, counts)
    }

    /// The part of a path a user sees, from `agent.started`'s `path` or a `reachability.changed` event.
    private static func visiblePath(_ fields: [String: Any]) -> String {
        ["status", "interface", "kind", "ipv4", "ipv6"].map { "\(fields[$0] ?? "-")" }.joined(separator: " ")
    }
}
