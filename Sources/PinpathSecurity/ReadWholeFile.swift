import Glibc

/// Reads a whole file, retrying EINTR. Package-wide so that the CLI's other inputs (host lists) fail with the
/// same messages as key files.
/// - Throws: ``SecurityError`` with code `unreadableFile`, naming the path and errno's text.
package func readWholeFile(_ path: String) throws(SecurityError) -> [UInt8] {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else {
        throw SecurityError(.unreadableFile, "\(path): cannot open: \(String(cString: strerror(errno)))")
    }
    defer { close(fd) }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65536)
    while true {
        let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if count == 0 { return bytes }
        if count < 0 {
            if errno == EINTR { continue }
            throw SecurityError(.unreadableFile, "\(path): cannot read: \(String(cString: strerror(errno)))")
        }
        bytes.append(contentsOf: chunk[0..<count])
    }
}
