import Glibc

/// The most `readWholeFile` reads: far more than any certificate, key, CA bundle or host list, and little
/// enough that a device (`/dev/zero`) or an endless pipe named by mistake fails with a message instead of
/// taking all the memory.
package let maximumReadableFileSize = 64 << 20

/// Reads a whole file, retrying EINTR. Shared so that every input file (keys, certificates, CRLs, host lists) fails with the
/// same messages. Pipes work (`pinpath pins /dev/stdin`, `--file <(…)`), and a FIFO with no
/// writer reads as empty instead of blocking in `open`.
/// - Throws: ``FileReadError`` naming the path and errno's text, or saying that the file is larger than
///   ``maximumReadableFileSize``.
package func readWholeFile(_ path: String) throws(FileReadError) -> [UInt8] {
    // O_NONBLOCK only for open (a FIFO's open waits for a writer); reads block as usual once it is cleared.
    let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
    guard fd >= 0 else {
        throw FileReadError(path: path, failure: .open(errno: errno))
    }
    defer { close(fd) }
    _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65536)
    while true {
        let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if count == 0 { return bytes }
        if count < 0 {
            if errno == EINTR { continue }
            throw FileReadError(path: path, failure: .read(errno: errno))
        }
        guard bytes.count + count <= maximumReadableFileSize else {
            throw FileReadError(path: path, failure: .tooLarge)
        }
        bytes.append(contentsOf: chunk[0..<count])
    }
}

/// A file could not be read whole: it could not be opened or read, or it is larger than
/// ``maximumReadableFileSize``.
public struct FileReadError: Error, Sendable, CustomStringConvertible {
    /// How reading failed.
    public enum Failure: Sendable, Equatable {
        case open(errno: Int32)
        case read(errno: Int32)
        case tooLarge
    }

    /// The path as given.
    public let path: String
    public let failure: Failure

    /// `ca.pem: cannot open: No such file or directory`.
    public var description: String {
        switch failure {
        case .open(let errno): "\(path): cannot open: \(String(cString: strerror(errno)))"
        case .read(let errno): "\(path): cannot read: \(String(cString: strerror(errno)))"
        case .tooLarge:
            "\(path): more than \(maximumReadableFileSize >> 20) MiB; certificate, key and CA files are far smaller "
                + "(is it a device or an endless stream?)"
        }
    }
}
