import CLinuxShims
import Glibc
import Synchronization

/// A POSIX thread that runs one closure and can be joined: what ``ServiceThread`` and ``BlockingPool`` run on.
/// Nothing else starts one: a thread of pinpath's own is a ``ServiceThread`` or one of the pool's.
struct DedicatedThread: Sendable {
    private var thread = pthread_t()

    /// Starts the thread. `body` is `sending`: it moves to the new thread, so the compiler checks that the
    /// caller keeps no use of what it captured.
    /// - Throws: ``SystemCallError`` when `pthread_create` fails (EAGAIN: a thread limit was reached).
    init(name: String, _ body: sending @escaping () -> Void) throws(SystemCallError) {
        let box = Unmanaged.passRetained(Body(name: name, run: body)).toOpaque()
        let created = pthread_create(
            &thread, nil,
            { argument in
                let body = Unmanaged<Body>.fromOpaque(argument!).takeRetainedValue()
                pinpath_set_thread_name(String(body.name.prefix(15)))
                body.run()
                return nil
            }, box)
        guard created == 0 else {
            Unmanaged<Body>.fromOpaque(box).release()
            throw SystemCallError("start the thread", name, errno: created)
        }
        Self.startedCount.add(1, ordering: .relaxed)
    }

    /// How many threads have started in this process.
    static var started: Int { startedCount.load(ordering: .relaxed) }
    private static let startedCount = Atomic<Int>(0)

    /// Waits for the closure to return. Call once: the value is consumed.
    consuming func join() {
        pthread_join(thread, nil)
    }

    /// Lets the thread end on its own, for when it cannot be joined (it is the caller).
    consuming func detach() {
        pthread_detach(thread)
    }

    /// The caller is this thread.
    var isCurrent: Bool { pthread_equal(thread, pthread_self()) != 0 }

    private final class Body {
        let name: String
        let run: () -> Void
        init(name: String, run: @escaping () -> Void) {
            self.name = name
            self.run = run
        }
    }
}
