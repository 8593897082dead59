import Glibc

/// A mutex and a condition variable over it: the inbox lock of ``ServiceThread`` and the queue lock of
/// ``BlockingPool``, whose threads may sleep on it until another says there is work. Wraps `pthread_mutex_t` and `pthread_cond_t`.
///
/// Both live in memory of their own, at addresses that never move, which POSIX requires and Swift's `Mutex`
/// (a value) does not give. Timed waits use `CLOCK_MONOTONIC`, so setting the wall clock moves no deadline.
final class ConditionLock: @unchecked Sendable {
    // @unchecked: the pthread objects are made for sharing between threads; this class only owns them.
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

    init() {
        pthread_mutex_init(mutex, nil)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    func lock() { pthread_mutex_lock(mutex) }

    func unlock() { pthread_mutex_unlock(mutex) }

    /// Wakes every thread waiting. Call with the lock held.
    func broadcast() { pthread_cond_broadcast(condition) }

    /// Wakes one thread waiting, if any. Call with the lock held.
    func signal() { pthread_cond_signal(condition) }

    /// Releases the lock, sleeps until woken (or spuriously), and takes the lock again.
    func wait() { pthread_cond_wait(condition, mutex) }

    /// As ``wait()``, but no later than `deadline`.
    /// - Returns: `false` when the deadline passed first.
    func wait(until deadline: Deadline) -> Bool {
        var time = deadline.time
        return pthread_cond_timedwait(condition, mutex, &time) != ETIMEDOUT
    }

    /// A moment on `CLOCK_MONOTONIC`, the clock of the timed waits.
    struct Deadline: Sendable {
        fileprivate let time: timespec

        /// `timeout` from now (a negative one is now).
        init(after timeout: Duration) {
            var now = timespec()
            clock_gettime(CLOCK_MONOTONIC, &now)
            let (seconds, attoseconds) = max(timeout, .zero).components
            var nanoseconds = Int(now.tv_nsec) + Int(attoseconds / 1_000_000_000)
            let carry = nanoseconds / 1_000_000_000
            nanoseconds %= 1_000_000_000
            // Clamped: a timeout of years must not overflow time_t.
            let total = Int(now.tv_sec).addingReportingOverflow(Int(min(seconds, Int64(Int32.max))) + carry)
            time = timespec(tv_sec: total.overflow ? .max : total.partialValue, tv_nsec: nanoseconds)
        }
    }
}
