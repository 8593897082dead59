import Glibc
import PinpathSupport
import Synchronization
import Testing

/// Blocking work outside libcurl runs on one bounded pool: at most its threads at once, the rest in arrival
/// order, each result back to the task that awaits it; threads start only when work needs them and are kept.
@Suite("Blocking pool")
struct BlockingPoolTests {
    /// What the jobs saw: the threads they ran on, how many ran at once, and in which order they started.
    final class Record: Sendable {
        private struct State {
            var threads: Set<UInt> = []
            var running = 0
            var mostRunning = 0
            var started: [Int] = []
        }
        private let state = Mutex(State())

        func begin(_ job: Int) {
            state.withLock {
                $0.threads.insert(UInt(bitPattern: Int(pthread_self())))
                $0.running += 1
                $0.mostRunning = max($0.mostRunning, $0.running)
                $0.started.append(job)
            }
        }
        func end() { state.withLock { $0.running -= 1 } }
        var threads: Int { state.withLock { $0.threads.count } }
        var mostRunning: Int { state.withLock { $0.mostRunning } }
        var started: [Int] { state.withLock { $0.started } }
    }

    @Test("12 blocking jobs on a pool of 3: each result returns to its task, never more than 3 run at once or threads start")
    func bounded() async {
        let pool = BlockingPool(name: "test.bounded", maximumThreads: 3)
        let record = Record()
        let results = await withTaskGroup(of: Int.self) { group in
            for job in 0..<12 {
                group.addTask {
                    await pool.run {
                        record.begin(job)
                        usleep(20_000)  // a blocking call, as a handshake's poll
                        record.end()
                        return job * 10
                    }
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(results.sorted() == (0..<12).map { $0 * 10 })
        #expect(record.mostRunning == 3, "3 threads should have been busy at once: \(record.mostRunning)")
        #expect(record.threads == 3)
    }

    @Test("Work one after another runs on the one thread the first started: threads start as work needs them")
    func lazy() async {
        let pool = BlockingPool(name: "test.lazy", maximumThreads: 4)
        let record = Record()
        for job in 0..<10 {
            await pool.run {
                record.begin(job)
                record.end()
            }
        }
        #expect(record.threads == 1)
        #expect(record.started == Array(0..<10))
    }

    @Test("Jobs beyond the threads wait their turn in the order they came")
    func arrivalOrder() async throws {
        let pool = BlockingPool(name: "test.order", maximumThreads: 1)
        let record = Record()
        let gate = Atomic<Bool>(false)
        // The first job holds the only thread until the others are queued.
        pool.execute {
            while !gate.load(ordering: .acquiring) { usleep(1_000) }
        }
        let done = Atomic<Int>(0)
        for job in 0..<20 {
            pool.execute {
                record.begin(job)
                record.end()
                done.add(1, ordering: .releasing)
            }
        }
        gate.store(true, ordering: .releasing)
        let deadline = ContinuousClock.now + .seconds(10)
        while done.load(ordering: .acquiring) < 20 && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
        #expect(record.started == Array(0..<20))
    }
}
