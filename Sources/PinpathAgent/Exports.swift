// The agent's public API speaks in the shared types (JSON values, line output and its errors): a user who
// imports PinpathAgent gets them without a second import.
@_exported import PinpathSupport

/// The error of an event sink's write: the shared ``OutputError``.
public typealias EventWriterError = OutputError
