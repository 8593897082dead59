import CLinuxShims

/// Happens-before edges that ThreadSanitizer cannot see by itself: a continuation resumed on a service thread
/// before its task has suspended (swiftlang/swift#57803) made what that thread wrote look racy to the task that
/// reads it after the `await`. Calls nothing outside a ThreadSanitizer build (docs/reliability.md, Sanitizers).
package enum SanitizerEdge {
    /// On the thread that hands `object`'s results over, before resuming the waiting task.
    package static func release(_ object: AnyObject) {
        pinpath_tsan_release(Unmanaged.passUnretained(object).toOpaque())
    }

    /// In the task that receives them, after its `await`.
    package static func acquire(_ object: AnyObject) {
        pinpath_tsan_acquire(Unmanaged.passUnretained(object).toOpaque())
    }
}
