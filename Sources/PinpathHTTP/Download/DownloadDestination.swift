import CLinuxShims
import Glibc
import PinpathSupport

/// Where a download goes: the destination, and beside it (same directory, so that the final rename is atomic)
/// the partial file `.<name>.pinpath-partial` and its record `.<name>.pinpath-partial.json`.
///
/// The rules are the event file's (`FileSink`): nothing is opened through a symbolic link (`O_NOFOLLOW`), and
/// nothing but a regular file is written (a FIFO, a device, a socket or a directory at a name is refused, before
/// any request). The partial file is created `O_CREAT | O_EXCL` (mode 0600: nobody else reads a half file),
/// written, `fsync`'d, given the mode a new file gets (0666 minus the umask), renamed over the destination and
/// the directory `fsync`'d: an existing destination is replaced only by a complete, checked file.
public struct DownloadDestination: Sendable {
    /// The destination, as given.
    public let path: String
    /// The directory holding it (`.` for a bare name).
    let directory: String
    /// The partial file beside it (`.<name>.pinpath-partial`).
    package let partialPath: String
    /// The partial file's record (URL and validator) beside it.
    let recordPath: String

    /// Checks the destination before anything is sent: refused when it (or its partial file or record) is a
    /// directory, a symbolic link (dangling or not), a FIFO or another non-regular file, or when its directory
    /// is missing or not writable. A partial file or record there that is not this user's own (another user's, a
    /// hard link, readable by others: ``foreignness(of:)``) is removed, since it will not be resumed.
    /// - Throws: ``HTTPError`` `output`, naming the path and what is wrong.
    public init(checking path: String) throws(HTTPError) {
        guard !path.isEmpty, !path.hasSuffix("/") else {
            throw HTTPError(.output, "cannot download to \"\(UntrustedText.escaped(path))\": name a file, not a directory")
        }
        self.path = path
        let slash = path.lastIndex(of: "/")
        directory = slash.map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? "."
        let name = slash.map { String(path[path.index(after: $0)...]) } ?? path
        let prefix = directory == "." && slash == nil ? "" : (directory == "/" ? "/" : directory + "/")
        partialPath = "\(prefix).\(name).pinpath-partial"
        recordPath = partialPath + ".json"
        for (file, role) in [(path, "the destination"), (partialPath, "the partial file of"), (recordPath, "the partial file's record of")]
        {
            if let problem = Self.problem(with: file) {
                let subject = file == path ? "" : " (\(role) \(UntrustedText.escaped(path)))"
                throw HTTPError(.output, "cannot download to \(UntrustedText.escaped(file))\(subject): \(problem)")
            }
        }
        for (file, role) in [(partialPath, "partial file"), (recordPath, "partial file's record")] {
            try Self.removeIfForeign(file, role: role, destination: path)
        }
        var status = stat()
        guard stat(directory, &status) == 0 else {
            throw HTTPError(
                .output,
                "cannot download to \(UntrustedText.escaped(path)): its directory \(UntrustedText.escaped(directory)): \(Self.reason(errno))"
            )
        }
        guard status.st_mode & S_IFMT == S_IFDIR else {
            throw HTTPError(
                .output, "cannot download to \(UntrustedText.escaped(path)): \(UntrustedText.escaped(directory)) is not a directory")
        }
        guard access(directory, W_OK | X_OK) == 0 else {
            throw HTTPError(
                .output,
                "cannot download to \(UntrustedText.escaped(path)): its directory \(UntrustedText.escaped(directory)): \(Self.reason(errno))"
            )
        }
    }

    /// What makes `file` unusable (it exists and is not a regular file), or `nil` (absent, or a regular file).
    private static func problem(with file: String) -> String? {
        var status = stat()
        guard lstat(file, &status) == 0 else {
            return errno == ENOENT ? nil : reason(errno)
        }
        switch status.st_mode & S_IFMT {
        case S_IFREG: return nil
        case S_IFLNK: return "it is a symbolic link, and pinpath does not write through links (name the real file)"
        case S_IFDIR: return "it is a directory (name a file in it)"
        case S_IFIFO: return "it is a FIFO, and pinpath downloads only to regular files"
        default: return "it is not a regular file (a device or a socket), and pinpath downloads only to regular files"
        }
    }

    /// Why a file found at the partial file's or the record's name is not one this user's download made, or
    /// `nil`: both are created mode 0600 by the user running the download, and have one link. A file owned by
    /// another user (planted in a directory others can write, such as a sticky `/tmp`), a hard link to some
    /// other file, or one others may read or write is never appended to, changed, renamed or trusted.
    static func foreignness(of status: stat) -> String? {
        if status.st_uid != geteuid() { return "owned by uid \(status.st_uid), not you" }
        if status.st_nlink != 1 { return "it has \(status.st_nlink) links, and a partial file has one" }
        if status.st_mode & 0o077 != 0 {
            return "others may read or write it (mode \(String(status.st_mode & 0o7777, radix: 8))), and a partial file is 0600"
        }
        return nil
    }

    /// Removes `file` when it is there and not this user's own (``foreignness(of:)``): it would not be resumed,
    /// and a fresh start must be able to create its own in its place.
    /// - Throws: ``HTTPError`` `output` when it cannot be removed (another user's file in a sticky directory),
    ///   naming it and why it is refused.
    private static func removeIfForeign(_ file: String, role: String, destination: String) throws(HTTPError) {
        var status = stat()
        guard lstat(file, &status) == 0, let why = foreignness(of: status) else { return }
        guard unlink(file) == 0 || errno == ENOENT else {
            throw HTTPError(
                .output,
                "cannot download to \(UntrustedText.escaped(destination)): its \(role) \(UntrustedText.escaped(file)) is not yours (\(why)) "
                    + "and cannot be removed: \(reason(errno)); remove it, or download to another directory")
        }
    }

    /// The error of a file that `O_CREAT | O_EXCL` could not create: when something is still there after it
    /// was removed, what it is (another user's file that this user cannot remove).
    static func creationFailure(_ file: String, errno error: Int32) -> HTTPError {
        var status = stat()
        if error == EEXIST, lstat(file, &status) == 0 {
            let why = foreignness(of: status) ?? "it came back after it was removed"
            return HTTPError(
                .output,
                "cannot create \(UntrustedText.escaped(file)): a file is there that pinpath cannot remove (\(why)); remove it, or download to another directory"
            )
        }
        return HTTPError(.output, "cannot create \(UntrustedText.escaped(file)): \(reason(error))")
    }

    /// `strerror` with the errno's name: `No space left on device (ENOSPC)`.
    static func reason(_ errno: Int32) -> String {
        "\(String(cString: strerror(errno))) (\(OutputError(errno: errno).errnoName))"
    }

    // MARK: The partial file

    /// Opens the partial file to continue it (`O_NOFOLLOW`, a regular file, this user's own: see
    /// ``foreignness(of:)``), or `nil` when there is none or it is not this user's (then not resumed, and
    /// ``createPartial()`` removes it or says why it cannot).
    func openPartialForResuming() throws(HTTPError) -> PartialFile? {
        let descriptor = open(partialPath, O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        guard descriptor >= 0 else {
            if errno == ENOENT { return nil }
            throw HTTPError(.output, "cannot open \(UntrustedText.escaped(partialPath)): \(Self.reason(errno))")
        }
        // Checked on the open file, not the name: one planted after `init(checking:)` is refused too.
        var status = stat()
        if fstat(descriptor, &status) == 0, Self.foreignness(of: status) != nil {
            close(descriptor)
            return nil
        }
        return try PartialFile(descriptor: descriptor, path: partialPath)
    }

    /// Creates a new, empty partial file, removing an old one (a link planted there is removed, never followed).
    func createPartial() throws(HTTPError) -> PartialFile {
        removePartial()
        let descriptor = open(partialPath, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0o600)
        guard descriptor >= 0 else { throw Self.creationFailure(partialPath, errno: errno) }
        return try PartialFile(descriptor: descriptor, path: partialPath)
    }

    /// Removes the partial file and its record.
    func removePartial() {
        unlink(partialPath)
        removeRecord()
    }

    /// Removes the partial file's record: what is in the partial file can no longer be resumed.
    func removeRecord() { unlink(recordPath) }

    /// Puts the finished partial file in place: mode 0666 minus the umask, `fsync`, rename over the destination,
    /// `fsync` of the directory; the record is removed after.
    func commit(_ partial: PartialFile) throws(HTTPError) {
        try partial.finish(mode: 0o666 & ~Self.umask)
        guard rename(partialPath, path) == 0 else {
            throw HTTPError(
                .output, "cannot rename \(UntrustedText.escaped(partialPath)) to \(UntrustedText.escaped(path)): \(Self.reason(errno))")
        }
        unlink(recordPath)
        let directoryDescriptor = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if directoryDescriptor >= 0 {
            // The rename is durable only once the directory is: a crash after it must not lose the new name.
            defer { close(directoryDescriptor) }
            guard fsync(directoryDescriptor) == 0 else {
                throw HTTPError(.output, "cannot sync the directory of \(UntrustedText.escaped(path)): \(Self.reason(errno))")
            }
        }
    }

    /// The process's umask, read from /proc/self/status (setting it to read it back would race other threads'
    /// file creations); 022 when that is unreadable.
    static var umask: mode_t {
        guard let text = try? readWholeFile("/proc/self/status"),
            let line = String(decoding: text, as: UTF8.self).split(separator: "\n").first(where: { $0.hasPrefix("Umask:") }),
            let value = mode_t(line.dropFirst(6).trimmingPrefix(while: { $0 == " " || $0 == "\t" }), radix: 8)
        else { return 0o022 }
        return value
    }
}

/// The open partial file of a download: appended to, digested, synced. Closed in `deinit`.
///
/// Used from one task at a time.
final class PartialFile {
    let path: String
    private let descriptor: Int32
    /// The file's length.
    private(set) var length: Int64
    /// Where the next early writeback starts (``startWriteback()``).
    private var writebackStart: Int64

    /// Takes `descriptor`: refused (and closed) unless it is a regular file.
    fileprivate init(descriptor: Int32, path: String) throws(HTTPError) {
        self.path = path
        self.descriptor = descriptor
        var status = stat()
        guard fstat(descriptor, &status) == 0, status.st_mode & S_IFMT == S_IFREG,
            fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) & ~O_NONBLOCK) == 0
        else {
            close(descriptor)
            throw HTTPError(
                .output, "cannot use \(UntrustedText.escaped(path)): it is not a regular file, and pinpath downloads only to regular files")
        }
        length = Int64(status.st_size)
        writebackStart = length
        guard lseek(descriptor, 0, SEEK_END) >= 0 else {
            let error = errno
            close(descriptor)
            throw HTTPError(.output, "cannot use \(UntrustedText.escaped(path)): \(DownloadDestination.reason(error))")
        }
    }

    deinit { close(descriptor) }

    /// Appends `bytes`; a short write (a full disk) is truncated away, so the file holds only whole chunks.
    func append(_ bytes: UnsafeRawBufferPointer) throws(HTTPError) {
        var offset = 0
        while offset < bytes.count {
            let written = write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
            if written < 0 {
                if errno == EINTR { continue }
                let error = errno
                _ = ftruncate(descriptor, off_t(length))
                _ = lseek(descriptor, off_t(length), SEEK_SET)
                throw HTTPError(.output, "cannot write \(UntrustedText.escaped(path)): \(DownloadDestination.reason(error))")
            }
            offset += written
        }
        length += Int64(bytes.count)
        startWriteback()
    }

    /// Bytes written between two early writebacks.
    private static let writebackStride: Int64 = 16 << 20

    /// Every ``writebackStride`` bytes, asks the kernel to start writing what was appended since, without waiting:
    /// the disk works while the transfer goes on, and the fsync before the rename (``sync()``) waits only for the
    /// tail. A failure here changes nothing: that fsync is the guarantee, and it reports any error.
    private func startWriteback() {
        writebackStart = min(writebackStart, length)  // after a truncation
        guard length - writebackStart >= Self.writebackStride else { return }
        _ = pinpath_start_writeback(descriptor, writebackStart, length - writebackStart)
        writebackStart = length
    }

    /// Empties the file (a server that ignored the range: the download starts again).
    func truncate() throws(HTTPError) {
        guard ftruncate(descriptor, 0) == 0, lseek(descriptor, 0, SEEK_SET) == 0 else {
            throw HTTPError(.output, "cannot truncate \(UntrustedText.escaped(path)): \(DownloadDestination.reason(errno))")
        }
        length = 0
    }

    /// Feeds the file's bytes (a resumed part) to `digest`.
    func digestContents(into digest: SHA256Digest) throws(HTTPError) {
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        var position: off_t = 0
        while true {
            let count = buffer.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, $0.count, position) }
            if count < 0 {
                if errno == EINTR { continue }
                throw HTTPError(.output, "cannot read \(UntrustedText.escaped(path)): \(DownloadDestination.reason(errno))")
            }
            if count == 0 { return }
            buffer.withUnsafeBytes { digest.update(UnsafeRawBufferPointer(rebasing: $0[..<count])) }
            position += off_t(count)
        }
    }

    /// Syncs what was written, so that a later `--continue` finds it (a dropped transfer).
    func sync() throws(HTTPError) {
        guard fsync(descriptor) == 0 else {
            throw HTTPError(.output, "cannot sync \(UntrustedText.escaped(path)): \(DownloadDestination.reason(errno))")
        }
    }

    /// Sets the final mode and syncs: the file is ready to be renamed into place.
    fileprivate func finish(mode: mode_t) throws(HTTPError) {
        guard fchmod(descriptor, mode) == 0 else {
            throw HTTPError(.output, "cannot set the mode of \(UntrustedText.escaped(path)): \(DownloadDestination.reason(errno))")
        }
        try sync()
    }
}
