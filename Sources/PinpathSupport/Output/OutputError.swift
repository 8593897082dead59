import Glibc

/// Writing to an output failed: `errno` says how (EPIPE for a closed pipe, ENOSPC for a full disk).
package struct OutputError: Error, Sendable, CustomStringConvertible {
    /// The errno of the failed call.
    package let errno: Int32
    /// How many bytes of the line went out before the failure (a short write); 0 when none did.
    package let bytesWritten: Int

    /// - Parameters:
    ///   - errno: why the output failed.
    ///   - bytesWritten: how much of the line was written before it failed.
    package init(errno: Int32, bytesWritten: Int = 0) {
        self.errno = errno
        self.bytesWritten = bytesWritten
    }

    /// The errno's symbolic name (`EPIPE`, `ENOSPC`, …) for event fields, or `errno N` for a rare one.
    package var errnoName: String {
        switch errno {
        case EPIPE: "EPIPE"
        case ENOSPC: "ENOSPC"
        case EDQUOT: "EDQUOT"
        case EFBIG: "EFBIG"
        case EIO: "EIO"
        case EAGAIN: "EAGAIN"
        case EBADF: "EBADF"
        case EACCES: "EACCES"
        case ENOENT: "ENOENT"
        case EROFS: "EROFS"
        case EMFILE: "EMFILE"
        case ENFILE: "ENFILE"
        case ELOOP: "ELOOP"
        case ENXIO: "ENXIO"
        case ENOTDIR: "ENOTDIR"
        case EISDIR: "EISDIR"
        case EPERM: "EPERM"
        default: "errno \(errno)"
        }
    }

    /// `cannot write an event: <strerror>` (the agent and `pinpath watch` write events through it).
    package var description: String { "cannot write an event: \(String(cString: strerror(errno)))" }
}
