import Glibc
import PinpathHTTP

/// A regular file to upload: checked and measured when it is added to a form, opened again when sent.
struct UploadFile: Sendable {
    /// The path as the user gave it, for messages.
    var path: String
    /// The size when it was added: the form's `Content-Length` counts on it.
    var size: Int

    /// Checks that `path` can be read now and measures it.
    /// - Throws: ``HTTPError`` `unreadableFile` naming the path: missing, no permission, not a regular file.
    init(path: String) throws(HTTPError) {
        let descriptor = try Self.open(path)
        defer { close(descriptor.fd) }
        self.path = path
        self.size = descriptor.size
    }

    /// Opens the file for reading and returns the descriptor (the caller closes it) and the current size.
    /// - Throws: ``HTTPError`` `unreadableFile` naming the path.
    static func open(_ path: String) throws(HTTPError) -> (fd: Int32, size: Int) {
        var fd: Int32
        repeat {
            // Non-blocking so that a FIFO is refused below instead of hanging until a writer appears.
            fd = Glibc.open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        } while fd < 0 && errno == EINTR
        guard fd >= 0 else { throw failure(path, "cannot be opened", errno: errno) }
        var status = stat()
        guard fstat(fd, &status) == 0 else {
            let error = errno
            close(fd)
            throw failure(path, "cannot be examined", errno: error)
        }
        guard status.st_mode & S_IFMT == S_IFREG else {
            close(fd)
            let kind = status.st_mode & S_IFMT == S_IFDIR ? "is a directory" : "is not a regular file"
            throw HTTPError(.unreadableFile, "form file \(path) \(kind) (give a file to upload)")
        }
        return (fd, Int(status.st_size))
    }

    /// An `unreadableFile` error with the system's reason.
    static func failure(_ path: String, _ what: String, errno code: Int32) -> HTTPError {
        HTTPError(.unreadableFile, "form file \(path) \(what): \(String(cString: strerror(code)))")
    }
}
