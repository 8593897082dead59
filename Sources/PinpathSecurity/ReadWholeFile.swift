import Glibc

/// The most `readWholeFile` reads: far more than any certificate, key, CA bundle or host list, and little
/// enough that a device (`/dev/zero`) or an endless pipe named by mistake fails with a message instead of
/// taking all the memory.
package let maximumReadableFileSize = 64 << 20

/// Reads a whole file, retrying EINTR. Package-wide so that the CLI's other inputs (host lists) fail with the
/// same messages as key files. Pipes work (`pinpath pins /dev/stdin`, `--file <(…)`), and a FIFO with no
/// writer reads as empty instead of blocking in `open`.
/// - Throws: ``SecurityError`` with code `unreadableFile`, naming the path and errno's text, or saying that
///   the file is larger than ``maximumReadableFileSize``.
package func readWholeFile(_ path: String) throws(SecurityError) -> [UInt8] {
    // O_NONBLOCK only for open (a FIFO's open waits for a writer); reads block as usual once it is cleared.
    let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
    guard fd >= 0 else {
        throw SecurityError(.unreadableFile, "\(path): cannot open: \(String(cString: strerror(errno)))")
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
            throw SecurityError(.unreadableFile, "\(path): cannot read: \(String(cString: strerror(errno)))")
        }
        guard bytes.count + count <= maximumReadableFileSize else {
            throw SecurityError(
                .unreadableFile,
                "\(path): more than \(maximumReadableFileSize >> 20) MiB; certificate, key and CA files are far smaller (is it a device or an endless stream?)")
        }
        bytes.append(contentsOf: chunk[0..<count])
    }
}
