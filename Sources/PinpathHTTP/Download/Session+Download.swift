import PinpathSupport
import Synchronization

extension Session {
    /// Downloads a response body to a file: streamed to a partial file beside `destination`, synced, and renamed
    /// into place only once complete, of the announced length and (when given) the expected SHA-256. A failed or
    /// interrupted download never leaves a partial file at `destination` and never replaces a file already
    /// there; the partial file stays beside it (`.<name>.pinpath-partial`) for ``DownloadOptions/resume`` when
    /// it can be resumed (the response had a strong validator and a length), and is removed otherwise. A
    /// partial file or record that is not this user's own (another user's, a hard link, readable by others)
    /// is never resumed nor written.
    ///
    /// Every transfer, a resumption or a reconnection after a drop included, is a request like
    /// ``stream(_:options:)``'s: the reachability gate, then the security policy in the TLS handshake, redirects
    /// each gated again. A transfer that fails before its head (a reconnection to a server the policy rejects)
    /// fails the download at once; nothing it sent is written. A resumption asks `Range: bytes=N-` with
    /// `If-Range` set to the validator the partial file was started under; a `206` is appended only when its
    /// `Content-Range` is exactly the bytes asked for, a `200` (the range ignored, or the file changed) starts
    /// again from the first byte. The request goes with `Accept-Encoding: identity`: ranges are of the stored
    /// bytes.
    ///
    /// The file is written on the calling task (blocking writes); `fsync` at the end costs what the disk takes.
    /// - Parameters:
    ///   - request: a GET (a HEAD has no body to download).
    ///   - destination: the file to create or replace. It, its partial file and record must each be absent or a
    ///     regular file, and its directory must exist and be writable: checked before anything is sent.
    ///   - options: as for ``send(_:options:)``; ``RequestOptions/timeout`` bounds each transfer up to its head.
    ///   - download: resume, the expected digest, reconnections, the whole download's time limit, progress.
    /// - Returns: the file's path, length, digest, and how it was put together.
    /// - Throws: ``HTTPError``: `output` for the destination (not a regular file, a directory missing or not
    ///   writable, another user's partial file that cannot be removed, a write that failed: a full disk names
    ///   `ENOSPC`); `timedOut` past ``DownloadOptions/timeout``; `unexpectedStatus` (with the response head)
    ///   for a status other than 2xx, nothing written; `invalidResponse` for a part that is not the one asked
    ///   for (the partial file kept as it was); `protocolError` for a body longer or shorter than announced;
    ///   `digestMismatch`; `usage` for a HEAD request or an expected digest that is not 64 hexadecimal digits;
    ///   and what ``stream(_:options:)`` throws.
    public func download(
        _ request: SessionRequest, to destination: String, options: RequestOptions? = nil, download: DownloadOptions = DownloadOptions()
    ) async throws(HTTPError) -> DownloadResult {
        let label = "\(request.method) \(request.displayURL)"
        guard request.method != .head else {
            throw HTTPError(.usage, "\(label): a HEAD response has no body to download (use GET)")
        }
        // RFC 9110 defines Range for GET alone; another request (a PUT, or any with a body: a file) is not replayed.
        guard !download.resume || (request.method == .get && request.body == nil) else {
            throw HTTPError(.usage, "\(label): only a GET without a body can be resumed (Range applies to GET alone)")
        }
        var expectedDigest: String?
        if let given = download.expectedSHA256 {
            guard let normalized = SHA256Digest.normalized(given) else {
                throw HTTPError(.usage, "the expected SHA-256 \"\(UntrustedText.escaped(given, limit: 80))\" is not 64 hexadecimal digits")
            }
            expectedDigest = normalized
        }
        let target = try DownloadDestination(checking: destination)
        var download = DownloadRun(session: self, request: request, target: target, label: label, options: download)
        return try await download.run(options: options ?? configuration.defaultOptions, expectedDigest: expectedDigest)
    }
}

/// One download's state across its transfers: the partial file, its record, the running digest.
private struct DownloadRun {
    let session: Session
    let request: SessionRequest
    let target: DownloadDestination
    let label: String
    let options: DownloadOptions
    /// What the progress callback adds to a transfer's own count: the bytes already in the partial file.
    let progressBase = ProgressBase()
    /// When ``DownloadOptions/timeout`` runs out, if one was given.
    let deadline: ContinuousClock.Instant?

    init(session: Session, request: SessionRequest, target: DownloadDestination, label: String, options: DownloadOptions) {
        self.session = session
        self.request = request
        self.target = target
        self.label = label
        self.options = options
        deadline = options.timeout.map { ContinuousClock.now + $0 }
    }

    /// The destination as messages name it.
    private var shownDestination: String { UntrustedText.escaped(target.path) }

    mutating func run(options requestOptions: RequestOptions, expectedDigest: String?) async throws(HTTPError) -> DownloadResult {
        let url = request.url.absoluteString
        var partial: PartialFile
        var record: PartialRecord?
        if options.resume, let existing = try target.openPartialForResuming(), let saved = PartialRecord.read(target.recordPath),
            saved.matches(url: url), existing.length > 0, existing.length <= saved.length
        {
            (partial, record) = (existing, saved)
        } else {
            partial = try target.createPartial()
        }
        // Only when asked for: SHA-256 costs about 0.5 s of CPU per GiB here, as much as the transfer itself.
        var digest = expectedDigest != nil || options.computesSHA256 ? SHA256Digest() : nil
        if let digest { try partial.digestContents(into: digest) }
        var resumedFrom: Int64?
        var restarted = false
        var reconnections = 0
        var askedAgainFromStart = false
        var lastHead: SessionResponse
        transfers: while true {
            let offset = partial.length
            let streamed: StreamedResponse
            do throws(HTTPError) {
                streamed = try await session.stream(
                    transferRequest(offset: offset, validator: record?.validator),
                    options: try transferOptions(requestOptions, offset: offset))
            } catch {
                throw failure(error, partial: partial, record: record)
            }
            lastHead = streamed.head
            let decision = ResumeDecision.deciding(
                offset: offset, status: streamed.head.statusCode, contentRange: streamed.head.headers["Content-Range"],
                contentLength: streamed.head.headers["Content-Length"].flatMap { Int64($0) }, expectedLength: record?.length)
            let length: Int64?
            switch decision {
            case .unexpectedStatus:
                streamed.body.cancel()
                var error = HTTPError(
                    .unexpectedStatus, "\(label): status \(streamed.head.statusCode) is not acceptable (200-299)", response: streamed.head)
                error.remoteAddress = streamed.head.remoteAddress
                throw failure(error, partial: partial, record: record)
            case .mismatchedRange(let reason):
                streamed.body.cancel()
                throw failure(HTTPError(.invalidResponse, "\(label): \(reason)", response: streamed.head), partial: partial, record: record)
            case .retryFromStart:
                streamed.body.cancel()
                guard !askedAgainFromStart else {
                    throw failure(
                        HTTPError(.invalidResponse, "\(label): 416 again for a request from the first byte"), partial: partial,
                        record: record)
                }
                askedAgainFromStart = true
                try restart(&partial, &digest, &record)
                restarted = true
                continue transfers
            case .complete:
                streamed.body.cancel()
                resumedFrom = resumedFrom ?? offset
                break transfers
            case .append(let total):
                length = total
                if resumedFrom == nil { resumedFrom = offset }
            case .writeFromStart(let announced, let wasRestart):
                length = announced
                if partial.length > 0 { try restart(&partial, &digest, &record) }
                restarted = restarted || wasRestart
                if wasRestart { resumedFrom = nil }
                record =
                    request.method != .get || request.body != nil
                    ? nil : PartialRecord(url: url, headers: streamed.head.headers, length: announced)
                do throws(HTTPError) {
                    if let record { try record.write(to: target.recordPath) } else { target.removeRecord() }
                } catch {
                    streamed.body.cancel()
                    throw failure(error, partial: partial, record: record)
                }
            }
            progressBase.set(partial.length)
            switch await receive(streamed.body, into: partial, digest: digest, length: length) {
            case .complete:
                break transfers
            case .failed(let error):
                throw failure(error, partial: partial, record: record)
            case .dropped(let error):
                // A drop part-way through a body whose end is known and whose validator lets it be resumed.
                guard record != nil, let length, partial.length < length, reconnections < options.reconnects else {
                    throw failure(error, partial: partial, record: record)
                }
                if let expired = timeExpired() { throw failure(expired, partial: partial, record: record) }
                do throws(HTTPError) { try partial.sync() } catch { throw failure(error, partial: partial, record: record) }
                reconnections += 1
            }
        }
        let sha256 = digest?.finish()
        if let expectedDigest, let sha256, sha256 != expectedDigest {
            // A whole body with the wrong digest is of no use to a resume: it goes.
            target.removePartial()
            throw HTTPError(
                .digestMismatch,
                "\(label): the body's SHA-256 is \(sha256), not the expected \(expectedDigest); \(shownDestination) was left as it was")
        }
        do throws(HTTPError) { try target.commit(partial) } catch { throw failure(error, partial: partial, record: record) }
        var head = lastHead
        head.body = []
        return DownloadResult(
            path: target.path, bytes: partial.length, sha256: sha256, resumedFrom: resumedFrom, restarted: restarted,
            reconnections: reconnections, response: head)
    }

    /// The request of a transfer from `offset`: the caller's headers but its own `Range`, `If-Range` and
    /// `Accept-Encoding`, which a download sets.
    private func transferRequest(offset: Int64, validator: String?) -> SessionRequest {
        var transfer = request
        var headers = HeaderFields()
        for (name, value) in request.headers where !["range", "if-range", "accept-encoding"].contains(name.lowercased()) {
            headers.add(name: name, value: value)
        }
        headers.add(name: "Accept-Encoding", value: "identity")
        if offset > 0, let validator {
            headers.add(name: "Range", value: "bytes=\(offset)-")
            headers.add(name: "If-Range", value: validator)
        }
        transfer.headers = headers
        return transfer
    }

    /// The caller's options, with progress counted over the whole file, and each limit cut to what is left of
    /// ``DownloadOptions/timeout``: the head's and the connection's, and the body's (from the head's arrival).
    /// - Throws: ``HTTPError`` `timedOut` when nothing is left.
    private func transferOptions(_ requestOptions: RequestOptions, offset: Int64) throws(HTTPError) -> RequestOptions {
        var transferOptions = requestOptions
        if let deadline {
            let left = deadline - ContinuousClock.now
            if let expired = timeExpired() { throw expired }
            transferOptions.timeout = min(transferOptions.timeout, left)
            transferOptions.connectTimeout = min(transferOptions.connectTimeout, left)
            transferOptions.bodyTimeout = min(transferOptions.bodyTimeout ?? left, left)
        }
        progressBase.set(offset)
        if let report = options.progress {
            let base = progressBase
            transferOptions.progress = { progress in
                // The expected total is the server's Content-Length: one near Int64.max must not trap the sum.
                let done = base.value
                func total(_ count: Int64) -> Int64? {
                    let (sum, overflow) = done.addingReportingOverflow(count)
                    return overflow ? nil : sum
                }
                report(
                    DownloadProgress(
                        bytes: total(progress.receivedBytes) ?? .max, expectedBytes: progress.expectedReceivedBytes.flatMap(total)))
            }
        }
        return transferOptions
    }

    /// The error of a download past its ``DownloadOptions/timeout``, or `nil` while time is left.
    private func timeExpired() -> HTTPError? {
        guard let deadline, let limit = options.timeout, ContinuousClock.now >= deadline else { return nil }
        return HTTPError(.timedOut, "\(label): the download took longer than its time limit, \(limit)")
    }

    /// Empties the partial file and forgets its record: the download starts from the first byte.
    private func restart(_ partial: inout PartialFile, _ digest: inout SHA256Digest?, _ record: inout PartialRecord?) throws(HTTPError) {
        do throws(HTTPError) { try partial.truncate() } catch { throw failure(error, partial: partial, record: record) }
        if digest != nil { digest = SHA256Digest() }
        record = nil
        target.removeRecord()
    }

    /// How a transfer's body ended.
    private enum BodyOutcome {
        /// Every byte announced (or, with no length announced, the stream's end).
        case complete
        /// The transfer broke off (the connection dropped, a stall): it may be resumed.
        case dropped(HTTPError)
        /// A failure that a resumption cannot mend: the disk, more bytes than announced.
        case failed(HTTPError)
    }

    /// Appends the body to the partial file and the digest, refusing a byte past `length`.
    private func receive(_ body: ResponseBodyStream, into partial: PartialFile, digest: SHA256Digest?, length: Int64?) async -> BodyOutcome
    {
        do throws(HTTPError) {
            for try await chunk in body {
                // The body's own limit was set when the transfer started, so its head's time comes on top:
                // a slow body is stopped here at the download's deadline.
                if let expired = timeExpired() {
                    body.cancel()
                    return .failed(expired)
                }
                if let length, partial.length + Int64(chunk.count) > length {
                    body.cancel()
                    return .failed(HTTPError(.protocolError, "\(label): the server sent more than the \(length) bytes it announced"))
                }
                let writeFailure: HTTPError? = chunk.withUnsafeBytes { bytes in
                    do throws(HTTPError) {
                        try partial.append(bytes)
                        digest?.update(bytes)
                        return nil
                    } catch {
                        return error
                    }
                }
                if let writeFailure {
                    body.cancel()
                    return .failed(writeFailure)
                }
            }
        } catch {
            if let expired = timeExpired() { return .failed(expired) }
            switch error.code {
            case .protocolError where length.map({ partial.length >= $0 }) ?? false:
                // The whole length arrived and the server went on: more than it announced.
                return .failed(error)
            case .protocolError, .transferFailed, .timedOut, .connectFailed:
                return .dropped(error)
            default:
                return .failed(error)
            }
        }
        if let length, partial.length != length {
            return .dropped(HTTPError(.protocolError, "\(label): the body ended after \(partial.length) of the \(length) bytes announced"))
        }
        return .complete
    }

    /// `error`, its message saying what became of the destination and the partial file. A non-empty partial
    /// file is synced and kept for a resumption only when it can be resumed: its `record` exists (the response
    /// had a strong validator and a length). Otherwise, or when the file itself failed (a full disk: what was
    /// written would only hold space others need), it is removed.
    private func failure(_ error: HTTPError, partial: PartialFile, record: PartialRecord?) -> HTTPError {
        let kept: String
        if error.code != .output, record != nil, partial.length > 0, (try? partial.sync()) != nil {
            kept = "; \(partial.length) bytes are kept in \(UntrustedText.escaped(target.partialPath)) for a resumption"
        } else {
            target.removePartial()
            kept = ""
        }
        var failure = error
        failure.message = "\(error.message); \(shownDestination) was left as it was\(kept)"
        return failure
    }
}

/// The bytes a transfer's progress starts from, read on libcurl's thread and set on the download's task.
private final class ProgressBase: Sendable {
    private let bytes = Atomic<Int64>(0)
    var value: Int64 { bytes.load(ordering: .relaxed) }
    func set(_ value: Int64) { bytes.store(value, ordering: .relaxed) }
}
