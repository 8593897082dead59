import CLinuxShims
import Glibc
import PinpathSupport
import Synchronization
import Testing

/// The one way pinpath runs a thread: posts reach it and wake it, whichever way it sleeps; `stop` ends it with
/// its work still queued seen, joins it, and refuses what comes after.
@Suite("Service thread")
struct ServiceThreadTests {
    /// What a test's thread records, read by the test.
    final class Record: Sendable {
        let seen = Mutex<[Int]>([])
        let flag = Atomic<Bool>(false)
        var count: Int { seen.withLock { $0.count } }
        var items: [Int] { seen.withLock { $0 } }
        var isSet: Bool { flag.load(ordering: .sequentiallyConsistent) }
        func set() { flag.store(true, ordering: .sequentiallyConsistent) }
    }

    /// A loop on the condition variable that records every item, in order, until it is stopped: it drains
    /// what is queued first, as the event writer does.
    static func recordingLoop(_ service: ServiceThread<[Int]>, into record: Record, pause: Duration = .zero) {
        var batch: [Int] = []
        while true {
            let phase = service.waitForWork(ifIdle: \.isEmpty)
            service.withInbox { swap(&batch, &$0) }
            for item in batch {
                if pause > .zero { usleep(UInt32(pause.components.attoseconds / 1_000_000_000_000)) }
                record.seen.withLock { $0.append(item) }
            }
            batch.removeAll()
            _ = service.publish { _ in }
            if phase != .running && service.withInbox(\.isEmpty) { return }
        }
    }

    static func post(_ item: Int, to service: ServiceThread<[Int]>) -> Bool {
        service.post { inbox, phase in
            guard phase == .running else { return false }
            inbox.append(item)
            return true
        }
    }

    @Test("A post wakes the idle thread, one at a time, 2,000 times: no wake-up is lost")
    func wakeWhileIdle() throws {
        let record = Record()
        let service = ServiceThread<[Int]>(inbox: [])
        try service.start(name: "test-service") { Self.recordingLoop($0, into: record) }
        defer { service.stop() }
        for item in 0..<2000 {
            #expect(Self.post(item, to: service))
            // Each post finds the thread asleep (or on its way): it must still see the item, at once.
            let handled = service.wait(timeout: .seconds(10)) { _, _ in record.count == item + 1 }
            try #require(handled, "item \(item) was posted to an idle thread and never handled")
        }
        #expect(record.items == Array(0..<2000))
    }

    @Test("With the owner's wait (poll on an eventfd), a post wakes it too; a stop wakes it from an endless wait")
    func ownerWakeup() throws {
        let descriptor = pinpath_eventfd_nonblocking()
        try #require(descriptor >= 0)
        defer { close(descriptor) }
        let record = Record()
        let service = ServiceThread<[Int]>(
            inbox: [],
            wakeup: .owner {
                var one: UInt64 = 1
                _ = write(descriptor, &one, 8)
            })
        try service.start(name: "test-owner") { service in
            var batch: [Int] = []
            while true {
                _ = service.waitForWork(ifIdle: \.isEmpty) {
                    var waiting = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
                    return poll(&waiting, 1, -1)  // no timeout: only a wake-up ends it
                }
                var counter: UInt64 = 0
                _ = read(descriptor, &counter, 8)
                service.withInbox { swap(&batch, &$0) }
                record.seen.withLock { $0 += batch }
                batch.removeAll()
                _ = service.publish { _ in }
                if service.phase != .running { return }
            }
        }
        for item in 0..<500 {
            #expect(Self.post(item, to: service))
            let handled = service.wait(timeout: .seconds(10)) { _, _ in record.count == item + 1 }
            try #require(handled, "item \(item) never woke the owner's wait")
        }
        let stopped = ContinuousClock.now
        service.stop()  // the thread sleeps in poll with no timeout: only the wake-up can end it
        #expect(ContinuousClock.now - stopped < .seconds(5))
        #expect(service.phase == .finished)
    }

    @Test("stop() with work queued: the thread sees all of it, stop returns after the thread has, later posts are refused")
    func stopWithWorkQueued() throws {
        let record = Record()
        let service = ServiceThread<[Int]>(inbox: [])
        let startedBefore = ServiceThread<[Int]>.started
        try service.start(name: "test-stop") { service in
            Self.recordingLoop(service, into: record, pause: Duration.milliseconds(1))
            record.set()
        }
        #expect(ServiceThread<[Int]>.started >= startedBefore + 1)
        for item in 0..<200 { #expect(Self.post(item, to: service)) }
        service.stop()
        // Joined: the loop has returned, having taken everything posted before the stop.
        #expect(record.isSet)
        #expect(record.items == Array(0..<200))
        #expect(service.phase == .finished)
        #expect(!Self.post(200, to: service))
        service.stop()  // idempotent
    }

    @Test("stop(timeout:) on a thread that does not return gives up at the deadline and leaves it running")
    func stopTimeout() throws {
        let release = Record()
        let service = ServiceThread<[Int]>(inbox: [])
        try service.start(name: "test-stuck") { _ in
            while !release.isSet { usleep(1000) }  // ignores the stop: a blocked write
        }
        let started = ContinuousClock.now
        #expect(!service.stop(timeout: .milliseconds(200)))
        #expect(ContinuousClock.now - started >= .milliseconds(200))
        #expect(service.phase == .stopping)
        release.set()
        #expect(service.wait(timeout: .seconds(10)) { _, phase in phase == .finished })
    }

    @Test("stop() from the service thread itself ends the loop without joining itself")
    func stopFromItself() throws {
        let service = ServiceThread<[Int]>(inbox: [])
        try service.start(name: "test-self") { service in
            _ = service.waitForWork(ifIdle: \.isEmpty)
            service.stop()  // a completion dropping its owner's last reference does this
        }
        #expect(Self.post(1, to: service))
        #expect(service.wait(timeout: .seconds(10)) { _, phase in phase == .finished })
        service.stop()
    }
}
