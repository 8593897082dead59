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
    return try readToEnd(fd, path)
}

/// Reads a whole regular file: for a configuration, which someone wrote and which must say the same thing to
/// every reader. A FIFO, a device, a socket or a directory (named by mistake, or matched by an `include:`
/// pattern) is refused by what it is, without being read and without blocking: a FIFO with no writer would
/// otherwise read as an empty, valid configuration, and `/dev/zero` as 64 MiB of nothing.
/// - Throws: ``FileReadError``: ``FileReadError/Failure/notRegularFile(_:)`` naming what the path is, or the
///   failures of ``readWholeFile(_:)``.
package func readRegularFile(_ path: String) throws(FileReadError) -> [UInt8] {
    // Judged before opening: opening a device can have effects of its own (a tape rewinds, a terminal attaches).
    var status = stat()
    guard stat(path, &status) == 0 else { throw FileReadError(path: path, failure: .open(errno: errno)) }
    if let kind = FileReadError.FileKind(mode: status.st_mode) { throw FileReadError(path: path, failure: .notRegularFile(kind)) }
    let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)
    guard fd >= 0 else { throw FileReadError(path: path, failure: .open(errno: errno)) }
    defer { close(fd) }
    // Again on what was opened: the path may have been replaced in between.
    guard fstat(fd, &status) == 0 else { throw FileReadError(path: path, failure: .open(errno: errno)) }
    if let kind = FileReadError.FileKind(mode: status.st_mode) { throw FileReadError(path: path, failure: .notRegularFile(kind)) }
    _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
    return try readToEnd(fd, path)
}

/// Everything `fd` holds, up to ``maximumReadableFileSize``, retrying EINTR.
private func readToEnd(_ fd: Int32, _ path: String) throws(FileReadError) -> [UInt8] {
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

/// A file could not be read whole: it could not be opened or read, it is larger than
/// ``maximumReadableFileSize``, or (for ``readRegularFile(_:)``) it is not a regular file.
package struct FileReadError: Error, Sendable, CustomStringConvertible {
    /// How reading failed.
    package enum Failure: Sendable, Equatable {
        case open(errno: Int32)
        case read(errno: Int32)
        case tooLarge
        /// The path is something other than a regular file, and was not read.
        case notRegularFile(FileKind)
    }

    /// What a path that is not a regular file is, as `stat` says.
    package enum FileKind: String, Sendable, Equatable {
        case directory = "a directory"
        case fifo = "a FIFO (named pipe)"
        case characterDevice = "a character device"
        case blockDevice = "a block device"
        case socket = "a socket"
        case other = "of another file type"

        /// The kind of `mode`'s file type; `nil` for a regular file.
        init?(mode: mode_t) {
            switch mode & S_IFMT {
            case S_IFREG: return nil
            case S_IFDIR: self = .directory
            case S_IFIFO: self = .fifo
            case S_IFCHR: self = .characterDevice
            case S_IFBLK: self = .blockDevice
            case S_IFSOCK: self = .socket
            default: self = .other
            }
        }
    }

    /// The path as given.
    package let path: String
    package let failure: Failure

    /// `ca.pem: cannot open: No such file or directory`, `conf.d/x.yaml: is a FIFO (named pipe), not a regular file`.
    package var description: String {
        switch failure {
        case .open(let errno): "\(path): cannot open: \(String(cString: strerror(errno)))"
        case .read(let errno): "\(path): cannot read: \(String(cString: strerror(errno)))"
        case .tooLarge:
            "\(path): more than \(maximumReadableFileSize >> 20) MiB; certificate, key and CA files are far smaller "
                + "(is it a device or an endless stream?)"
        case .notRegularFile(let kind): "\(path): is \(kind.rawValue), not a regular file"
        }
    }
}
