/// How far a transfer has got (``RequestOptions/progress``): bytes sent and received, with what is expected
/// when it is known.
public struct TransferProgress: Sendable, Equatable {
    /// Request body bytes sent so far.
    public var sentBytes: Int64
    /// The request body's length; `nil` when there is none or it is unknown.
    public var expectedSentBytes: Int64?
    /// Body bytes of the final response received so far (as they came over the wire; a redirect hop's are not
    /// counted).
    public var receivedBytes: Int64
    /// The final response's `Content-Length`; `nil` when it is unknown (chunked, or no head yet).
    public var expectedReceivedBytes: Int64?

    /// Creates a progress value.
    public init(sentBytes: Int64, expectedSentBytes: Int64?, receivedBytes: Int64, expectedReceivedBytes: Int64?) {
        self.sentBytes = sentBytes
        self.expectedSentBytes = expectedSentBytes
        self.receivedBytes = receivedBytes
        self.expectedReceivedBytes = expectedReceivedBytes
    }
}
