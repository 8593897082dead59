import Foundation
import PinpathTestSupport
import Testing

/// Issue 27 item 2-5: the status page `GET /` of `pinpath run`, loaded in Debian's chromium (headless, driven by
/// chromedriver) while the agent probes real TLS servers (`openssl s_server`) on loopback.
@Suite(
    "The status page in headless chromium", .serialized,
    .enabled(if: HeadlessChromium.isInstalled, "chromium and chromium-driver are not installed (scripts/packages.sh installs them)"))
struct StatusPageBrowserTests {
    /// An agent whose listener serves the page, with the endpoints of `yaml` (the `endpoints:` key and what follows).
    final class Scene {
        let directory: TemporaryDirectory
        let listen: String
        var agent: pid_t = 0

        init(_ endpoints: String, files: [String: String] = [:], directory: TemporaryDirectory? = nil) throws {
            self.directory = try directory ?? TemporaryDirectory("status-page")
            listen = "127.0.0.1:\(try TLSServer.freePort())"
            for (name, text) in files {
                try FileManager.default.createDirectory(
                    atPath: (self.directory.file(name) as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
                try text.write(toFile: self.directory.file(name), atomically: true, encoding: .utf8)
            }
            try """
            events: { output: \(self.directory.file("events.jsonl")) }
            policies:
              local: { mode: none, hosts: ["localhost"], ca_file: \(TestPKI.shared.path("store")) }
            metrics:
              listen: "\(listen)"
            \(endpoints)
            """.write(toFile: self.directory.file("pinpath.yaml"), atomically: true, encoding: .utf8)
            let devNull = open("/dev/null", O_WRONLY)
            defer { close(devNull) }
            agent = try Shell.spawn([Shell.pinpath, "run", "--config", self.directory.file("pinpath.yaml")], stdout: devNull)
            try awaitListener()
        }

        var origin: String { "http://\(listen)" }

        private func awaitListener() throws {
            let deadline = ContinuousClock.now + .seconds(20)
            while try MetricsEndpointTests.fetch(listen, "/healthz")?.status != 200 {
                guard ContinuousClock.now < deadline else { throw ShellError(description: "pinpath run did not listen on \(listen)") }
                usleep(100_000)
            }
        }

        /// The status document as the agent serves it now.
        func status() throws -> [String: Any] {
            let answer = try #require(try MetricsEndpointTests.fetch(listen, "/api/v1/status"))
            return try #require(try JSONSerialization.jsonObject(with: Data(answer.body.utf8)) as? [String: Any])
        }

        deinit { if agent > 0 { Shell.kill(agent) } }
    }

    /// A script returning `{name: state word}` for every row of the table, shown or not.
    static let statesByName = """
        const states = {};
        for (const row of document.querySelectorAll('#endpoint-rows tr')) {
          states[row.querySelector('button.open').textContent] = row.querySelector('.cell-state').textContent;
        }
        return states;
        """

    /// An expression: the row named `name` (its name button's text), or undefined.
    static func row(_ name: String) -> String {
        "[...document.querySelectorAll('#endpoint-rows tr')].find(r => r.querySelector('button.open').textContent === \(quoted(name)))"
    }

    /// An expression: whether the row named `name` shows the state word `state`.
    static func shows(_ name: String, _ state: String) -> String {
        "(\(row(name))?.querySelector('.cell-state').textContent === \(quoted(state)))"
    }

    /// `text` as a JavaScript string literal (JSON's quoting is JavaScript's).
    static func quoted(_ text: String) -> String {
        let array = String(decoding: (try? JSONSerialization.data(withJSONObject: [text])) ?? Data("[\"\"]".utf8), as: UTF8.self)
        return String(array.dropFirst().dropLast())
    }

    /// Where the README's screenshot goes when `PINPATH_STATUS_SCREENSHOT` names a file (docs/images/status-page.png).
    static func saveScreenshot(_ browser: HeadlessChromium, in directory: TemporaryDirectory) throws {
        let file = directory.file("status-page.png")
        try browser.screenshot(to: file)
        print("status page screenshot: \(file)")
        if let wanted = ProcessInfo.processInfo.environment["PINPATH_STATUS_SCREENSHOT"], !wanted.isEmpty {
            try? FileManager.default.removeItem(atPath: wanted)
            try FileManager.default.copyItem(atPath: file, toPath: wanted)
            print("status page screenshot copied to \(wanted)")
        }
    }

    /// The requests that went anywhere but the agent. Left out: what chromium's own pages ask (its new tab page
    /// loads in the background, `documentURL` `chrome://…`), and `chrome://` URLs, the browser's built-in resources
    /// (a search field's clear button), which a web page cannot load and which never leave the browser. Anything
    /// else counts (`http`, `https`, `ws`, `data:`, ...).
    static func foreignRequests(_ browser: HeadlessChromium, origin: String) throws -> [HeadlessChromium.Request] {
        try browser.requests().filter { request in
            !request.url.hasPrefix(origin + "/") && !request.url.hasPrefix("chrome://") && !request.document.hasPrefix("chrome://")
        }
    }

    @Test(
        "Every endpoint is listed with its state; a server that stops shows down and then up again without a reload; only the agent is asked"
    )
    func followsServersWithoutReloading() async throws {
        let directory = try TemporaryDirectory("status-page")
        let alpha = try MetricsEndpointTests.Scene.startServer(in: directory.path, port: nil)
        var beta: TLSServer? = try MetricsEndpointTests.Scene.startServer(in: directory.path, port: nil)
        let betaPort = beta!.port
        defer {
            alpha.stop()
            beta?.stop()
        }
        let interval = 5
        let scene = try Scene(
            """
            endpoints:
              - { name: alpha, url: "https://localhost:\(alpha.port)/", policy: local, interval: \(interval)s, timeout: 2s, failure_threshold: 1 }
              - { name: beta, url: "https://localhost:\(betaPort)/", policy: local, interval: \(interval)s, timeout: 2s, failure_threshold: 1 }
            """, directory: directory)
        let browser = try HeadlessChromium(width: 1280, height: 1300)
        defer { browser.close() }
        try browser.load(scene.origin + "/")
        try await browser.wait(
            "both endpoints up", timeout: .seconds(30), for: "return " + Self.shows("alpha", "up") + " && " + Self.shows("beta", "up"),
            describe: Self.statesByName)
        #expect(try browser.evaluate(Self.statesByName) as? [String: String] == ["alpha": "up", "beta": "up"])
        // A mark in the page's window: a reload would lose it.
        try browser.evaluate("window.__loadedOnce = 'yes'; return true;")

        beta?.stop()
        beta = nil
        let stopped = ContinuousClock.now
        // Two probe intervals: one for the probe that fails, one for the page's refresh (agent.refresh_ms, 5 s
        // here); 5 s more for a loaded machine's scheduling (a bound on a hang, the time is printed).
        try await browser.wait(
            "beta down", timeout: .seconds(2 * interval + 5), for: "return " + Self.shows("beta", "down"), describe: Self.statesByName)
        print("status page: beta shown down \(ContinuousClock.now - stopped) after its server stopped")
        #expect(try browser.evaluate("return " + Self.shows("alpha", "up")) as? Bool == true)
        // The state is a word and a colour: the row's state cell carries the class of its colour.
        #expect(
            try browser.evaluate("return \(Self.row("beta")).querySelector('.state').className;") as? String == "state state-down")

        // The detail of alpha (chain, policy, chart) for the README's picture.
        try browser.evaluate("\(Self.row("alpha")).querySelector('button.open').click(); return true;")
        try await browser.wait(
            "alpha's detail", timeout: .seconds(10),
            for: "return !document.getElementById('detail').hidden && document.querySelectorAll('#detail-body svg circle').length > 0")
        let chainText = try browser.evaluate("return document.getElementById('detail-body').textContent;") as? String ?? ""
        #expect(chainText.contains("CN=localhost") || chainText.contains("localhost"), "\(chainText)")
        try browser.evaluate("window.scrollTo(0, 0); return true;")
        try Self.saveScreenshot(browser, in: directory)

        let restarted = try MetricsEndpointTests.Scene.startServer(in: directory.path, port: betaPort)
        defer { restarted.stop() }
        let started = ContinuousClock.now
        try await browser.wait(
            "beta up again", timeout: .seconds(2 * interval + 5), for: "return " + Self.shows("beta", "up"), describe: Self.statesByName)
        print("status page: beta shown up \(ContinuousClock.now - started) after its server came back")
        #expect(try browser.evaluate("return window.__loadedOnce;") as? String == "yes", "the page was reloaded")
        let foreign = try Self.foreignRequests(browser, origin: scene.origin)
        #expect(foreign.isEmpty, "requests to elsewhere than the agent: \(foreign)")
    }

    /// A leaf for `localhost` under the test CA whose subject and other names carry markup that sets
    /// `window.__pwned` and loads from `watched` if a browser ever took them as HTML.
    static func hostileLeaf(in directory: TemporaryDirectory, watched: String) throws -> (certificate: String, key: String) {
        try """
        [req]
        prompt = no
        distinguished_name = dn
        [dn]
        CN = <img src=\(watched)/cn onerror=window.__pwned=1>
        O = \\"><script>window.__pwned=2</script>
        [ext]
        basicConstraints = CA:false
        keyUsage = digitalSignature, keyEncipherment
        extendedKeyUsage = serverAuth
        subjectAltName = @names
        [names]
        DNS.1 = localhost
        DNS.2 = <img src=\(watched)/san onerror=window.__pwned=3>
        DNS.3 = \\"><script>window.__pwned=4</script>
        """.write(toFile: directory.file("hostile.cnf"), atomically: true, encoding: .utf8)
        let key = directory.file("hostile.key")
        let certificate = directory.file("hostile.pem")
        try Shell.check([
            "/usr/bin/openssl", "req", "-new", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-config", directory.file("hostile.cnf"),
            "-out", directory.file("hostile.csr"),
        ])
        try Shell.check([
            "/usr/bin/openssl", "x509", "-req", "-in", directory.file("hostile.csr"), "-CA", TestPKI.shared.path("inter"), "-CAkey",
            TestPKI.shared.path("inter", "key"), "-set_serial", "4242", "-days", "400", "-extfile", directory.file("hostile.cnf"),
            "-extensions", "ext", "-out", certificate,
        ])
        return (certificate, key)
    }

    @Test(
        "Markup in an endpoint name (from an included file), a certificate subject and its SANs is shown as text: nothing runs, nothing is fetched"
    )
    func hostileTextIsShownLiterally() async throws {
        let directory = try TemporaryDirectory("status-page-xss")
        // The listener a payload would load from: it must see no request.
        let watched = try RecordingServer(directory: directory.path)
        defer { watched.stop() }
        let leaf = try Self.hostileLeaf(in: directory, watched: watched.origin)
        let server = try TLSServer(
            certificate: leaf.certificate, key: leaf.key, chain: [TestPKI.shared.path("inter")], in: directory.path)
        defer { server.stop() }
        let names = [
            "<img src=\(watched.origin)/name onerror=window.__pwned=5>",
            "\"><script>window.__pwned=6</script><img src=\(watched.origin)/name2>",
        ]
        let included =
            "endpoints:\n"
            + names.map { "  - { name: '\($0)', url: \"https://localhost:\(server.port)/\", interval: 5s, timeout: 2s }\n" }.joined()
        let scene = try Scene(
            """
            include: conf.d/*.yaml
            endpoints:
              - { name: plain, url: "https://localhost:\(server.port)/", interval: 5s, timeout: 2s }
            """, files: ["conf.d/hostile.yaml": included], directory: directory)

        let browser = try HeadlessChromium()
        defer { browser.close() }
        try browser.load(scene.origin + "/")
        // Every row has its certificate's days, then the detail of the first hostile name is opened.
        try await browser.wait(
            "three rows with certificates", timeout: .seconds(30),
            for: "return [...document.querySelectorAll('#endpoint-rows .cell-days')].filter(c => c.textContent !== '').length === 3",
            describe: Self.statesByName)
        // The second row (configuration order: the main file's, then the included file's), found by place, not text.
        try browser.evaluate("document.querySelectorAll('#endpoint-rows button.open')[1].click(); return true;")
        try await browser.wait(
            "the detail's chain", timeout: .seconds(10), for: "return document.querySelectorAll('#detail-body table').length >= 2")

        // Shown literally: the name buttons' text is the configured name, and the detail holds every outside string
        // of the document as text.
        let shown = try browser.evaluate("return [...document.querySelectorAll('button.open')].map(b => b.textContent);") as? [String]
        #expect(shown == ["plain"] + names)
        let document = try scene.status()
        let endpoint = try #require((document["endpoints"] as? [[String: Any]])?.first { $0["name"] as? String == names[0] })
        let certificate = try #require(endpoint["certificate"] as? [String: Any], "\(endpoint)")
        let subject = try #require(certificate["subject"] as? String)
        let sans = try #require(certificate["sans"] as? [String])
        // The subject as RFC 2253 writes it (`\<script\>`): its markup is there all the same.
        #expect(subject.contains("<img src=") && subject.contains("script\\>window.__pwned=2"), "\(subject)")
        #expect(sans.contains { $0.contains("<img src=") } && sans.contains { $0.contains("<script>") }, "\(sans)")
        let detail = try #require(try browser.evaluate("return document.getElementById('detail-body').textContent;") as? String)
        for text in [subject] + sans { #expect(detail.contains(text), "not shown literally: \(text)") }
        #expect(try browser.evaluate("return document.getElementById('detail-title').textContent;") as? String == names[0])

        // Nothing ran, no element was made from the text, nothing was fetched.
        #expect(try browser.evaluate("return typeof window.__pwned;") as? String == "undefined")
        #expect(try browser.evaluate("return document.querySelectorAll('img').length;") as? Int == 0)
        #expect(try browser.evaluate("return document.scripts.length;") as? Int == 1)
        let foreign = try Self.foreignRequests(browser, origin: scene.origin)
        #expect(foreign.isEmpty, "requests to elsewhere than the agent: \(foreign)")
        #expect(watched.requests.isEmpty, "the watched listener was asked: \(watched.requests.map(\.path))")
    }

    @Test("1,000 endpoints: one row each, filtered by name and by state, sorted by state and by certificate days left")
    func thousandEndpoints() async throws {
        let directory = try TemporaryDirectory("status-page-many")
        let localhost = LocalhostPKI.shared
        // Three kinds of rows: a leaf valid until 2045, an expired leaf (down, its days negative) and no TLS at all.
        let valid = try MetricsEndpointTests.Scene.startServer(in: directory.path, port: nil)
        let expired = try TLSServer(
            certificate: localhost.path("expired"), key: localhost.path("expired", "key"), chain: [TestPKI.shared.path("inter")],
            in: directory.path)
        let plain = try RecordingServer(directory: directory.path)
        defer {
            valid.stop()
            expired.stop()
            plain.stop()
        }
        func name(_ index: Int) -> String { "api-" + String(index + 10000).dropFirst() }
        var yaml = "endpoints:\n"
        for index in 0..<1000 {
            let url =
                switch index % 10 {
                case 0, 1, 2: "https://localhost:\(expired.port)/"
                case 3: "\(plain.origin)/"
                default: "https://localhost:\(valid.port)/"
                }
            yaml += "  - { name: \(name(index)), url: \"\(url)\", interval: 20s, timeout: 10s, failure_threshold: 1 }\n"
        }
        let scene = try Scene(yaml, directory: directory)
        let browser = try HeadlessChromium()
        defer { browser.close() }
        try browser.load(scene.origin + "/")
        try await browser.wait(
            "1,000 rows with a first probe", timeout: .seconds(120),
            for:
                "return [...document.querySelectorAll('#endpoint-rows .cell-probe')].filter(c => c.textContent !== '' && c.textContent !== 'never').length === 1000",
            describe: "return document.getElementById('tally').textContent")
        #expect(try browser.evaluate("return document.querySelectorAll('#endpoint-rows tr').length;") as? Int == 1000)
        // The page's renderings of the document so far (the first builds the rows, the others update them in place).
        let renderings = try browser.evaluate(
            "return performance.getEntriesByName('pinpath-render').map(e => Math.round(e.duration * 10) / 10);")
        print("status page: rendering 1,000 endpoints took (ms, first to last) \(renderings ?? "?")")

        // Filtered by a name: that row alone.
        let filtered = try browser.evaluate(
            """
            const input = document.getElementById('filter-name');
            input.value = 'api-0421';
            input.dispatchEvent(new Event('input'));
            return [...document.querySelectorAll('#endpoint-rows tr')].map(r => r.querySelector('button.open').textContent);
            """)
        #expect(filtered as? [String] == ["api-0421"])
        // Filtered by state: the expired leaves' endpoints are the ones down.
        let down =
            try browser.evaluate(
                """
                const input = document.getElementById('filter-name');
                input.value = '';
                input.dispatchEvent(new Event('input'));
                const state = document.getElementById('filter-state');
                state.value = 'down';
                state.dispatchEvent(new Event('change'));
                const names = [...document.querySelectorAll('#endpoint-rows tr')].map(r => r.querySelector('button.open').textContent);
                state.value = '';
                state.dispatchEvent(new Event('change'));
                return names;
                """) as? [String]
        #expect(down == (0..<1000).filter { $0 % 10 < 3 }.map(name))

        // Sorted by days left: expired first (configuration order among equals), then 2045, then no certificate.
        let timed =
            try browser.evaluate(
                """
                const sort = document.getElementById('sort');
                const start = performance.now();
                sort.value = 'days';
                sort.dispatchEvent(new Event('change'));
                const elapsed = performance.now() - start;
                return {elapsed, names: [...document.querySelectorAll('#endpoint-rows tr')].map(r => r.querySelector('button.open').textContent)};
                """) as? [String: Any]
        let byDays = timed?["names"] as? [String]
        let expectedByDays =
            (0..<1000).filter { $0 % 10 < 3 }.map(name) + (0..<1000).filter { $0 % 10 > 3 }.map(name)
            + (0..<1000).filter { $0 % 10 == 3 }.map(name)
        #expect(byDays == expectedByDays)
        print("status page: sorting 1,000 rows by days left took \(timed?["elapsed"] ?? "?") ms in the page")
        // Sorted by state: down first, then up.
        let byState =
            try browser.evaluate(
                """
                const sort = document.getElementById('sort');
                sort.value = 'state';
                sort.dispatchEvent(new Event('change'));
                return [...document.querySelectorAll('#endpoint-rows tr')].map(r => r.querySelector('.cell-state').textContent);
                """) as? [String]
        #expect(byState == Array(repeating: "down", count: 300) + Array(repeating: "up", count: 700), "\(Set(byState ?? []))")
    }

    @Test("A certificate whose names exceed the document's budget: each SAN shown in its own item, then \"… and N more names\"")
    func cutListsAreCounted() async throws {
        let directory = try TemporaryDirectory("status-page-cut")
        let inflated = try StatusAPITests.inflatedCertificate()
        let server = try TLSServer(
            certificate: inflated.certificate, key: inflated.key, chain: [inflated.certificate, inflated.certificate], in: directory.path)
        defer { server.stop() }
        // No policy: the system store refuses the chain, and the document shows the leaf as served.
        let scene = try Scene(
            "endpoints:\n  - { name: inflated, url: \"https://127.0.0.1:\(server.port)/\", interval: 1s, timeout: 900ms }",
            directory: directory)
        let browser = try HeadlessChromium()
        defer { browser.close() }
        try browser.load(scene.origin + "/")
        try await browser.wait(
            "the row's certificate", timeout: .seconds(30),
            for: "return [...document.querySelectorAll('#endpoint-rows .cell-days')].filter(c => c.textContent !== '').length === 1",
            describe: Self.statesByName)
        try browser.evaluate("document.querySelectorAll('#endpoint-rows button.open')[0].click(); return true;")
        try await browser.wait(
            "the detail's names", timeout: .seconds(10), for: "return document.querySelectorAll('#detail-body ul.sans li').length > 0")

        let certificate = try #require(
            (try scene.status()["endpoints"] as? [[String: Any]])?.first?["certificate"] as? [String: Any], "no certificate")
        let sans = try #require(certificate["sans"] as? [String])
        let omitted = try #require(certificate["sans_omitted"] as? Int)
        #expect(omitted > 0)
        let items = try #require(
            try browser.evaluate("return [...document.querySelectorAll('#detail-body ul.sans li')].map(li => li.textContent);") as? [String]
        )
        #expect(items == sans + ["… and \(omitted) more names"])
    }

    @Test("A 30-day interval: the page asks again after a minute at the most, not continuously (setTimeout past 2^31-1 ms)")
    func longIntervalDoesNotPollContinuously() async throws {
        let closed = try TLSServer.freePort()
        let scene = try Scene("endpoints:\n  - { name: monthly, url: \"http://127.0.0.1:\(closed)/\", interval: 30d }")
        #expect((try scene.status()["agent"] as? [String: Any])?["refresh_ms"] as? Int == 60_000)
        let browser = try HeadlessChromium()
        defer { browser.close() }
        try browser.load(scene.origin + "/")
        try await browser.wait(
            "a first document", timeout: .seconds(20),
            for: "return document.body.dataset.generatedAt !== undefined && document.body.dataset.generatedAt !== ''")
        let first = try browser.evaluate("return document.body.dataset.generatedAt;") as? String
        // The agent shares a document for a second: a page polling without pause shows a newer one within 3 s.
        try await Task.sleep(for: .seconds(3))
        let later = try browser.evaluate("return document.body.dataset.generatedAt;") as? String
        #expect(first == later, "the page fetched again within 3 s: \(first ?? "-") then \(later ?? "-")")
        let fetches =
            try browser.evaluate(
                "return performance.getEntriesByType('resource').filter(e => e.name.endsWith('/api/v1/status')).length;") as? Int
        #expect(fetches == 1)
    }
}
