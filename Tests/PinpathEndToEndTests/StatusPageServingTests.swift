import Foundation
import PinpathTestSupport
import Testing

/// Issue 27 items 2-4: the status page's files as `pinpath run` serves them (curl, no browser): their headers, their
/// weight, and what they may contain (nothing from elsewhere, no markup sink in the script).
@Suite("The status page's files and headers")
struct StatusPageServingTests {
    static let files = [
        (path: "/", type: "text/html; charset=utf-8"), (path: "/status.css", type: "text/css; charset=utf-8"),
        (path: "/status.js", type: "text/javascript; charset=utf-8"),
    ]

    /// An agent with one endpoint and the listener, and the three files as it serves them.
    final class Served {
        let directory: TemporaryDirectory
        let listen: String
        let agent: pid_t
        var answers: [String: MetricsEndpointTests.Answer] = [:]

        init() throws {
            directory = try TemporaryDirectory("status-page-files")
            listen = "127.0.0.1:\(try TLSServer.freePort())"
            try """
            events: { output: \(directory.file("events.jsonl")) }
            metrics: { listen: "\(listen)" }
            endpoints:
              - { name: api, url: "https://localhost:9/", interval: 60s }
            """.write(toFile: directory.file("pinpath.yaml"), atomically: true, encoding: .utf8)
            let devNull = open("/dev/null", O_WRONLY)
            defer { close(devNull) }
            agent = try Shell.spawn([Shell.pinpath, "run", "--config", directory.file("pinpath.yaml")], stdout: devNull)
            let deadline = ContinuousClock.now + .seconds(20)
            while try MetricsEndpointTests.fetch(listen, "/healthz")?.status != 200 {
                guard ContinuousClock.now < deadline else { throw ShellError(description: "pinpath run did not listen on \(listen)") }
                usleep(100_000)
            }
            for file in StatusPageServingTests.files {
                answers[file.path] = try MetricsEndpointTests.fetch(listen, file.path)
            }
        }

        deinit { Shell.kill(agent) }
    }

    @Test("/, /status.css and /status.js: their types, a CSP allowing only the agent, nosniff, no-store; HEAD has no body")
    func headers() throws {
        let served = try Served()
        for file in Self.files {
            let answer = try #require(served.answers[file.path], "\(file.path)")
            #expect(answer.status == 200, "\(file.path)")
            #expect(answer.headers["content-type"] == file.type, "\(file.path)")
            #expect(answer.headers["x-content-type-options"] == "nosniff", "\(file.path)")
            #expect(answer.headers["cache-control"] == "no-store", "\(file.path)")
            let policy = try #require(answer.headers["content-security-policy"], "\(file.path)")
            let directives = Dictionary(
                policy.split(separator: ";").map { directive in
                    let words = directive.split(separator: " ").map(String.init)
                    return (words[0], Array(words.dropFirst()))
                }, uniquingKeysWith: { first, _ in first })
            #expect(directives["default-src"] == ["'self'"], "\(policy)")
            for kind in ["script-src", "style-src", "img-src", "connect-src"] {
                #expect(directives[kind] == ["'self'"], "\(kind): \(policy)")
            }
            for kind in ["object-src", "frame-ancestors", "base-uri", "form-action"] {
                #expect(directives[kind] == ["'none'"], "\(kind): \(policy)")
            }
            #expect(!policy.contains("unsafe"), "\(policy)")
            let head = try #require(try MetricsEndpointTests.fetch(served.listen, file.path, ["-I"]))
            #expect(head.status == 200 && head.body.isEmpty && head.headers["content-length"] == answer.headers["content-length"])
        }
    }

    @Test(
        "ATTACK (DNS rebinding): on a loopback listener a request naming another host is answered 421 on every route but /healthz, and counted; loopback names are served"
    )
    func rebindingRefused() throws {
        let served = try Served()
        let port = served.listen.split(separator: ":").last.map(String.init) ?? ""
        // What a browser sends once an attacker's name resolves to 127.0.0.1: its own name as Host.
        for host in ["evil.example:\(port)", "evil.example", "127.0.0.1.evil.example:\(port)", "localhost.evil.example"] {
            for path in ["/", "/status.js", "/api/v1/status", "/metrics", "/probe?module=m&target=x"] {
                let answer = try #require(try MetricsEndpointTests.fetch(served.listen, path, ["-H", "Host: \(host)"]), "\(host) \(path)")
                #expect(answer.status == 421, "\(host) \(path): \(answer.status)")
                #expect(!answer.body.contains("endpoints") && !answer.body.contains("pinpath_"), "\(host) \(path)")
            }
            #expect(try MetricsEndpointTests.fetch(served.listen, "/healthz", ["-H", "Host: \(host)"])?.status == 200)
        }
        for host in ["127.0.0.1:\(port)", "localhost:\(port)", "LOCALHOST.", "[::1]:\(port)", "127.1.2.3"] {
            #expect(try MetricsEndpointTests.fetch(served.listen, "/api/v1/status", ["-H", "Host: \(host)"])?.status == 200, "\(host)")
        }
        let metrics = try #require(try MetricsEndpointTests.fetch(served.listen, "/metrics")).body
        #expect(metrics.contains(#"pinpath_metrics_auth_failures_total{reason="host"} 20"#), "\(metrics)")
    }

    @Test("The page weighs at most 100 KB and loads nothing from elsewhere: no outside URL, no inline script or style, no markup sink")
    func contents() throws {
        let served = try Served()
        let bodies = Self.files.map { served.answers[$0.path]?.body ?? "" }
        let weight = bodies.reduce(0) { $0 + $1.utf8.count }
        print("status page weight: \(weight) bytes (HTML \(bodies[0].utf8.count), CSS \(bodies[1].utf8.count), JS \(bodies[2].utf8.count))")
        #expect(weight > 0 && weight <= 100 * 1024)
        let (html, css, script) = (bodies[0], bodies[1], bodies[2])

        // Nothing from elsewhere: the only absolute URL is SVG's namespace, a name no browser fetches.
        for (name, body) in [("index.html", html), ("status.css", css), ("status.js", script)] {
            let urls = body.ranges(of: /(https?:|wss?:|ftp:)?\/\/[A-Za-z0-9.\-]+\.[A-Za-z]{2,}/).map { String(body[$0]) }
            #expect(urls.allSatisfy { $0 == "http://www.w3.org" }, "\(name): \(urls)")
        }
        #expect(!css.contains("@import") && !css.contains("url(") && !css.contains("@font-face"))
        // The HTML's script and style are files of the agent; no inline script, handler or style attribute.
        let scripts = html.ranges(of: /<script[^>]*>/).map { String(html[$0]) }
        #expect(scripts == [#"<script src="/status.js" defer>"#], "\(scripts)")
        #expect(html.contains(#"<link rel="stylesheet" href="/status.css">"#))
        #expect(html.firstRange(of: /\son[a-z]+\s*=/) == nil && html.firstRange(of: /\sstyle\s*=/) == nil && !html.contains("<style"))
        // The script builds text nodes only: no sink that parses markup or code (its comment lines name them).
        let code = script.split(separator: "\n").filter { !$0.trimmingCharacters(in: .whitespaces).hasPrefix("//") }.joined(separator: "\n")
        for sink in ["innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "Function(", "srcdoc", ".href", ".src"] {
            #expect(!code.contains(sink), "status.js uses \(sink)")
        }
        #expect(code.firstRange(of: /setAttribute\(\s*["'](on|href|src|style)/) == nil)
    }
}
