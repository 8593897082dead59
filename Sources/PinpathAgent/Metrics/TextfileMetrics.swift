import Glibc
import PinpathSupport

/// Metrics for node_exporter's textfile collector: the text ``MetricsExposition`` renders, written to a
/// temporary file in the same directory and renamed into place, so the collector never reads half a file.
///
/// ``write(_:)`` does blocking file I/O: call it from the agent's metrics task, not on a probe's path.
struct TextfileMetrics: Sendable {
    /// The `.prom` file written: in node_exporter's textfile directory, it should end in `.prom`.
    let path: String

    /// Writes `text` to `path` through a temporary file and a rename, so readers see the old file or the new
    /// one, never a mix. The temporary file gets a random name starting with a dot (the collector reads only
    /// `*.prom`) and is created exclusively, never through a link (`O_CREAT|O_EXCL|O_NOFOLLOW`): a link planted
    /// at a predictable name would make the agent overwrite its target. The rename replaces a link planted at
    /// `path` itself rather than writing through it.
    /// - Throws: `SystemCallError`; the temporary file is removed and the old metrics stay.
    func write(_ text: String) throws(SystemCallError) {
        let (descriptor, temporary) = try createTemporaryFile()
        do {
            try LineOutput(descriptor: descriptor).write(text)
        } catch {
            close(descriptor)
            unlink(temporary)
            throw SystemCallError("write", temporary, errno: error.errno)
        }
        close(descriptor)
        guard rename(temporary, path) == 0 else {
            let failure = errno
            unlink(temporary)
            throw SystemCallError("rename into place", path, errno: failure)
        }
    }

    /// Refuses a textfile path that is a symbolic link, for the agent's start-up: the operator named a link
    /// (or someone planted one), and the first write would silently replace it.
    func checkNotALink() throws(SystemCallError) {
        var status = stat()
        if lstat(path, &status) == 0 && (status.st_mode & S_IFMT) == S_IFLNK {
            throw SystemCallError("write metrics to", path, errno: ELOOP)
        }
    }

    /// A new, empty file beside `path`, opened for writing: `.NAME.RANDOM.tmp`, mode 0644 (node_exporter
    /// runs as another user).
    private func createTemporaryFile() throws(SystemCallError) -> (Int32, String) {
        let slash = path.lastIndex(of: "/")
        let directory = slash.map { String(path[...$0]) } ?? ""
        let name = slash.map { String(path[path.index(after: $0)...]) } ?? path
        while true {
            let temporary = "\(directory).\(name).\(String(UInt64.random(in: .min ... .max), radix: 36)).tmp"
            let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o644)
            if descriptor >= 0 {
                // open's mode passes through the umask, and the shipped unit's UMask=0027 would make the file
                // 0640, unreadable by node_exporter: the metrics are meant for another user, so say 0644 again.
                guard fchmod(descriptor, 0o644) == 0 else {
                    let failure = errno
                    close(descriptor)
                    unlink(temporary)
                    throw SystemCallError("chmod", temporary, errno: failure)
                }
                return (descriptor, temporary)
            }
            guard errno == EEXIST else { throw SystemCallError("create", temporary, errno: errno) }
        }
    }
}
