import Foundation

/// `openssl s_server` on 127.0.0.1 that the test drives by hand: it answers nothing by itself, the test writes
/// the raw response bytes and s_server's commands (`r` renegotiates) on its standard input, and everything it
/// prints (what clients sent, handshakes, errors) goes to a transcript the test reads. One connection at a
/// time, kept alive until the client or an error ends it. Killed by its PID when the test ends.
///
/// `@unchecked Sendable`: its stored properties never change after init; writes to the input pipe and reads of
/// the transcript file may come from any task.
public final class ScriptedTLSServer: @unchecked Sendable {
    public let port: UInt16
    /// What s_server printed so far: the clients' bytes, `ERROR` and OpenSSL's error lines when a connection
    /// fails, `CONNECTION CLOSED` when it ends.
    public var transcript: String { (try? String(contentsOfFile: transcriptPath, encoding: .utf8)) ?? "" }
    private let transcriptPath: String
    private let process = Process()
    private let input = Pipe()

    /// Starts s_server for `certificate` and `key`, sending `chain` after the leaf.
    /// - Parameter extraArguments: more s_server options, such as `-tls1_2` (renegotiation exists only
    ///   before TLS 1.3).
    public init(certificate: String, key: String, chain: [String], in directory: String, extraArguments: [String] = []) throws {
        let chainFile = "\(directory)/scripted-chain-\(UUID().uuidString).pem"
        try chain.map { try String(contentsOfFile: $0, encoding: .utf8) }.joined().write(
            toFile: chainFile, atomically: true, encoding: .utf8)
        transcriptPath = "\(directory)/scripted-transcript-\(UUID().uuidString)"
        _ = FileManager.default.createFile(atPath: transcriptPath, contents: nil)
        port = try TLSServer.freePort()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        // Not -quiet: s_server reads its commands from standard input only when it may talk.
        process.arguments =
            ["s_server", "-accept", "127.0.0.1:\(port)", "-cert", certificate, "-key", key, "-cert_chain", chainFile] + extraArguments
        // One descriptor for both: two would each write from their own offset over the other's lines.
        let output = FileHandle(forWritingAtPath: transcriptPath)
        process.standardOutput = output
        process.standardError = output
        process.standardInput = input
        try process.run()
        for _ in 0..<200 {
            // "ACCEPT" is printed once the socket listens (a probe connection would take the one slot).
            if transcript.contains("ACCEPT") { return }
            usleep(10_000)
        }
        stop()
        throw ShellError(description: "openssl s_server did not listen on 127.0.0.1:\(port): \(transcript)")
    }

    /// Writes bytes to the client of the current connection (s_server passes standard input through).
    public func send(_ text: String) {
        input.fileHandleForWriting.write(Data(text.utf8))
    }

    /// Makes s_server start a renegotiation on the current connection (TLS 1.2: a HelloRequest).
    public func renegotiate() { send("r\n") }

    /// Waits until the transcript contains `text` at least `count` times; false after `timeout`.
    public func wait(for text: String, count: Int = 1, timeout: Duration = .seconds(10)) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if transcript.components(separatedBy: text).count - 1 >= count { return true }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return transcript.components(separatedBy: text).count - 1 >= count
    }

    public func stop() {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    deinit { stop() }
}
