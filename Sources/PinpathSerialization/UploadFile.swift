import Glibc
import PinpathHTTP

/// A regular file to upload, as a form's file part or as a whole body: checked and measured when it is
/// added, opened again when sent (by ``SegmentedBodyReader``).
struct UploadFile: Sendable {
    /// The path as the user gave it, for messages.
    var path: String
    /// The size when it was added: the request's `Content-Length` counts on it.
    var size: Int
    /// What the file is to the user, for messages: `form file` or `upload file`.
    var role: String

    /// Checks that `path` can be read now and measures it.
    /// - Throws: ``HTTPError`` `unreadableFile` naming the path: missing, no permission, not a regular file.
    init(path: String, role: String = "form file") throws(HTTPError) {
        self.path = path
        self.role = role
        let descriptor = try Self.open(path, role: role)
        defer { close(descriptor.fd) }
        self.size = descriptor.size
        // A file the kernel makes as it is read (/proc, /sys) reports a size of 0: sent as measured, its body
        // would be empty, and libcurl never reads a body of length 0, so nothing would notice.
        if descriptor.size == 0 {
            var probe: UInt8 = 0
            if Glibc.read(descriptor.fd, &probe, 1) > 0 {
                throw failure(
                    "reports a size of 0 but has content (a file the kernel makes, under /proc or /sys?): copy it to a regular file first")
            }
        }
    }

    /// Opens the file for reading and returns the descriptor (the caller closes it) and the current size.
    /// - Throws: ``HTTPError`` `unreadableFile` naming the path.
    static func open(_ path: String, role: String) throws(HTTPError) -> (fd: Int32, size: Int) {
        var fd: Int32
        repeat {
            // Non-blocking so that a FIFO is refused below instead of hanging until a writer appears.
            fd = Glibc.open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        } while fd < 0 && errno == EINTR
        guard fd >= 0 else { throw failure(path, role: role, "cannot be opened", errno: errno) }
        var status = stat()
        guard fstat(fd, &status) == 0 else {
            let error = errno
            close(fd)
            throw failure(path, role: role, "cannot be examined", errno: error)
        }
        guard status.st_mode & S_IFMT == S_IFREG else {
            close(fd)
            let kind = status.st_mode & S_IFMT == S_IFDIR ? "is a directory" : "is not a regular file"
            throw HTTPError(.unreadableFile, "\(role) \(path) \(kind) (give a file to upload)")
        }
        return (fd, Int(status.st_size))
    }

    /// An `unreadableFile` error with the system's reason.
    static func failure(_ path: String, role: String, _ what: String, errno code: Int32) -> HTTPError {
        HTTPError(.unreadableFile, "\(role) \(path) \(what): \(String(cString: strerror(code)))")
    }

    /// An `unreadableFile` error about this file.
    func failure(_ what: String) -> HTTPError { HTTPError(.unreadableFile, "\(role) \(path) \(what)") }
}
