import Glibc
import PinpathSupport

/// An event file, appended to, rotated by size and reopened on request (SIGUSR1 from logrotate).
///
/// Rotation keeps `keptFiles` old files: `pinpath.log` becomes `pinpath.log.1`, `.1` becomes `.2`, …, and
/// the oldest beyond `.N` is deleted. A file is rotated before a line that would take it past `maxBytes`, so
/// files never exceed it unless one line alone does. Only whole lines stay in the file: when a write stops
/// part-way (ENOSPC), the file is truncated back to where the line started.
///
/// A file deleted under the agent is noticed before the next line (its link count is 0) and created again:
/// lines written on into a deleted file would be lost without a trace. A renamed file (logrotate) is written
/// on until ``reopen()``, as by any daemon before its signal: those lines are in the renamed file.
///
/// The file is never opened through a symbolic link (`O_NOFOLLOW`): a link planted at the file's name would
/// make the agent append to whatever it points at. Such an open fails with `ELOOP`, at start-up as an error
/// naming the file, later as lines dropped and reported. Nor is anything but a regular file written (a FIFO, a
/// device): that is `ENXIO`, reported the same way.
///
/// Used from one thread at a time (the ``EventWriterThread``'s).
final class FileSink: EventSink {
    /// The file written to.
    let path: String
    /// The size past which the file is rotated; `nil` never rotates (logrotate does it).
    let maxBytes: Int?
    /// How many rotated files are kept.
    let keptFiles: Int

    /// The open file, or -1 after an open failed (the next write tries again).
    private var descriptor: Int32 = -1

    /// Opens (or creates, mode 0640) the file for appending.
    /// - Parameters:
    ///   - path: the event file.
    ///   - maxBytes: rotate before a line would make the file larger than this; `nil` for never.
    ///   - keptFiles: how many rotated files to keep (`path.1` … `path.N`); 0 deletes the full file.
    /// - Throws: `SystemCallError` when the file cannot be opened (or is a symbolic link), so a wrong path
    ///   shows at start-up.
    init(path: String, maxBytes: Int? = nil, keptFiles: Int = 5) throws(SystemCallError) {
        precondition((maxBytes.map { $0 > 0 } ?? true) && keptFiles >= 0, "maxBytes must be positive, keptFiles not negative")
        self.path = path
        self.maxBytes = maxBytes
        self.keptFiles = keptFiles
        if let errno = open() { throw SystemCallError("open", path, errno: errno) }
    }

    deinit {
        if descriptor >= 0 { Glibc.close(descriptor) }
    }

    /// Appends the line, rotating first if it would make the file too large.
    func write(_ line: UnsafeRawBufferPointer) throws(OutputError) {
        let size = try openFileSize()
        if let maxBytes, size > 0 && size + line.count > maxBytes { try rotate() }
        try LineOutput(descriptor: descriptor).writeWholeLine(line)
    }

    /// The size of the file lines go to, opening it first if needed (after a failed open) or again if it was
    /// deleted. Read for every line (one fstat): another program may have truncated the file (logrotate's
    /// copytruncate) or deleted it.
    private func openFileSize() throws(OutputError) -> Int {
        if descriptor < 0, let errno = open() { throw OutputError(errno: errno) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { return 0 }
        guard status.st_nlink == 0 else { return Int(status.st_size) }
        close()
        if let errno = open() { throw OutputError(errno: errno) }
        return fstat(descriptor, &status) == 0 ? Int(status.st_size) : 0
    }

    /// Closes the file and opens `path` again, creating it if logrotate moved or deleted it.
    func reopen() throws(OutputError) {
        close()
        if let errno = open() { throw OutputError(errno: errno) }
    }

    /// Shifts `path.N-1` → `path.N` … `path` → `path.1`, then starts a new `path`. A rename that fails for
    /// another reason than a missing file is ignored: writing on into a large file is better than losing
    /// events because the directory refused a rename.
    private func rotate() throws(OutputError) {
        close()
        if keptFiles == 0 {
            unlink(path)
        } else {
            unlink("\(path).\(keptFiles)")
            for index in stride(from: keptFiles - 1, through: 1, by: -1) {
                rename("\(path).\(index)", "\(path).\(index + 1)")
            }
            rename(path, "\(path).1")
        }
        if let errno = open() { throw OutputError(errno: errno) }
    }

    /// Opens `path`; returns the errno on failure: `ELOOP` for a symbolic link, `ENXIO` for anything but a
    /// regular file. The open does not block (`O_NONBLOCK`): a FIFO planted at the name would otherwise hold
    /// the agent in `open` until a reader came, and no signal could stop it.
    private func open() -> Int32? {
        let file = Glibc.open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0o640)
        guard file >= 0 else { return errno }
        var status = stat()
        guard fstat(file, &status) == 0, status.st_mode & S_IFMT == S_IFREG,
            fcntl(file, F_SETFL, fcntl(file, F_GETFL) & ~O_NONBLOCK) == 0
        else {
            Glibc.close(file)
            return ENXIO
        }
        descriptor = file
        return nil
    }

    private func close() {
        if descriptor >= 0 { Glibc.close(descriptor) }
        descriptor = -1
    }
}
