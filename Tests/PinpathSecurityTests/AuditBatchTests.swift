import FoundationEssentials
import PinpathSecurity
import Testing

@Suite("TLSAuditBatch and the one-off inputs of audit and verify")
struct AuditBatchTests {
    @Test("Results come in the order given, a bounded number at a time, with progress from 0 to all")
    func orderedResults() async throws {
        // Closed ports on the loopback: each audit ends at once with "connection refused".
        let endpoints = (1...7).map { TLSEndpoint(host: "127.0.0.1", port: $0) }
        let options = TLSAudit.Options(policy: try SecurityPolicy.oneOff(), trustStore: try TrustStore(certificates: []))
        let batch = TLSAuditBatch(endpoints, concurrency: 3) { _ in options }
        var delivered: [TLSEndpoint] = []
        var progress: [Int] = []
        await batch.run(progress: { progress.append($0) }, deliver: { audit in delivered.append(audit.endpoint) })
        #expect(delivered == endpoints)
        #expect(progress.first == 0 && progress.last == endpoints.count && progress == progress.sorted())
    }

    @Test("An error from deliver ends the batch and is rethrown")
    func deliverFails() async throws {
        struct Stop: Error {}
        let endpoints = (1...5).map { TLSEndpoint(host: "127.0.0.1", port: $0) }
        let options = TLSAudit.Options(policy: try SecurityPolicy.oneOff(), trustStore: try TrustStore(certificates: []))
        var count = 0
        await #expect(throws: Stop.self) {
            try await TLSAuditBatch(endpoints, concurrency: 2) { _ in options }.run { _ in
                count += 1
                if count == 2 { throw Stop() }
            }
        }
        #expect(count == 2)
    }

    @Test(
        "--at's forms: a date, RFC 3339, @UNIX-SECONDS; anything else is refused naming the text",
        arguments: [
            ("2026-01-31", 1_769_817_600 as Int64?), ("2026-01-31T12:00:00Z", 1_769_860_800), ("@86400", 86_400),
            ("next tuesday", nil), ("2026-13-45", nil),
        ])
    func verificationTime(text: String, seconds: Int64?) throws {
        if let seconds {
            #expect(try VerificationTime(parsing: text).date == Date(timeIntervalSince1970: TimeInterval(seconds)))
        } else {
            #expect(throws: SecurityError.self) { try VerificationTime(parsing: text) }
        }
    }

    @Test("A one-off policy: the mode follows from what is given, and one pin is enough")
    func oneOffPolicy() throws {
        let pin = try SPKIPin(parsing: "sha256/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=")
        #expect(try SecurityPolicy.oneOff().mode == .none)
        #expect(try SecurityPolicy.oneOff(pins: [pin]).mode == .publicKey)
        #expect(try SecurityPolicy.oneOff(pins: [pin]).pins == [pin])
    }
}
