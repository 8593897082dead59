import PinpathSupport

/// A search of a configured pattern (`body_matches`, a `/regex/` in `expect.headers`) that stopped before it
/// could decide: the text made it pass one of its limits. A probe that meets one fails (`pattern_limit`):
/// it never passes, and it never runs on.
public struct PatternMatchError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Which limit stopped the search, as an extensible set of codes.
    public struct Code: ErrorCode {
        /// The name, as written in logs and JSON.
        public let name: String
        /// The search took more steps than it may.
        public static let steps = Code(name: "steps")
        /// The search held more backtracking points at once than it may.
        public static let depth = Code(name: "depth")
        /// The backtracking points needed more memory than the search may use.
        public static let memory = Code(name: "memory")
        /// The search used more processor time than it may.
        public static let processorTime = Code(name: "processor_time")
        /// PCRE2 failed for another reason (out of memory).
        public static let failed = Code(name: "failed")
    }

    /// Which limit stopped the search.
    public let code: Code
    /// What happened, after "the pattern": `needed more than 50,000,000 steps`.
    public let reason: String
    /// What to change in the pattern.
    public let advice: String

    /// The sentence a probe reports, naming the pattern by its key: `the body_matches pattern needed more than
    /// 50,000,000 steps on this response; …`.
    public func message(forKey key: String) -> String { "the \(key) pattern \(reason) on this response; \(advice)" }

    /// The sentence without a key.
    public var description: String { "the pattern \(reason) on this text; \(advice)" }

    static func exceeded(_ code: Code, _ limits: PatternLimits) -> PatternMatchError {
        let backtracking =
            "nested or overlapping repeats such as (a|aa)+ or .*x.*y try every way to split the text: make the pattern"
            + " more specific, or use body_contains"
        switch code {
        case .steps:
            return PatternMatchError(code: code, reason: "needed more than \(grouped(limits.steps)) steps", advice: backtracking)
        case .depth:
            return PatternMatchError(
                code: code, reason: "needed more than \(grouped(limits.depth)) nested backtracking points",
                advice: "a repeated group such as (.|\\n)* keeps one per repetition: use a class such as [^<]* instead")
        case .memory:
            return PatternMatchError(
                code: code, reason: "needed more than \(limits.heapKibibytes >> 10) MiB for its backtracking points",
                advice: "a repeated group with captures keeps them for every repetition: use (?:…) or a class such as [^<]*")
        default:
            return PatternMatchError(
                code: .processorTime, reason: "used more than \(limits.processorTime) of processor time", advice: backtracking)
        }
    }

    /// PCRE2 stopped for a reason of its own, such as no memory: still a failure, never a pass.
    static func failed(_ pcre2Reason: String) -> PatternMatchError {
        PatternMatchError(
            code: .failed, reason: "could not be run (PCRE2: \(pcre2Reason))", advice: "the next probe runs it again")
    }

    /// `50000000` as `50,000,000`, as a person reads a limit.
    private static func grouped(_ number: UInt32) -> String {
        var digits = String(number)
        var index = digits.endIndex
        while digits.distance(from: digits.startIndex, to: index) > 3 {
            index = digits.index(index, offsetBy: -3)
            digits.insert(",", at: index)
        }
        return digits
    }
}
