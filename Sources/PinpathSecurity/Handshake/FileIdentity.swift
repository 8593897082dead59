import Glibc

/// Which file a path names right now, and which version of it: device, inode, size and the modification and
/// status-change times (to the nanosecond). A certificate rotated in place (`cp` over it, or a new file renamed
/// onto the path) changes at least one of them, so a context built from the old file is not taken for the new.
struct FileIdentity: Hashable, Sendable {
    let device: UInt64
    let inode: UInt64
    let size: Int64
    let modified: timespec
    let changed: timespec

    /// The identity of the file at `path` now. Wraps `stat(2)`, which follows symbolic links (as opening the
    /// file does), so a link switched to another file counts as a new file.
    /// - Throws: ``Unavailable``, `stat`'s error, for the caller to name the file.
    init(path: String) throws(Unavailable) {
        var info = stat()
        guard stat(path, &info) == 0 else { throw Unavailable(errno: errno) }
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
        size = Int64(info.st_size)
        modified = info.st_mtim
        changed = info.st_ctim
    }

    static func == (left: FileIdentity, right: FileIdentity) -> Bool {
        (left.device, left.inode, left.size) == (right.device, right.inode, right.size)
            && (left.modified.tv_sec, left.modified.tv_nsec, left.changed.tv_sec, left.changed.tv_nsec)
                == (right.modified.tv_sec, right.modified.tv_nsec, right.changed.tv_sec, right.changed.tv_nsec)
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(device)
        hasher.combine(inode)
        hasher.combine(size)
        hasher.combine(modified.tv_sec)
        hasher.combine(modified.tv_nsec)
    }

    /// Why a file has no identity: `stat(2)` failed (`No such file or directory`).
    struct Unavailable: Error, CustomStringConvertible {
        let errno: Int32
        var description: String { String(cString: strerror(errno)) }
    }
}
