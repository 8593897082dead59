import PinpathSupport

/// What a download does with a response head, given the offset it asked from: the decision table of a resumed
/// (or first) transfer, kept apart from the I/O so that every row is tested.
///
/// | asked          | status | Content-Range            | decision                                  |
/// |----------------|--------|--------------------------|-------------------------------------------|
/// | from 0         | 2xx but 206 | —                   | write from 0 (length: Content-Length)     |
/// | from 0         | 206    | any                      | refuse: a part was not asked for           |
/// | from N > 0     | 206    | `bytes N-(L-1)/L`        | append (length L)                         |
/// | from N > 0     | 206    | anything else, or none   | refuse: the part is not the one asked for  |
/// | from N > 0     | 200    | —                        | restart: the server ignored the range, or `If-Range` failed (the file changed) |
/// | from N > 0     | 416    | `bytes */N`              | already complete                          |
/// | from N > 0     | 416    | anything else            | restart without a range                   |
/// | any            | other  | —                        | unexpected status: nothing written        |
///
/// When the partial file's record knows the length (`expectedLength`), a part announcing another length is
/// refused too: a different file under the same validator is not appended to.
enum ResumeDecision: Equatable, Sendable {
    /// Write the body from byte 0 (the partial file emptied first); `length` is the announced length, if any.
    case writeFromStart(length: Int64?, restarted: Bool)
    /// Append the body to the partial file, which then reaches `length`.
    case append(length: Int64)
    /// The partial file already holds the whole file.
    case complete
    /// Ask again from byte 0, without a range (a 416 for another length).
    case retryFromStart
    /// The server's part is not what was asked for: fail (`invalidResponse`), the partial file kept as it was.
    case mismatchedRange(String)
    /// A status a download does not write: fail (`unexpectedStatus`), nothing written.
    case unexpectedStatus

    /// Decides.
    /// - Parameters:
    ///   - offset: the byte the request asked from (0: no `Range` was sent).
    ///   - status: the final response's status code.
    ///   - contentRange: its `Content-Range` field, if any.
    ///   - contentLength: its `Content-Length`, if any (of the part, for a 206).
    ///   - expectedLength: the whole file's length the partial file was started under, if known.
    static func deciding(
        offset: Int64, status: Int, contentRange: String?, contentLength: Int64?, expectedLength: Int64?
    ) -> ResumeDecision {
        switch status {
        case 206:
            guard offset > 0 else { return .mismatchedRange("a 206 partial response to a request for the whole file") }
            guard let received = contentRange else { return .mismatchedRange("a 206 partial response without Content-Range") }
            // The server's text, quoted in the error's message: escaped and cut short (a terminal shows it).
            let field = UntrustedText.escaped(received, limit: 80)
            guard let parsed = ContentRange(parsing: received), let range = parsed.range else {
                return .mismatchedRange("Content-Range \"\(field)\" is not bytes FIRST-LAST/LENGTH")
            }
            guard range.lowerBound == offset, range.upperBound == parsed.length - 1 else {
                return .mismatchedRange("Content-Range \"\(field)\" is not the bytes asked for (bytes=\(offset)-)")
            }
            if let expectedLength, expectedLength != parsed.length {
                return .mismatchedRange(
                    "Content-Range \"\(field)\" gives a length of \(parsed.length), the partial file was started for \(expectedLength)")
            }
            if let contentLength, contentLength != parsed.length - offset {
                return .mismatchedRange("Content-Length \(contentLength) does not match Content-Range \"\(field)\"")
            }
            return .append(length: parsed.length)
        case 416 where offset > 0:
            if let field = contentRange, let parsed = ContentRange(parsing: field), parsed.range == nil, parsed.length == offset,
                expectedLength.map({ $0 == offset }) ?? true
            {
                return .complete
            }
            return .retryFromStart
        case 200..<300:
            return .writeFromStart(length: contentLength, restarted: offset > 0)
        default:
            return .unexpectedStatus
        }
    }
}
