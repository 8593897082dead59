import Foundation

/// Debian's `chromium`, headless, driven over WebDriver by its `chromedriver` (package chromium-driver): the
/// status page's tests load the page the agent serves, read the DOM the script built, and take screenshots.
///
/// WebDriver is HTTP and JSON, spoken here with curl (a test package already), so no client library is needed.
/// chromedriver runs in a session of its own (`setsid`): chromium and its helpers are in that process group, which
/// ``close()`` (and `deinit`, on every path) kills whole. The profile is a temporary directory removed with it.
public final class HeadlessChromium {
    /// chromium's binary (not /usr/bin/chromium, Debian's shell wrapper) and the driver.
    public static let browser = "/usr/lib/chromium/chromium"
    public static let driver = "/usr/bin/chromedriver"

    /// Whether both are installed (scripts/packages.sh installs them with the test packages).
    public static var isInstalled: Bool {
        FileManager.default.isExecutableFile(atPath: browser) && FileManager.default.isExecutableFile(atPath: driver)
    }

    /// An error chromedriver returned (`error` and `message` of its answer).
    public struct DriverError: Error, CustomStringConvertible {
        public let description: String
    }

    private let profile: TemporaryDirectory
    private let driverPID: pid_t
    private let port: UInt16
    private var session: String?

    /// Starts chromedriver and a browser session with a window of `width` × `height` CSS pixels, recording the
    /// page's network requests (the performance log).
    public init(width: Int = 1400, height: Int = 1000) throws {
        profile = try TemporaryDirectory("chromium")
        let output = profile.file("chromedriver.out")
        let file = Glibc.open(output, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        defer { Glibc.close(file) }
        driverPID = try Shell.spawn(["/usr/bin/setsid", Self.driver, "--port=0"], stdout: file, stderr: file)
        var found: UInt16?
        let deadline = ContinuousClock.now + .seconds(20)
        while found == nil, ContinuousClock.now < deadline {
            // "ChromeDriver was started successfully on port 38561."
            if let text = try? String(contentsOfFile: output, encoding: .utf8),
                let range = text.range(of: "started successfully on port ")
            {
                found = UInt16(text[range.upperBound...].prefix { $0.isNumber })
            }
            if found == nil { usleep(50_000) }
        }
        guard let found else {
            Self.killGroup(driverPID)
            throw DriverError(description: "chromedriver did not start: \(profile.read("chromedriver.out") ?? "")")
        }
        port = found
        let arguments = [
            "--headless=new", "--no-sandbox", "--disable-gpu", "--user-data-dir=\(profile.file("profile"))",
            "--window-size=\(width),\(height)", "--no-first-run", "--no-default-browser-check", "--disable-extensions",
            "--disable-background-networking", "--disable-component-update", "--disable-sync", "--lang=en-US",
            // No crash handler: it would run outside chromedriver's process group.
            "--disable-crash-reporter", "--disable-breakpad",
        ]
        let capabilities: [String: Any] = [
            "capabilities": [
                "alwaysMatch": [
                    "browserName": "chrome",
                    "goog:chromeOptions": ["binary": Self.browser, "args": arguments],
                    "goog:loggingPrefs": ["performance": "ALL"],
                ]
            ]
        ]
        do {
            let value = try command("POST", "/session", capabilities)
            guard let id = (value as? [String: Any])?["sessionId"] as? String else {
                throw DriverError(description: "chromedriver's new session has no id: \(String(describing: value))")
            }
            session = id
        } catch {
            Self.killGroup(driverPID)
            throw error
        }
    }

    deinit { close() }

    /// Ends the session and kills chromedriver, chromium and its helpers (their process group). Safe to call twice.
    public func close() {
        if let session {
            self.session = nil
            _ = try? command("DELETE", "/session/\(session)", nil)
        }
        Self.killGroup(driverPID)
    }

    /// Opens `url` and returns when the page has loaded (scripts with `defer` have run). The requests made before
    /// (chromium's own start page and its `chrome://` resources) are dropped from ``requests()``.
    public func load(_ url: String) throws {
        _ = try requests()
        _ = try command("POST", try path("url"), ["url": url])
    }

    /// Runs `script` (a function body: `return document.title`) in the page with `arguments` and returns its value as
    /// JSON values (strings, numbers, booleans, arrays, dictionaries, `NSNull`).
    @discardableResult
    public func evaluate(_ script: String, _ arguments: [Any] = []) throws -> Any? {
        try command("POST", try path("execute/sync"), ["script": script, "args": arguments])
    }

    /// Polls `script` until it returns `true`; throws after `timeout` (a bound on a hang, not a timing assertion),
    /// with the last value of `describe` (another script) in the message.
    public func wait(_ what: String, timeout: Duration, for script: String, describe: String? = nil) async throws {
        let deadline = ContinuousClock.now + timeout
        while try evaluate(script) as? Bool != true {
            guard ContinuousClock.now < deadline else {
                let state = try describe.map { String(describing: try evaluate($0) ?? "nil") } ?? ""
                throw DriverError(description: "timed out after \(timeout) waiting for \(what) \(state)")
            }
            try await Task.sleep(for: .milliseconds(200))
        }
    }

    /// Saves a PNG of the window to `file`.
    public func screenshot(to file: String) throws {
        guard let base64 = try command("GET", try path("screenshot"), nil) as? String, let data = Data(base64Encoded: base64) else {
            throw DriverError(description: "chromedriver's screenshot is not base64")
        }
        try data.write(to: URL(fileURLWithPath: file))
    }

    /// One request of the performance log: its URL and the URL of the document that made it.
    public struct Request: Sendable, CustomStringConvertible {
        public let url: String
        public let document: String
        public var description: String { "\(url) (from \(document))" }
    }

    /// Every request made since the last call (the performance log's `Network.requestWillBeSent`), whatever its
    /// scheme or outcome, by any page of the browser (chromium's own `chrome://` pages included).
    public func requests() throws -> [Request] {
        let entries = try command("POST", try path("se/log"), ["type": "performance"]) as? [[String: Any]] ?? []
        return entries.compactMap { entry in
            guard let message = entry["message"] as? String,
                let object = try? JSONSerialization.jsonObject(with: Data(message.utf8)) as? [String: Any],
                let inner = object["message"] as? [String: Any], inner["method"] as? String == "Network.requestWillBeSent",
                let parameters = inner["params"] as? [String: Any],
                let url = (parameters["request"] as? [String: Any])?["url"] as? String
            else { return nil }
            return Request(url: url, document: parameters["documentURL"] as? String ?? "")
        }
    }

    private func path(_ command: String) throws -> String {
        guard let session else { throw DriverError(description: "the browser session is closed") }
        return "/session/\(session)/\(command)"
    }

    /// Sends one WebDriver command and returns its `value`; throws chromedriver's error.
    private func command(_ method: String, _ path: String, _ body: [String: Any]?) throws -> Any? {
        var arguments = ["/usr/bin/curl", "-s", "--max-time", "120", "-X", method, "http://127.0.0.1:\(port)\(path)"]
        var input: String?
        if let body {
            arguments += ["-H", "Content-Type: application/json", "--data-binary", "@-"]
            input = String(decoding: try JSONSerialization.data(withJSONObject: body), as: UTF8.self)
        }
        let result = try Shell.run(arguments, input: input)
        guard result.status == 0,
            let answer = try? JSONSerialization.jsonObject(with: Data(result.stdout.utf8), options: [.fragmentsAllowed])
                as? [String: Any]
        else {
            throw DriverError(description: "\(method) \(path): curl exited \(result.status): \(result.stdout.prefix(500))")
        }
        let value = answer["value"]
        if let failure = value as? [String: Any], let error = failure["error"] as? String {
            throw DriverError(description: "\(method) \(path): \(error): \(failure["message"] as? String ?? "")")
        }
        return value
    }

    /// Kills chromedriver's process group (chromium and its helpers with it) and reaps chromedriver.
    private static func killGroup(_ leader: pid_t) {
        _ = Glibc.kill(-leader, SIGKILL)
        Shell.stopIfRunning(leader)
    }
}
