/// How much one search of a configured pattern may cost, whatever text it runs on: a server chooses the
/// text (a body of up to 4 MiB, a header value), so a pattern that backtracks must end, and soon.
///
/// PCRE2's own match limit counts per start position (10.42 resets it at each one), so on its own it lets a
/// search cost that limit times the length of the text: `(?s)<title>.*</title>` against a body of many
/// `<title>` and no `</title>` does. ``steps`` is counted over the whole search instead.
struct PatternLimits: Sendable, Equatable {
    /// Steps of one search, over every start position: one for each pattern item the matcher tries (an
    /// automatic callout before each), plus one for each character it moved over since the item before.
    /// Also PCRE2's own match limit (`pcre2_set_match_limit`), which counts per start position.
    var steps: UInt32 = 50_000_000
    /// Backtracking points PCRE2 may hold at once (`pcre2_set_depth_limit`): a repeated group such as
    /// `(.|\n)*` holds one per repetition.
    var depth: UInt32 = 100_000
    /// The memory those points may take, in KiB (`pcre2_set_heap_limit`).
    var heapKibibytes: UInt32 = 16 << 10
    /// Processor time (this thread's) one search may use: the backstop for work that moves over no
    /// character and so counts no step, such as a fixed repeat (`a{60000}`) or a back-reference that
    /// compares many characters before failing.
    var processorTime: Duration = .seconds(2)

    /// The limits every probe's patterns run under. The steps take 0.25 to 0.45 s of processor time here
    /// (optimized; about twice that in a debug build); a pattern that does not backtrack searches a 4 MiB
    /// body in a few steps a character (20 million at most among those measured).
    static let standard = PatternLimits()
}
