import ArgumentParser
import Synchronization

/// The first value or combination of options pinpath refused while ArgumentParser read the command line,
/// for ``Pinpath/main()`` to report as one line, `pinpath: error: …`, with exit 64.
///
/// ArgumentParser reports a failed `init?(argument:)` as "invalid" followed by its usage block, and wraps
/// what `validate()` throws in its own error: neither carries the library's explanation, which is what a
/// person needs (`--pin: pin "sha256/abc" is not valid base64`). So the conversions and the checks record it.
enum ArgumentRefusal {
    private static let first = Mutex<CommandFailure?>(nil)

    /// The first failure recorded, if any.
    static var recorded: CommandFailure? { first.withLock { $0 } }

    /// Parses a command-line value with a library parser, the body of an `init?(argument:)`: the parser's
    /// refusal is recorded as a usage error worded by `message`, and the value is `nil`.
    static func parse<Value>(_ parse: () throws -> Value, message: (_ refusal: String) -> String) -> Value? {
        do {
            return try parse()
        } catch {
            record(.usage(message(String(describing: error))))
            return nil
        }
    }

    /// Runs the checks of a `validate()`, recording the ``CommandFailure`` they throw before ArgumentParser
    /// wraps it.
    static func checking(_ checks: () throws(CommandFailure) -> Void) throws {
        do {
            try checks()
        } catch {
            record(error)
            throw error
        }
    }

    private static func record(_ failure: CommandFailure) {
        first.withLock { $0 = $0 ?? failure }
    }
}
