import Testing

@testable import PinpathHTTP

/// The pure parts of a download: `Content-Range`, the resume decision table, the digest, the partial record.
@Suite("Download decisions")
struct DownloadDecisionTests {
    @Test(
        "Content-Range: the two forms a download accepts, parsed strictly",
        arguments: [
            ("bytes 100-199/200", ContentRange(range: 100...199, length: 200)),
            ("BYTES 0-0/1", ContentRange(range: 0...0, length: 1)),
            ("  bytes  5-9/10 ", ContentRange(range: 5...9, length: 10)),
            ("bytes */4096", ContentRange(range: nil, length: 4096)),
            ("bytes 100-199/*", nil), ("bytes 100-199/150", nil), ("bytes 200-100/300", nil), ("bytes -5/10", nil),
            ("bytes +1-5/10", nil), ("bytes 1 -5/10", nil), ("items 1-5/10", nil), ("bytes 1-5/0", nil), ("", nil),
            ("bytes 0-99999999999999999999/100000000000000000000", nil), ("bytes 1-5/10/20", nil), ("bytes 1-5", nil),
        ] as [(String, ContentRange?)])
    func contentRange(text: String, expected: ContentRange?) {
        #expect(ContentRange(parsing: text) == expected, "\(text)")
    }

    @Test(
        "The resume decision table",
        arguments: [
            // offset, status, Content-Range, Content-Length, expected length → decision
            (0, 200, nil, 1000, nil, ResumeDecision.writeFromStart(length: 1000, restarted: false)),
            (0, 200, nil, nil, nil, .writeFromStart(length: nil, restarted: false)),
            (0, 206, "bytes 0-9/10", 10, nil, .mismatchedRange("a 206 partial response to a request for the whole file")),
            (500, 206, "bytes 500-999/1000", 500, 1000, .append(length: 1000)),
            (500, 206, "bytes 500-999/1000", nil, nil, .append(length: 1000)),
            (
                500, 206, "bytes 501-999/1000", 499, 1000,
                .mismatchedRange("Content-Range \"bytes 501-999/1000\" is not the bytes asked for (bytes=500-)")
            ),
            (
                500, 206, "bytes 500-998/1000", 499, 1000,
                .mismatchedRange("Content-Range \"bytes 500-998/1000\" is not the bytes asked for (bytes=500-)")
            ),
            (
                500, 206, "bytes 500-1999/2000", 1500, 1000,
                .mismatchedRange("Content-Range \"bytes 500-1999/2000\" gives a length of 2000, the partial file was started for 1000")
            ),
            (
                500, 206, "bytes 500-999/1000", 400, 1000,
                .mismatchedRange("Content-Length 400 does not match Content-Range \"bytes 500-999/1000\"")
            ),
            (500, 206, nil, 500, 1000, .mismatchedRange("a 206 partial response without Content-Range")),
            (500, 206, "bytes */1000", 0, 1000, .mismatchedRange("Content-Range \"bytes */1000\" is not bytes FIRST-LAST/LENGTH")),
            (500, 200, nil, 1000, 1000, .writeFromStart(length: 1000, restarted: true)),
            (1000, 416, "bytes */1000", 0, 1000, .complete),
            (1000, 416, "bytes */2000", 0, 1000, .retryFromStart),
            (1000, 416, nil, 0, 1000, .retryFromStart),
            (500, 404, nil, 10, 1000, .unexpectedStatus),
            (0, 416, "bytes */0", 0, nil, .unexpectedStatus),
            (0, 301, nil, 0, nil, .unexpectedStatus),
        ] as [(Int64, Int, String?, Int64?, Int64?, ResumeDecision)])
    func decision(
        offset: Int64, status: Int, contentRange: String?, contentLength: Int64?, expectedLength: Int64?, expected: ResumeDecision
    ) {
        let decided = ResumeDecision.deciding(
            offset: offset, status: status, contentRange: contentRange, contentLength: contentLength, expectedLength: expectedLength)
        #expect(decided == expected)
    }

    @Test("SHA-256 over pieces is the digest of the whole (FIPS 180-2 vectors), and expected digests are normalised")
    func digest() {
        let empty = SHA256Digest()
        #expect(empty.finish() == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        let pieces = SHA256Digest()
        for piece in ["a", "bc"] { Array(piece.utf8).withUnsafeBytes { pieces.update($0) } }
        #expect(pieces.finish() == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        let upper = "BA7816BF8F01CFEA414140DE5DAE2223B00361A396177A9CB410FF61F20015AD"
        #expect(DownloadOptions.normalizedSHA256(upper) == upper.lowercased())
        for bad in ["", String(upper.dropLast()), upper + "0", String(upper.dropLast()) + "g", "sha256:" + upper] {
            #expect(DownloadOptions.normalizedSHA256(bad) == nil, "\(bad)")
        }
    }

    @Test("A partial record needs a strong validator and a length; a weak ETag falls back to Last-Modified")
    func partialRecord() {
        let url = "https://example.test/file"
        #expect(PartialRecord(url: url, headers: ["ETag": "\"abc\""], length: 10)?.validator == "\"abc\"")
        #expect(PartialRecord(url: url, headers: ["ETag": "W/\"abc\""], length: 10) == nil)
        let lastModified = "Wed, 21 Oct 2015 07:28:00 GMT"
        #expect(
            PartialRecord(url: url, headers: ["ETag": "W/\"abc\"", "Last-Modified": lastModified], length: 10)?.validator == lastModified)
        #expect(PartialRecord(url: url, headers: ["ETag": "\"abc\""], length: nil) == nil)
        #expect(PartialRecord(url: url, headers: ["ETag": "\"a\u{7}b\""], length: 10) == nil)
        #expect(PartialRecord(url: url, headers: ["ETag": "\"" + String(repeating: "x", count: 600) + "\""], length: 10) == nil)
        let record = PartialRecord(url: url, headers: ["ETag": "\"abc\""], length: 10)
        #expect(record?.matches(url: url) == true)
        #expect(record?.matches(url: url + "?other") == false)
    }
}
