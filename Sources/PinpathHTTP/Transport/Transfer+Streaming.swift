import CCurl
import CCurlShims
import Glibc
import PinpathSupport

/// A streamed transfer's head, body, deadlines and end (``Session/stream(_:options:)``), and the progress
/// callback of any transfer. On the engine thread, except where said.
extension Transfer {
    /// What the engine does about a streamed transfer's deadlines at this turn.
    enum Deadline {
        case none
        case at(ContinuousClock.Instant)
        case passed(HTTPError)
    }

    /// Ends the transfer's part in the engine: the last progress report, the head's continuation if the head
    /// never came, the channel's end, and the completion. Called once.
    func complete(_ result: Result<SessionResponse, HTTPError>) {
        reportFinalProgress()
        if let headCompletion {
            self.headCompletion = nil
            headCompletion(result)
        }
        bodyChannel?.finish(result.map { _ in () })
        completion?(result)
        completion = nil
        if let continuation {
            self.continuation = nil
            SanitizerEdge.release(self)  // what this thread set on the transfer, for the task
            continuation.resume(returning: result)
        }
    }

    /// The blank line after a final (non-1xx) response's header section: a redirect hop's progress is not
    /// reported, and a streamed transfer hands its head over now. `false` aborts the transfer (a head from a
    /// connection no verifier admitted).
    func finalHeadArrived() -> Bool {
        let info = TransferInfo(handle: handle)
        let status = info.responseCode
        guard status >= 200 else { return true }
        if options.progress != nil {
            progressSuppressed = options.followRedirects && Self.redirectStatuses.contains(status) && responseHeaders["Location"] != nil
        }
        guard bodyChannel != nil, let headCompletion else { return true }
        self.headCompletion = nil
        if let unadmittedConnection {
            callbackFailure = unadmittedConnection
            headCompletion(.failure(unadmittedConnection))
            return false
        }
        if let refusal = transferCodingRefusal() {
            callbackFailure = refusal
            headCompletion(.failure(refusal))
            return false
        }
        // A stream's bytes are the ones sent, content coding and all: Content-Length counts them.
        if request.method != .head {
            announcedLength = responseHeaders["Content-Length"].flatMap { Int64($0) }
        }
        let now = ContinuousClock.now
        headArrival = now
        lastActivity = now
        headCompletion(.success(response(info)))
        return true
    }

    private static let redirectStatuses: Set<Int> = [301, 302, 303, 307, 308]

    /// A stream's head whose `Transfer-Encoding` names a coding other than `chunked`: libcurl 7.88 decodes
    /// transfer codings whatever `CURLOPT_ACCEPT_ENCODING` says, a whole read at once, so a paused stream would
    /// hold 16 KiB of a gzip bomb as 16 MiB. Refused before any body byte is handed over; the field is quoted
    /// escaped. `send` keeps libcurl's decoding, bounded after it by `maximumBodySize`.
    private func transferCodingRefusal() -> HTTPError? {
        let fields = responseHeaders.values(for: "Transfer-Encoding")
        // Empty list elements are allowed (RFC 9110 §5.6.1); anything else but `chunked` is a coding.
        let codings = fields.flatMap { $0.split(separator: ",") }.map { Self.trimmingSpace($0).lowercased() }
        guard codings.contains(where: { !$0.isEmpty && $0 != "chunked" }) else { return nil }
        let field = UntrustedText.escaped(fields.joined(separator: ", "), limit: Self.quotedFieldLimit)
        return HTTPError(
            .protocolError,
            "\(description): the server sent its body with a transfer coding (\(field)) that a stream does not decode "
                + "(send decodes it, within maximumBodySize)",
            response: nil)
    }

    private static func trimmingSpace(_ text: Substring) -> Substring {
        var text = text
        while text.first == " " || text.first == "\t" { text.removeFirst() }
        while text.last == " " || text.last == "\t" { text.removeLast() }
        return text
    }

    /// A streamed body's bytes, into the channel: `CURL_WRITEFUNC_PAUSE` when the consumer is behind (libcurl
    /// keeps them and writes them again when resumed).
    func streamBody(_ channel: BodyChannel, _ data: UnsafeMutablePointer<CChar>, _ count: Int) -> Int {
        let accepted = data.withMemoryRebound(to: UInt8.self, capacity: count) {
            channel.offer(UnsafeBufferPointer(start: $0, count: count))
        }
        guard accepted else {
            pausedForConsumer = true
            return Int(CURL_WRITEFUNC_PAUSE)
        }
        bodyBytesAccepted += Int64(count)
        // libcurl 7.88 reads no further than the announced length and ends well: bytes already waiting
        // behind it are the server sending more than it said. Refused (a write error), which also closes the
        // connection instead of leaving those bytes to be read as the next response.
        if bodyBytesAccepted == announcedLength, TransferInfo(handle: handle).hasUnreadBytes(sockets: streamSockets) {
            callbackFailure = excessFailure()
            return 0
        }
        return count
    }

    /// The consumer took the buffered bytes: libcurl goes on (and may write the bytes it kept at once).
    func resumeForConsumer(now: ContinuousClock.Instant) {
        pausedForConsumer = false
        lastActivity = now  // the stall clock starts again from here
        _ = curl_easy_pause(handle, pinpath_curl_pause_continue)
    }

    /// The head deadline until the head, then the stall and body deadlines (the stall one only while the
    /// transfer is not paused for its consumer).
    func nextDeadline(now: ContinuousClock.Instant) -> Deadline {
        guard let headArrival else {
            guard let headDeadline else { return .none }
            if now >= headDeadline {
                return .passed(HTTPError(.timedOut, "\(description): no response within \(options.timeout)"))
            }
            return .at(headDeadline)
        }
        if bodyBytesAccepted != bodyBytesSeen {
            bodyBytesSeen = bodyBytesAccepted
            lastActivity = now
        }
        var earliest: ContinuousClock.Instant?
        if let bodyTimeout = options.bodyTimeout {
            let deadline = headArrival + bodyTimeout
            if now >= deadline {
                return .passed(HTTPError(.timedOut, "\(description): the response body took longer than \(bodyTimeout)"))
            }
            earliest = deadline
        }
        if !pausedForConsumer, let lastActivity {
            let deadline = lastActivity + options.stallTimeout
            if now >= deadline {
                return .passed(
                    HTTPError(
                        .timedOut,
                        "\(description): the server sent no byte of the response body for \(options.stallTimeout) (stalled after \(bodyBytesAccepted) bytes)"
                    ))
            }
            earliest = min(earliest ?? deadline, deadline)
        }
        return earliest.map { .at($0) } ?? .none
    }

    /// libcurl's informational texts (streamed transfers only): when bytes past an HTTP/1.1 body's
    /// `Content-Length` came in the same read as the head, libcurl 7.88 drops them and ends well, saying only this.
    func readDebugText(_ type: curl_infotype, _ data: UnsafeMutablePointer<CChar>, _ count: Int) -> Int32 {
        guard type == CURLINFO_TEXT, count >= Self.excessText.count else { return 0 }
        if memcmp(data, Self.excessText, Self.excessText.count) == 0 { excessFound = true }
        return 0
    }

    private static let excessText = Array("Excess found".utf8)

    /// The failure of a body that went on past its `Content-Length`. The field is the server's text (libcurl
    /// reads its leading digits and ignores the rest): escaped and cut.
    func excessFailure() -> HTTPError {
        let announced =
            responseHeaders["Content-Length"].map {
                "the \(UntrustedText.escaped($0, limit: Self.quotedFieldLimit)) bytes it announced (Content-Length)"
            } ?? "the length it announced"
        return HTTPError(
            .protocolError, "\(description): the server sent more than \(announced); the body is not what it said", response: nil)
    }

    /// Room for any length in digits or a few coding names, not for a field's worth of a hostile server's text.
    private static let quotedFieldLimit = 40

    /// libcurl's transfer info callback, throttled to one report per 100 ms on a monotonic clock.
    func reportProgress(received: curl_off_t, sent: curl_off_t) -> Int32 {
        guard let progress = options.progress, !progressSuppressed else { return 0 }
        let now = ContinuousClock.now
        if let lastProgress, now - lastProgress < .milliseconds(100) { return 0 }
        lastProgress = now
        progress(progressValue(received: Int64(received), sent: Int64(sent)))
        return 0
    }

    /// The last report, whether the transfer completed or not.
    private func reportFinalProgress() {
        guard let progress = options.progress, !progressSuppressed else { return }
        var received: curl_off_t = 0
        var sent: curl_off_t = 0
        _ = pinpath_curl_getinfo_off_t(handle, CURLINFO_SIZE_DOWNLOAD_T, &received)
        _ = pinpath_curl_getinfo_off_t(handle, CURLINFO_SIZE_UPLOAD_T, &sent)
        progress(progressValue(received: Int64(received), sent: Int64(sent)))
    }

    private func progressValue(received: Int64, sent: Int64) -> TransferProgress {
        var expected: Int64?
        if headersComplete {
            var length: curl_off_t = -1
            if pinpath_curl_getinfo_off_t(handle, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length) == CURLE_OK, length >= 0 {
                expected = Int64(length)
            }
        }
        return TransferProgress(
            sentBytes: sent, expectedSentBytes: bodySource.map { Int64($0.count) }, receivedBytes: received,
            expectedReceivedBytes: expected)
    }
}
