import ArgumentParser
import Dispatch
import FoundationEssentials
import Glibc
import PinpathAgent
import PinpathReachability
import PinpathSupport
import Synchronization

struct WatchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch",
        abstract: "Print one line per reachability change until interrupted (SIGINT or SIGTERM exits 0).",
        discussion: """
            The first line is the current state (reason "initial"). With --json, each line is an event in \
            the agent's envelope: reachability.changed for the machine, reachability.target_changed per target.
            Exit codes: 0 stopped by SIGINT or SIGTERM, or the reader went away; 64 usage error; 69 netlink \
            unavailable or the --netns namespace cannot be entered; 74 output error.
            """)

    @OptionGroup var options: MonitorOptions

    /// How long SIGINT/SIGTERM waits for the last line to be written before exiting regardless.
    static let stopGracePeriod: DispatchTimeInterval = .seconds(2)

    func run() async throws {
        try await reportingFailures {
            let monitor = try await options.startMonitor()
            let signals = StopSignals {
                // A reader that stopped reading leaves the netlink thread blocked in write(2), and stop() waits
                // for that thread: after a grace period, leave anyway rather than hang the service manager.
                DispatchQueue.global().asyncAfter(deadline: .now() + WatchCommand.stopGracePeriod) { _exit(0) }
                monitor.stop()
            }
            defer { signals.cancel() }
            // A reader that goes away is otherwise noticed only at the next line, which may be hours away.
            let readerWatch = ReaderWatch { monitor.stop() }
            defer { readerWatch.cancel() }
            let outputError = Mutex<OutputError?>(nil)
            let events = EventWriter(format: .standardOutput(environment: ProcessInfo.processInfo.environment))
            let text = LineOutput()
            let json = options.json
            // Written on the monitor's thread: no hop between the kernel's message and our line.
            monitor.onChange { event in
                do throws(OutputError) {
                    if json {
                        let (kind, level) = EventCatalog.reachability(event)
                        try events.write(event: kind.name, level: level, fields: event.jsonFields)
                    } else {
                        try text.write(PathText.change(event))
                    }
                } catch {
                    outputError.withLock { $0 = $0 ?? error }
                    monitor.stop()
                }
            }
            await monitor.waitUntilStopped()
            if let error = outputError.withLock({ $0 }) {
                // A reader that went away (`pinpath watch | head`) is a normal way to end.
                if error.errno == EPIPE { return }
                throw CommandFailure.output(error.description)
            }
            if let failure = monitor.failure { throw CommandFailure.unavailable("netlink failed: \(failure.message)") }
        }
    }
}

/// Checks standard output once a second for a reader that went away (`POLLERR` on a pipe's write end, `POLLHUP`
/// on a socket or terminal), and then runs `onGone` once: the timer ends there, and a source's handler never
/// runs twice at once.
final class ReaderWatch {
    private let timer: any DispatchSourceTimer

    init(onGone: @escaping @Sendable () -> Void) {
        timer = DispatchSource.makeTimerSource(queue: .global())
        timer.schedule(deadline: .now() + 1, repeating: 1)
        timer.setEventHandler { [weak self] in
            var output = pollfd(fd: STDOUT_FILENO, events: 0, revents: 0)
            guard poll(&output, 1, 0) == 1, output.revents & Int16(POLLERR | POLLHUP) != 0 else { return }
            self?.cancel()
            onGone()
        }
        timer.resume()
    }

    func cancel() { timer.cancel() }
}

/// SIGINT and SIGTERM run `onStop` instead of killing the process, so the command can end cleanly with
/// exit 0. SIGPIPE is ignored so a closed output shows up as EPIPE from `write`.
final class StopSignals {
    private let handlers: SignalHandlers

    init(onStop: @escaping @Sendable () -> Void) {
        handlers = SignalHandlers([SIGINT: onStop, SIGTERM: onStop])
    }

    func cancel() { handlers.cancel() }
}

/// Runs a handler for each signal (on a Dispatch queue, not in signal context, so handlers may take locks)
/// instead of the signal's default action. SIGPIPE is ignored so a closed output shows up as EPIPE.
final class SignalHandlers {
    private let sources: [any DispatchSourceSignal]

    init(_ handlers: [Int32: @Sendable () -> Void]) {
        signal(SIGPIPE, SIG_IGN)
        sources = handlers.map { number, handler in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler(handler: handler)
            source.resume()
            return source
        }
    }

    func cancel() { for source in sources { source.cancel() } }
}
