import CLinuxShims
import CNetlink
import Glibc

/// Reads many netlink datagrams per system call (`recvmmsg`) into a buffer allocated once, and walks the
/// netlink messages inside them. Pages of the buffer are touched only as datagrams land in them.
final class DatagramReader {
    private let slotSize: Int
    private let slots: Int
    private let buffer: UnsafeMutableRawBufferPointer
    private var lengths: [Int]

    init(slots: Int, slotSize: Int) {
        self.slots = slots
        self.slotSize = slotSize
        buffer = .allocate(byteCount: slots * slotSize, alignment: 16)
        lengths = Array(repeating: 0, count: slots)
    }

    deinit { buffer.deallocate() }

    enum Outcome {
        /// Messages were read; `more` when every slot filled (more may be waiting).
        case read(more: Bool)
        /// Nothing was waiting.
        case empty
        /// The kernel dropped messages (ENOBUFS), or one did not fit: events may be lost.
        case lost
        case failed(errno: Int32)
    }

    /// Receives what is waiting on `fd` and calls `body` with each netlink message header, in order.
    /// - Parameter wait: block until at least one datagram arrives, instead of returning `.empty`.
    func receive(from fd: Int32, wait: Bool = false, _ body: (UnsafePointer<nlmsghdr>) -> Void) -> Outcome {
        let base = buffer.baseAddress!.assumingMemoryBound(to: UInt8.self)
        let count = lengths.withUnsafeMutableBufferPointer {
            pinpath_receive_datagrams(fd, base, slotSize, UInt32(slots), $0.baseAddress, wait ? 1 : 0)
        }
        if count < 0 {
            switch errno {
            case EAGAIN: return .empty
            case ENOBUFS: return .lost
            case let error: return .failed(errno: error)
            }
        }
        var truncated = false
        for index in 0..<Int(count) {
            guard lengths[index] >= 0 else {  // SIZE_MAX: did not fit
                truncated = true
                continue
            }
            Self.walk(buffer.baseAddress! + index * slotSize, length: lengths[index], body)
        }
        return truncated ? .lost : .read(more: Int(count) == slots)
    }

    /// Visits each complete `nlmsghdr` in one datagram (NLMSG_OK / NLMSG_NEXT).
    private static func walk(_ start: UnsafeMutableRawPointer, length: Int, _ body: (UnsafePointer<nlmsghdr>) -> Void) {
        let headerSize = MemoryLayout<nlmsghdr>.size
        var offset = 0
        while offset + headerSize <= length {
            let header = (start + offset).assumingMemoryBound(to: nlmsghdr.self)
            let messageLength = Int(header.pointee.nlmsg_len)
            guard messageLength >= headerSize, offset + messageLength <= length else { return }
            body(header)
            offset += (messageLength + 3) & ~3
        }
    }
}
