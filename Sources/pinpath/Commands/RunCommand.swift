import ArgumentParser
import CLinuxShims
import Dispatch
import Glibc
import PinpathAgent
import PinpathSupport
import Synchronization

struct RunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Run the monitoring agent: probe the configured endpoints and write JSON-lines events.",
        discussion: """
            Signals: SIGHUP reloads the configuration (an invalid one is rejected with config.rejected and the \
            running one stays), SIGUSR1 reopens a file output (logrotate), SIGTERM or SIGINT stop: probes in \
            flight get 2 s, agent.stopping is written, exit 0. An output that fails (a closed pipe, a full \
            disk) does not stop the agent: lines are dropped, counted, and reported by events.dropped once it \
            takes lines again; a deleted events file is created again before the next line. With NOTIFY_SOCKET set (systemd Type=notify), \
            READY=1, RELOADING=1 and STOPPING=1 are sent, and from the scheduling loop STATUS= (the endpoints' \
            states) every 10 s, or WATCHDOG=1 and STATUS= every half WATCHDOG_USEC under WatchdogSec=.
            --once probes every endpoint once (one result decides its state) and exits 0 if all are up, 1 \
            otherwise, for cron and CI.
            Exit codes: 0 stopped cleanly (or, with --once, all up), 1 some endpoint not up (--once), \
            69 netlink or libcurl unavailable, 73 the events file cannot be opened or metrics.listen cannot be \
            bound, 78 invalid configuration.
            """)

    @Option(help: "The configuration file.")
    var config = "/etc/pinpath/pinpath.yaml"

    @Flag(help: "Probe every endpoint once, print the events and exit (0 all up, 1 otherwise).")
    var once = false

    func run() async throws {
        // Probes read bodies of up to 4 MiB. Once glibc frees such a block it raises its mmap threshold to that
        // size and keeps later ones in its heap, so a long-running agent held its largest body for good (the
        // soak saw 4 MiB steps, 12 MiB in all). A fixed threshold maps large blocks and returns them on free.
        _ = pinpath_malloc_fix_mmap_threshold(128 << 10)
        try await reportingFailures {
            // Handlers first: a signal that arrives while the agent starts must not kill it (SIGHUP's default
            // action) or be lost (a stop is remembered and applied once the agent exists).
            let running = Mutex<(agent: Agent?, stop: String?)>((nil, nil))
            let stop: @Sendable (String) -> Void = { reason in
                let agent = running.withLock { state -> Agent? in
                    if state.agent == nil { state.stop = state.stop ?? reason }
                    return state.agent
                }
                agent?.stop(reason: reason)
            }
            let signals = SignalHandlers([
                SIGTERM: { stop("SIGTERM") },
                SIGINT: { stop("SIGINT") },
                SIGHUP: { running.withLock { $0.agent }?.reload() },
                SIGUSR1: { running.withLock { $0.agent }?.reopenEvents() },
            ])
            defer { signals.cancel() }
            let agent: Agent
            do throws(Agent.StartError) {
                agent = try await Agent.start(configurationPath: config, once: once)
            } catch {
                switch error {
                case .configuration(let problems):
                    // Problems quote the file, an included one too: escaped like every text from outside.
                    let lines = UntrustedText.escapedLines(problems.problems.map { "pinpath: error: \($0)" })
                    try? LineOutput(descriptor: STDERR_FILENO).write(lines)
                    throw ExitCode(78)
                case .output(let message): throw CommandFailure.outcome(73, message)
                case .unavailable(let message): throw CommandFailure.unavailable(message)
                }
            }
            if let reason = running.withLock({ state -> String? in
                state.agent = agent
                return state.stop
            }) {
                agent.stop(reason: reason)
            }
            let allUp = await agent.run()
            if once && !allUp { throw ExitCode(1) }
        }
    }
}
