import CPCRE2
import Glibc

/// A pattern compiled by PCRE2, and the one way to run it: a search bounded by ``PatternLimits``, so that
/// no text, however a server crafts it, makes a search run on.
///
/// Owns the `pcre2_code`. `@unchecked Sendable`: the compiled code is never written after `pcre2_compile`
/// returns, and PCRE2 lets several threads match one compiled pattern at once (pcre2api, "Multithreading");
/// what a search writes (match data, match context, the step count) is made for each call.
///
/// No JIT: the JIT ignores the depth limit, and the agent's unit forbids writable executable memory
/// (`MemoryDenyWriteExecute=yes`) that it would need; a probe runs a pattern once every few seconds.
final class CompiledPattern: @unchecked Sendable {
    private let code: OpaquePointer

    /// Why PCRE2 refused a pattern, and where.
    struct SyntaxError: Error {
        /// PCRE2's own message (`missing terminating ] for character class`).
        let reason: String
        /// Where PCRE2 stopped, in Unicode scalars from the pattern's start.
        let offset: Int
    }

    /// Compiles `source` as UTF-8, with an automatic callout before every item (each is a step).
    /// `\C`, which matches one byte and can split a character, is refused.
    /// - Throws: ``SyntaxError`` with PCRE2's reason and position.
    init(_ source: String) throws(SyntaxError) {
        var errorCode: Int32 = 0
        var errorOffset = 0
        var source = source
        let options = UInt32(PCRE2_UTF | PCRE2_AUTO_CALLOUT | PCRE2_NEVER_BACKSLASH_C)
        let compiled = source.withUTF8 { bytes in
            Self.withBytes(bytes) { pcre2_compile_8($0, bytes.count, options, &errorCode, &errorOffset, nil) }
        }
        guard let compiled else {
            let offset = String(decoding: source.utf8.prefix(errorOffset), as: UTF8.self).unicodeScalars.count
            throw SyntaxError(reason: Self.message(for: errorCode), offset: offset)
        }
        code = compiled
    }

    deinit { pcre2_code_free_8(code) }

    /// Whether the pattern matches somewhere in `text`.
    /// - Throws: ``PatternMatchError`` when the search passed one of `limits` (or PCRE2 failed) before it could
    ///   decide.
    func matches(in text: String, limits: PatternLimits) throws(PatternMatchError) -> Bool {
        guard let matchData = pcre2_match_data_create_8(1, nil) else { throw .failed("no memory for the match data") }
        defer { pcre2_match_data_free_8(matchData) }
        guard let context = pcre2_match_context_create_8(nil) else { throw .failed("no memory for the match context") }
        defer { pcre2_match_context_free_8(context) }
        pcre2_set_match_limit_8(context, limits.steps)
        pcre2_set_depth_limit_8(context, limits.depth)
        pcre2_set_heap_limit_8(context, limits.heapKibibytes)
        var budget = StepBudget(limits)
        var text = text
        let status = withUnsafeMutablePointer(to: &budget) { budgetPointer in
            pcre2_set_callout_8(
                context,
                { block, data in
                    guard let block, let data else { return 0 }
                    return data.assumingMemoryBound(to: StepBudget.self).pointee.charge(block.pointee)
                }, budgetPointer)
            return text.withUTF8 { bytes in
                Self.withBytes(bytes) { pcre2_match_8(code, $0, bytes.count, 0, 0, matchData, context) }
            }
        }
        // The callout ends the search (PCRE2_ERROR_CALLOUT) only after it noted which limit was passed.
        if let exceeded = budget.exceeded { throw .exceeded(exceeded, limits) }
        switch status {
        case 0...: return true
        case PCRE2_ERROR_NOMATCH: return false
        case PCRE2_ERROR_MATCHLIMIT: throw .exceeded(.steps, limits)
        case PCRE2_ERROR_DEPTHLIMIT: throw .exceeded(.depth, limits)
        case PCRE2_ERROR_HEAPLIMIT: throw .exceeded(.memory, limits)
        default: throw .failed(Self.message(for: status))
        }
    }

    /// Passes the bytes' address, or that of an empty byte when there are none: `pcre2_compile` refuses a
    /// null pattern even with a zero length (error 116 in 10.42).
    private static func withBytes<T>(_ bytes: UnsafeBufferPointer<UInt8>, _ body: (UnsafePointer<UInt8>) -> T) -> T {
        if let base = bytes.baseAddress { return body(base) }
        var empty: UInt8 = 0
        return withUnsafePointer(to: &empty) { body($0) }
    }

    /// PCRE2's text for an error code (`pcre2_get_error_message`).
    private static func message(for code: Int32) -> String {
        var buffer = [UInt8](repeating: 0, count: 256)
        let length = pcre2_get_error_message_8(code, &buffer, buffer.count)
        return length > 0 ? String(decoding: buffer.prefix(Int(length)), as: UTF8.self) : "error \(code)"
    }
}

/// The steps one search has taken, charged by PCRE2's automatic callouts (one before each pattern item it
/// tries), which end the search when a limit is passed.
private struct StepBudget {
    /// The processor clock is read once every this many callouts: a read costs about 0.7 µs here, a
    /// callout much less.
    private static let callsPerClockRead = 256

    private let limits: PatternLimits
    private let processorTimeLimit: Duration
    private var steps: UInt64 = 0
    private var position = 0
    private var callsUntilClockRead = callsPerClockRead
    /// The limit that ended the search, if one did.
    private(set) var exceeded: PatternMatchError.Code?

    init(_ limits: PatternLimits) {
        self.limits = limits
        processorTimeLimit = Self.threadProcessorTime() + limits.processorTime
    }

    /// Charges one callout: one step for the item, and one for each character moved over since the last
    /// callout (a repeat's run forwards, a backtrack's backwards), but not the jump to a new start position,
    /// which PCRE2's start-up scans make in one pass over the text. Returns 0 to go on, or
    /// `PCRE2_ERROR_CALLOUT` to end the search.
    mutating func charge(_ callout: pcre2_callout_block_8) -> Int32 {
        let current = Int(callout.current_position)
        let startsAgain = callout.callout_flags & UInt32(PCRE2_CALLOUT_STARTMATCH) != 0
        steps += 1 + (startsAgain ? 0 : UInt64(abs(current - position)))
        position = current
        if steps > UInt64(limits.steps) {
            exceeded = .steps
            return PCRE2_ERROR_CALLOUT
        }
        callsUntilClockRead -= 1
        if callsUntilClockRead == 0 {
            callsUntilClockRead = Self.callsPerClockRead
            if Self.threadProcessorTime() > processorTimeLimit {
                exceeded = .processorTime
                return PCRE2_ERROR_CALLOUT
            }
        }
        return 0
    }

    /// The processor time this thread has used (`CLOCK_THREAD_CPUTIME_ID`): time the thread waited for a
    /// processor does not count, so a loaded machine does not fail a search.
    private static func threadProcessorTime() -> Duration {
        var now = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now)
        return .seconds(now.tv_sec) + .nanoseconds(now.tv_nsec)
    }
}
