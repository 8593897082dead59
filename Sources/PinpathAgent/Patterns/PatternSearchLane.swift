import Dispatch
import Synchronization

/// Where pattern searches run: a serial queue of its own, never Swift's cooperative pool. A search may use its
/// whole ``PatternLimits`` budget (up to 2 s of CPU), and on the pool's two threads 200 such searches from an
/// included file held every other probe, the events and a SIGTERM for minutes. Here they wait for each other
/// only, in two lanes: the main file's endpoints, and every included file's, so that an included file can delay
/// nothing but the searches of included files.
final class PatternSearchLane: Sendable {
    /// The main configuration file's endpoints.
    static let mainFile = PatternSearchLane(label: "pinpath.patterns.main")
    /// Every included file's endpoints.
    static let includedFiles = PatternSearchLane(label: "pinpath.patterns.included")

    /// The lane of `endpoint`'s file.
    static func `for`(_ endpoint: EndpointConfiguration) -> PatternSearchLane {
        endpoint.isFromIncludedFile ? includedFiles : mainFile
    }

    private let queue: DispatchQueue

    private init(label: String) { queue = DispatchQueue(label: label) }

    /// `work`'s result once the lane gets to it, or `ifCancelled` when the calling task is cancelled before then
    /// (a search already running ends within its limits).
    func run<Result: Sendable>(ifCancelled: Result, _ work: @escaping @Sendable () -> Result) async -> Result {
        let cancelled = Atomic(false)
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                queue.async {
                    continuation.resume(returning: cancelled.load(ordering: .acquiring) ? ifCancelled : work())
                }
            }
        } onCancel: {
            cancelled.store(true, ordering: .releasing)
        }
    }
}
