import Foundation
import PinpathTestSupport
import Testing

/// `pinpath request` against httpbin: bodies, parameters, forms, exit codes and bad input.
@Suite(
    "pinpath request", .serialized,
    .enabled(if: HTTPBinServer.isAvailable, Comment(rawValue: HTTPBinServer.unavailableReason)))
final class RequestCommandTests {
    let server: HTTPBinServer
    init() throws { server = try HTTPBinServer() }
    deinit { server.stop() }

    func request(_ arguments: [String]) throws -> Shell.Result { try Shell.run([Shell.pinpath, "request"] + arguments) }
    func url(_ path: String) -> String { server.baseURL.absoluteString + path }

    func json(_ text: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
    }

    @Test("The body goes to stdout; --param follows the method; exit 0")
    func getWithParameters() throws {
        let result = try request([url("get"), "--param", "q=a b", "--param", "n=1"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(try json(result.stdout)["args"] as? [String: String] == ["q": "a b", "n": "1"])
        let posted = try request([url("post"), "-X", "POST", "--param", "q=1"])
        #expect(try json(posted.stdout)["form"] as? [String: String] == ["q": "1"])
    }

    @Test("--form fields are form-urlencoded; a file part makes the whole body multipart")
    func forms() throws {
        let encoded = try request([url("post"), "--form", "a=1", "--form", "b=2"])
        #expect(try json(encoded.stdout)["form"] as? [String: String] == ["a": "1", "b": "2"])
        let scratch = try TemporaryDirectory("form")
        let file = scratch.file("form")
        try "file body".write(toFile: file, atomically: true, encoding: .utf8)
        let multipart = try request([url("post"), "--form", "a=1", "--form", "upload=@\(file)"])
        let echoed = try json(multipart.stdout)
        #expect(echoed["form"] as? [String: String] == ["a": "1"])
        #expect(echoed["files"] as? [String: String] == ["upload": "file body"])
    }

    @Test("--json-body is sent as JSON; --json prints a summary instead of the body")
    func jsonBodyAndSummary() throws {
        let sent = try request([url("post"), "--json-body", #"{"k":[1,2]}"#])
        #expect(try json(sent.stdout)["json"] as? [String: [Int]] == ["k": [1, 2]])
        let summary = try json(try request([url("get"), "--json"]).stdout)
        #expect(summary["status_code"] as? Int == 200)
        #expect(summary["remote_address"] as? String == "127.0.0.1:\(server.port)")
        #expect((summary["phases_ms"] as? [String: Double])?.keys.sorted() == ["connect", "processing", "resolve", "tls", "transfer"])
    }

    @Test("--json always prints one object: the summary (also for a refused status), or the error with its category and exit code")
    func jsonOnFailure() throws {
        let refused = try TLSServer.freePort()
        let failed = try request(["http://user:SECRET@127.0.0.1:\(refused)/?token=SECRET", "--json"])
        #expect(failed.status == 3, "\(failed.stderr)")
        let object = try json(failed.stdout)
        #expect(object["url"] as? String == "http://127.0.0.1:\(refused)/", "\(failed.stdout)")
        let error = try #require(object["error"] as? [String: Any], "\(failed.stdout)")
        #expect(error["category"] as? String == "connect_failed" && error["exit_code"] as? Int == 3, "\(error)")
        #expect((error["message"] as? String)?.hasPrefix("GET http://127.0.0.1:\(refused)/: ") == true, "\(error)")
        #expect(!failed.stdout.contains("SECRET") && !failed.stderr.contains("SECRET"))
        #expect(failed.stderr.hasPrefix("pinpath: error: connect_failed: "), "\(failed.stderr)")

        let usage = try request([url("get"), "-H", "no colon", "--json"])
        #expect(usage.status == 64)
        #expect((try json(usage.stdout)["error"] as? [String: Any])?["category"] as? String == "usage", "\(usage.stdout)")

        let status = try request([url("status/404"), "--json"])
        #expect(status.status == 5)
        #expect(try json(status.stdout)["status_code"] as? Int == 404, "one object, the summary: \(status.stdout)")
    }

    @Test("An unacceptable status still prints the body and exits 5")
    func status() throws {
        let result = try request([url("status/404")])
        #expect(result.status == 5)
        #expect(result.stderr.contains("status 404"))
    }

    @Test(
        "Bad input is a usage error naming it, exit 64",
        arguments: [
            (["not a url"], "not a url"),
            (["ftp://example.com/"], "ftp://"),
            (["URL", "-H", "X-Bad: a\rb"], "X-Bad"),
            (["URL", "-H", "no colon"], "-H #1 (no…) is not"),
            (["URL", "--json-body", "{\"a\":"], "JSON"),
            (["URL", "--form", "f=@/nonexistent/file"], "/nonexistent/file"),
            (["URL", "-d", "x", "--json-body", "{}"], "one body"),
            (["URL", "--pin", "sha256/short"], "sha256/short"),
        ])
    func badInput(_ arguments: [String], _ named: String) throws {
        let result = try request(arguments.map { $0 == "URL" ? url("post") : $0 })
        #expect(result.status == 64, "\(result.stderr)")
        #expect(result.stderr.contains(named), "\(result.stderr)")
        #expect(!result.stderr.contains("Fatal error"))
    }
}
