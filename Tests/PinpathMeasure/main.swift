// pinpath-measure: the in-process figures of benchmarks/audit.sh, timed without a network or a process start.
//
//   pinpath-measure LEAF.pem INTERMEDIATE.pem CA-FILE.pem [ITERATIONS]
//
// Times, on this thread with the monotonic clock, the median over 9 batches of ITERATIONS calls each:
//   spki_pin_us      Certificate.spkiPin (DER-encode the SubjectPublicKeyInfo, SHA-256) per certificate,
//                    over the leaf and the intermediate in turn;
//   evaluate_none_us / evaluate_pinned_us
//                    SecurityPolicy.evaluate of the served [leaf, intermediate] against CA-FILE, building and
//                    verifying the 3-certificate chain (root from the store) and checking the host valid.test;
//                    mode none, then public_key with the root's pin (the pin compared at each depth);
//   evaluate_none_webpki_us
//                    the same as evaluate_none_us with the webpki profile forced: without the look-ups the
//                    default `auto` makes in the system store to tell whether CA-FILE's root is public.
// The certificates are parsed once, before timing. It prints one line of key=value pairs and asserts nothing.
//
//   pinpath-measure handshakes HOST:PORT CA-FILE [COUNT]
//
// The CPU per TLS client handshake on a shared context and on a context per connection (HandshakeMeasure.swift).
import Glibc
import PinpathSecurity

func fail(_ message: String) -> Never {
    let line = "pinpath-measure: \(message)\n"
    _ = line.withCString { write(STDERR_FILENO, $0, strlen($0)) }
    exit(64)
}

let arguments = CommandLine.arguments
if arguments.count > 1 && arguments[1] == "handshakes" {
    measureHandshakes(arguments.dropFirst(2))
    exit(0)
}
guard arguments.count == 4 || arguments.count == 5 else {
    fail("usage: pinpath-measure LEAF.pem INTERMEDIATE.pem CA-FILE.pem [ITERATIONS]")
}
let iterations = arguments.count == 5 ? Int(arguments[4]) ?? 0 : 2000
guard iterations > 0 else { fail("ITERATIONS must be a positive integer") }

do {
    let leaf = try Certificate.certificates(contentsOf: arguments[1])[0]
    let intermediate = try Certificate.certificates(contentsOf: arguments[2])[0]
    let store = try TrustStore(caFile: arguments[3])
    let served = [leaf, intermediate]
    let none = try SecurityPolicy(mode: .none)
    let check = try none.evaluate(servedChain: served, host: "valid.test", trustStore: store)
    guard check.failure == nil, check.verifiedChain.count == 3, let root = check.verifiedChain.last else {
        fail(
            """
            the chain does not verify to a root in \(arguments[3]) for valid.test: \
            \(check.failure?.message ?? "only \(check.verifiedChain.count) certificates")
            """
        )
    }
    let pinned = try SecurityPolicy(mode: .publicKey, pins: [root.spkiPin], requiresBackupPin: false)

    /// Microseconds per call: the median of 9 batches, so one descheduling on a shared machine does not count.
    func microseconds(_ body: (Int) throws -> Void) rethrows -> Double {
        var batches: [Double] = []
        for _ in 0..<9 {
            let start = ContinuousClock.now
            for index in 0..<iterations { try body(index) }
            let elapsed = start.duration(to: ContinuousClock.now)
            batches.append(Double(elapsed.components.seconds) * 1e6 + Double(elapsed.components.attoseconds) / 1e12)
        }
        return batches.sorted()[4] / Double(iterations)
    }

    var sink = 0  // keeps the optimizer from dropping the work
    let pin = microseconds { index in sink &+= Int(served[index & 1].spkiPin.digest[0]) }
    let evaluateNone = try microseconds { _ in
        sink &+= try none.evaluate(servedChain: served, host: "valid.test", trustStore: store).verifiedChain.count
    }
    let evaluateForced = try microseconds { _ in
        sink &+= try none.evaluate(servedChain: served, host: "valid.test", trustStore: store, profile: .webpki).verifiedChain.count
    }
    let evaluatePinned = try microseconds { _ in
        let evaluation = try pinned.evaluate(servedChain: served, host: "valid.test", trustStore: store)
        guard evaluation.failure == nil else { fail("the pinned evaluation failed: \(evaluation.failure!.message)") }
        sink &+= evaluation.verifiedChain.count
    }
    func format(_ value: Double) -> String { String(Double(Int(value * 100)) / 100) }
    print(
        """
        measure: iterations=\(iterations) spki_pin_us=\(format(pin)) evaluate_none_us=\(format(evaluateNone)) \
        evaluate_none_webpki_us=\(format(evaluateForced)) evaluate_pinned_us=\(format(evaluatePinned)) sink=\(sink % 10)
        """
    )
} catch {
    fail("\(error)")
}
