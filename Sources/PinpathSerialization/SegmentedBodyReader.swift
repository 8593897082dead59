import Glibc
import PinpathHTTP

/// One pass over a ``SegmentedBodySource``, for libcurl's read callback: fills its buffer from the
/// in-memory segments and from each file in turn, one file open at a time. The one file reader of uploads:
/// a multipart form's files and a whole-file body (a single file segment) alike.
final class SegmentedBodyReader: BodyReader {
    private let segments: [SegmentedBodySource.Segment]
    private var segmentIndex = 0
    /// Bytes of the current segment already produced.
    private var offset = 0
    /// The current file's descriptor, or -1.
    private var fd: Int32 = -1

    init(segments: [SegmentedBodySource.Segment]) { self.segments = segments }

    deinit { closeFile() }

    /// Fills `buffer` as far as the body goes; 0 at the end.
    /// - Throws: ``HTTPError`` `unreadableFile` when a file can no longer be opened or read, or its size
    ///   changed since it was added (the `Content-Length` already sent would be wrong).
    func read(into buffer: UnsafeMutableRawBufferPointer) throws(HTTPError) -> Int {
        var written = 0
        while written < buffer.count, segmentIndex < segments.count {
            let room = UnsafeMutableRawBufferPointer(rebasing: buffer[written...])
            switch segments[segmentIndex] {
            case .bytes(let bytes):
                let n = min(bytes.count - offset, room.count)
                bytes[offset..<offset + n].withUnsafeBytes { room.copyMemory(from: $0) }
                offset += n
                if offset == bytes.count { advance() }
                written += n
            case .file(let file):
                let n = try readFile(file, into: room)
                written += n
            }
        }
        return written
    }

    /// Reads the next bytes of `file`; at its expected end, checks that nothing follows and moves on.
    private func readFile(_ file: UploadFile, into room: UnsafeMutableRawBufferPointer) throws(HTTPError) -> Int {
        if fd < 0 {
            let opened = try UploadFile.open(file.path, role: file.role)
            fd = opened.fd
            // Checked before sending any of it, when possible: the Content-Length counts on the old size.
            guard opened.size == file.size else {
                throw file.failure("changed size since it was added (\(file.size) → \(opened.size) bytes)")
            }
        }
        let n = try readSome(file, into: UnsafeMutableRawBufferPointer(rebasing: room[..<min(room.count, file.size - offset)]))
        if n == 0 && offset < file.size {
            throw file.failure("shrank while being sent (\(offset) of \(file.size) bytes)")
        }
        offset += n
        if offset == file.size {
            var extra: UInt8 = 0
            if try withUnsafeMutableBytes(of: &extra, { (probe) throws(HTTPError) in try readSome(file, into: probe) }) > 0 {
                throw file.failure("grew while being sent (more than \(file.size) bytes)")
            }
            advance()
        }
        return n
    }

    private func readSome(_ file: UploadFile, into buffer: UnsafeMutableRawBufferPointer) throws(HTTPError) -> Int {
        guard buffer.count > 0 else { return 0 }
        while true {
            let n = Glibc.read(fd, buffer.baseAddress, buffer.count)
            if n >= 0 { return n }
            if errno != EINTR { throw UploadFile.failure(file.path, role: file.role, "cannot be read", errno: errno) }
        }
    }

    private func advance() {
        closeFile()
        segmentIndex += 1
        offset = 0
    }

    private func closeFile() {
        if fd >= 0 { close(fd) }
        fd = -1
    }
}
