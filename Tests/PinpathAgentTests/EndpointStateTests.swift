import PinpathSupport
import Testing

@testable import PinpathAgent

@Suite("Endpoint state")
struct EndpointStateTests {
    typealias Input = EndpointState.Input
    typealias Status = EndpointState.Status

    /// One row: thresholds (failure, success), the inputs, and after each the state (upper case: a
    /// transition happened at that input).
    struct Row: CustomTestStringConvertible, Sendable {
        var name: String
        var thresholds: (failure: Int, success: Int) = (2, 1)
        var steps: [(Input, String)]
        var testDescription: String { name }
    }

    // One letter each, so that a row of the table reads as the sequence it tests.
    // swift-format-ignore: AlwaysUseLowerCamelCase
    static let S = Input.probeSucceeded, F = Input.probeFailed, U = Input.pathUnreachable, R = Input.pathReachable

    static let rows: [Row] = [
        Row(name: "first success is up at once", steps: [(S, "UP"), (S, "up")]),
        Row(name: "first failure waits for the threshold", steps: [(F, "unknown"), (F, "DOWN"), (F, "down")]),
        Row(name: "a success between failures resets the count", steps: [(S, "UP"), (F, "up"), (S, "up"), (F, "up"), (F, "DOWN")]),
        Row(
            name: "down needs success_threshold successes", thresholds: (2, 3),
            steps: [(F, "unknown"), (F, "DOWN"), (S, "down"), (S, "down"), (F, "down"), (S, "down"), (S, "down"), (S, "UP")]),
        Row(name: "from unknown a success decides even with success_threshold 3", thresholds: (2, 3), steps: [(S, "UP")]),
        Row(
            name: "failure_threshold 1 reports down on the first failure", thresholds: (1, 1),
            steps: [(F, "DOWN"), (S, "UP"), (F, "DOWN")]),
        Row(
            name: "path loss is unreachable at once, from any state",
            steps: [
                (U, "UNREACHABLE"), (R, "unreachable"), (S, "UP"), (U, "UNREACHABLE"), (R, "unreachable"), (F, "unreachable"), (F, "DOWN"),
                (U, "UNREACHABLE"),
            ]),
        Row(
            name: "results that arrive while the path is unreachable are ignored",
            steps: [
                (S, "UP"), (U, "UNREACHABLE"), (S, "unreachable"), (F, "unreachable"), (F, "unreachable"), (U, "unreachable"),
                (R, "unreachable"), (S, "UP"),
            ]),
        Row(
            name: "a failure before the path loss does not count after it",
            steps: [(S, "UP"), (F, "up"), (U, "UNREACHABLE"), (R, "unreachable"), (F, "unreachable"), (F, "DOWN")]),
        Row(
            name: "path back while reachable changes nothing", steps: [(S, "UP"), (R, "up"), (F, "up"), (R, "up"), (F, "up"), (F, "DOWN")]),
    ]

    @Test("Transitions", arguments: rows)
    func table(row: Row) {
        var state = EndpointState(failureThreshold: row.thresholds.failure, successThreshold: row.thresholds.success)
        for (index, (input, expected)) in row.steps.enumerated() {
            let before = state.status
            let transition = state.apply(input)
            #expect(state.status.rawValue == expected.lowercased(), "step \(index): \(input)")
            if expected == expected.uppercased() {
                #expect(
                    transition?.previous == before && transition?.current == state.status && transition?.cause == input,
                    "step \(index): \(input)")
            } else {
                #expect(transition == nil, "step \(index): \(input)")
            }
        }
    }

    @Test("A transition says how many results decided it, and encodes as the event's fields")
    func fields() throws {
        var state = EndpointState(failureThreshold: 3)
        _ = state.apply(.probeFailed)
        _ = state.apply(.probeFailed)
        let third = state.apply(.probeFailed)
        let down = try #require(third)
        #expect(down == .init(previous: .unknown, current: .down, cause: .probeFailed, consecutive: 3))
        #expect(
            JSONValue.object(down.fields).encoded()
                == #"{"state":"down","previous_state":null,"cause":"probe_failed","consecutive":3}"#)
        let next = state.apply(.probeSucceeded)
        let up = try #require(next)
        #expect(
            JSONValue.object(up.fields).encoded()
                == #"{"state":"up","previous_state":"down","cause":"probe_succeeded","consecutive":1}"#)
    }
}
