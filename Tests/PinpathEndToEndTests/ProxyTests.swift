import Foundation
import PinpathSecurity
import PinpathTestSupport
import Testing

@testable import PinpathHTTP

/// Issue 13, item 5: requests through an HTTP(S) proxy. Each TLS connection is held to the policy of its own
/// host: the origin's inside the CONNECT tunnel, an https proxy's own by the policy matching the proxy's host.
/// The origin (a ``RecordingServer``) and the proxy (a ``ProxyServer``) record what they read, so "no request
/// byte reached the origin" is checked where it would have arrived.
@Suite("Proxies", .serialized)
struct ProxyTests {
    let pki = TestPKI.shared

    func leaf(_ name: String) -> (leaf: String, key: String, chain: [String]) {
        (pki.path(name), pki.path(name, "key"), [pki.path(name == "otherip" ? "otherinter" : name == "rogueip" ? "rogueroot" : "inter")])
    }

    func origin(_ address: String = "127.0.0.1") throws -> RecordingServer {
        try RecordingServer(address: address, certificate: leaf("ip"), directory: pki.directory)
    }

    func session(policies: [HostPolicy] = []) throws -> Session {
        try Session(.init(policies: HostPolicySet(policies), trustStore: try pki.trustStore()))
    }

    func pins(_ names: [String]) throws -> SecurityPolicy {
        try SecurityPolicy(mode: .publicKey, pins: try pki.chain(names).map(\.spkiPin))
    }

    func options(_ proxy: String?, pinned policy: SecurityPolicy? = nil) throws -> RequestOptions {
        var options = RequestOptions()
        options.timeout = TestTime.scaled(.seconds(10))
        options.freshConnection = true
        if let proxy { options.proxies = .through(try Proxy(parsing: proxy)) }
        options.securityPolicy = policy
        return options
    }

    func send(_ session: Session, _ url: String, _ options: RequestOptions) async -> Result<SessionResponse, HTTPError> {
        do throws(HTTPError) {
            return .success(try await session.send(SessionRequest(method: .get, url: URL(string: url)!), options: options))
        } catch {
            return .failure(error)
        }
    }

    // MARK: Through a proxy

    @Test("An https request through an http proxy goes through a CONNECT tunnel, its TLS checked by the origin's pins")
    func tunnel() async throws {
        let origin = try origin()
        let proxy = try ProxyServer(directory: pki.directory)
        let session = try session()
        defer { session.shutdown() }
        let response = try await send(session, "\(origin.origin)/hello", options(proxy.url(), pinned: pins(["inter", "root"]))).get()
        #expect(response.statusCode == 200)
        #expect(proxy.requests.map(\.method) == ["CONNECT"])
        #expect(proxy.requests.first?.target == "127.0.0.1:\(origin.port)")
        #expect(origin.requests.map(\.path) == ["/hello"])
    }

    @Test("An http request through a proxy is forwarded in absolute form")
    func forwarded() async throws {
        let origin = try RecordingServer(directory: pki.directory)
        let proxy = try ProxyServer(directory: pki.directory)
        let session = try session()
        defer { session.shutdown() }
        let response = try await send(session, "\(origin.origin)/plain", options(proxy.url())).get()
        #expect(response.statusCode == 200)
        #expect(proxy.requests == [.init(method: "GET", target: "\(origin.origin)/plain", authorized: false)])
        #expect(origin.requests.map(\.path) == ["/plain"])
    }

    @Test("ATTACK: through a proxy, an origin whose chain misses the pins is refused in the tunnel's handshake; nothing reaches it")
    func wrongPinThroughTunnel() async throws {
        let origin = try origin()
        let proxy = try ProxyServer(directory: pki.directory)
        let session = try session()
        defer { session.shutdown() }
        let result = await send(session, "\(origin.origin)/secret", try options(proxy.url(), pinned: pins(["otherinter", "otherroot"])))
        let error = try #require(result.failureValue)
        #expect(error.code == .policyRejected, "\(error)")
        #expect(error.message.contains("through the proxy \(proxy.url())"), "\(error)")
        #expect(proxy.requests.map(\.method) == ["CONNECT"])  // the tunnel was opened: the check ran inside it
        #expect(origin.requests.isEmpty)
    }

    @Test("ATTACK: an https proxy with an untrusted certificate is refused before CONNECT; nothing reaches the origin")
    func untrustedHTTPSProxy() async throws {
        let origin = try origin()
        let proxy = try ProxyServer(
            mode: .https(leaf: pki.path("rogueip"), key: pki.path("rogueip", "key"), chain: [pki.path("rogueroot")]),
            directory: pki.directory)
        let session = try session()
        defer { session.shutdown() }
        for url in ["\(origin.origin)/secret", "http://127.0.0.1:\(origin.port)/plain"] {
            let error = try #require(await send(session, url, options(proxy.url())).failureValue)
            #expect(error.code == .tlsInvalid, "\(error)")
            #expect(error.message.contains("the proxy \(proxy.url())"), "\(error)")
        }
        #expect(proxy.requests.allSatisfy { $0.method == "ERROR" })  // the TLS handshake failed at the proxy
        #expect(origin.requests.isEmpty)
    }

    @Test("An https proxy with a trusted certificate: its TLS checked by the proxy's host policy, the origin's by the origin's")
    func httpsProxyPolicies() async throws {
        let origin = try origin("::1")  // the origin at ::1, the proxy at 127.0.0.1: a policy for each host
        let proxy = try ProxyServer(
            mode: .https(leaf: pki.path("ip"), key: pki.path("ip", "key"), chain: [pki.path("inter")]), directory: pki.directory)
        // A session with pins for the proxy's host and for the origin's, right (the test PKI's) or wrong.
        func session(proxyPinsRight: Bool, originPinsRight: Bool) throws -> Session {
            let right = try pins(["inter", "root"])
            let wrong = try pins(["otherinter", "otherroot"])
            return try self.session(policies: [
                HostPolicy(patterns: [try HostPattern(parsing: "127.0.0.1")], policy: proxyPinsRight ? right : wrong),
                HostPolicy(patterns: [try HostPattern(parsing: "::1")], policy: originPinsRight ? right : wrong),
            ])
        }

        let rightEverywhere = try session(proxyPinsRight: true, originPinsRight: true)
        defer { rightEverywhere.shutdown() }
        let response = try await send(rightEverywhere, "\(origin.origin)/one", options(proxy.url())).get()
        #expect(response.statusCode == 200)
        // The evaluation reported is the origin's, made for the origin's host.
        #expect(response.tls?.evaluation?.host == "::1")

        // The proxy's pins are wrong: refused at the proxy, whatever the origin's policy says.
        let wrongProxyPins = try session(proxyPinsRight: false, originPinsRight: true)
        defer { wrongProxyPins.shutdown() }
        let refusedAtProxy = try #require(await send(wrongProxyPins, "\(origin.origin)/two", options(proxy.url())).failureValue)
        #expect(refusedAtProxy.code == .policyRejected, "\(refusedAtProxy)")
        #expect(refusedAtProxy.message.contains("the proxy \(proxy.url())"), "\(refusedAtProxy)")
        #expect(refusedAtProxy.refusingProxy?.host == "127.0.0.1" && refusedAtProxy.evaluation?.host == "127.0.0.1")

        // The origin's pins are wrong: the proxy passes, the origin is refused inside the tunnel.
        let wrongOriginPins = try session(proxyPinsRight: true, originPinsRight: false)
        defer { wrongOriginPins.shutdown() }
        let refusedAtOrigin = try #require(await send(wrongOriginPins, "\(origin.origin)/three", options(proxy.url())).failureValue)
        #expect(refusedAtOrigin.code == .policyRejected, "\(refusedAtOrigin)")
        #expect(refusedAtOrigin.evaluation?.host == "::1" && refusedAtOrigin.refusingProxy == nil, "\(refusedAtOrigin)")
        #expect(origin.requests.map(\.path) == ["/one"])
        #expect(proxy.requests.filter { $0.method == "CONNECT" }.count == 2)  // one and three; two stopped at the proxy
    }

    @Test("ATTACK: a proxy answering CONNECT itself with its own TLS for the origin's name is refused; no request is sent to it")
    func impersonatingProxy() async throws {
        let origin = try origin()
        let session = try session()
        defer { session.shutdown() }
        // A certificate the store trusts, for the right address, from another CA: only the pins tell.
        let trusted = try ProxyServer(
            mode: .impersonating(leaf: pki.path("otherip"), key: pki.path("otherip", "key"), chain: [pki.path("otherinter")]),
            directory: pki.directory)
        let pinned = try #require(
            await send(session, "\(origin.origin)/secret", options(trusted.url(), pinned: pins(["inter", "root"]))).failureValue)
        #expect(pinned.code == .policyRejected, "\(pinned)")
        // Without pins, a certificate from an untrusted root fails the chain.
        let untrusted = try ProxyServer(
            mode: .impersonating(leaf: pki.path("rogueip"), key: pki.path("rogueip", "key"), chain: [pki.path("rogueroot")]),
            directory: pki.directory)
        let chain = try #require(await send(session, "\(origin.origin)/secret", options(untrusted.url())).failureValue)
        #expect(chain.code == .tlsInvalid, "\(chain)")
        for proxy in [trusted, untrusted] {
            #expect(proxy.requests.contains { $0.method == "CONNECT" })
            #expect(!proxy.requests.contains { $0.method == "MITM" })  // no request line reached the impersonator
        }
        #expect(origin.requests.isEmpty)
    }

    @Test("Proxy credentials go in Proxy-Authorization and never into a message")
    func credentials() async throws {
        let origin = try origin()
        let proxy = try ProxyServer(credentials: "user:s3cr%t", directory: pki.directory)
        let session = try session()
        defer { session.shutdown() }
        // Percent-encoded in the URL, decoded before it is sent.
        let right = try await send(session, "\(origin.origin)/ok", options(proxy.url(credentials: "user:s3cr%25t"))).get()
        #expect(right.statusCode == 200)
        #expect(proxy.requests.first?.authorized == true)

        let wrong = try #require(
            await send(session, "\(origin.origin)/no", options(proxy.url(credentials: "user:wrongsecret"))).failureValue)
        #expect(!wrong.message.contains("wrongsecret"), "\(wrong)")
        #expect(wrong.message.contains(proxy.url()), "\(wrong)")
        let refused = try #require(
            await send(
                session, "\(origin.origin)/no", options(proxy.url(credentials: "user:s3cr%25t"), pinned: pins(["otherinter", "otherroot"]))
            ).failureValue)
        #expect(!refused.message.contains("s3cr"), "\(refused)")
        #expect(origin.requests.map(\.path) == ["/ok"])
    }

    @Test("pinpath request reads http_proxy and no_proxy itself; --proxy none and no_proxy keep libcurl from using the variable")
    func commandEnvironment() throws {
        let origin = try RecordingServer(directory: pki.directory)
        let proxy = try ProxyServer(directory: pki.directory)
        let url = "\(origin.origin)/env"
        func request(_ environment: [String], _ arguments: [String] = []) throws -> Shell.Result {
            try Shell.run(["/usr/bin/env"] + environment + [Shell.pinpath, "request", url, "--timeout", "10"] + arguments)
        }
        let variable = "http_proxy=\(proxy.url())"
        let through = try request([variable])
        #expect(through.status == 0, "\(through.stderr)")
        #expect(proxy.requests.map(\.target) == [url])
        // Direct: the origin is reachable, so only the proxy's log tells whether libcurl used the variable.
        for (environment, arguments) in [([variable], ["--proxy", "none"]), ([variable, "no_proxy=127.0.0.1"], [])] {
            let direct = try request(environment, arguments)
            #expect(direct.status == 0, "\(direct.stderr)")
        }
        #expect(proxy.requests.count == 1)
        #expect(origin.requests.count == 3)
        // A bad variable is a usage error naming it.
        let bad = try request(["https_proxy=socks5://u:hunter2@127.0.0.1:1"])
        #expect(bad.status == 64, "\(bad.stderr)")
        #expect(bad.stderr.contains("environment variable https_proxy"), "\(bad.stderr)")
        #expect(!bad.stderr.contains("hunter2"))
    }

    /// Found in review (issue 25): `no_proxy` was split at commas only, so `other.test 127.0.0.1` was one entry that
    /// matched nothing, and requests curl sends direct (to internal hosts, with their credentials over plain
    /// http) went to the proxy. The same variables are given to curl, the peer whose rules pinpath follows.
    @Test(
        "no_proxy with entries separated by spaces or tabs: pinpath request and pinpath run go direct as curl does; the proxy sees nothing",
        arguments: ["other.test 127.0.0.1", "other.test\t127.0.0.1", " other.test , 127.0.0.1 "])
    func noProxySeparatedBySpaces(noProxy: String) throws {
        let plain = try RecordingServer(directory: pki.directory)
        let secure = try origin()
        let proxy = try ProxyServer(directory: pki.directory)
        let variables = ["http_proxy=\(proxy.url())", "https_proxy=\(proxy.url())", "no_proxy=\(noProxy)"]

        let curl = try Shell.run(
            ["/usr/bin/env", "-i"] + variables + ["/usr/bin/curl", "-sf", "--max-time", "10", "\(plain.origin)/curl"])
        #expect(curl.status == 0, "\(curl.stderr)")
        for url in ["\(plain.origin)/request", "\(secure.origin)/request"] {
            let result = try Shell.run(
                ["/usr/bin/env"] + variables + [Shell.pinpath, "request", url, "--ca-file", pki.path("store"), "--timeout", "10"])
            #expect(result.status == 0, "\(url): \(result.stderr)")
        }

        let directory = pki.directory + "/no-proxy-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try """
        events: { output: stdout, probes: all }
        policies:
          local: { mode: none, ca_file: \(pki.path("store")) }
        endpoints:
          - { name: plain, url: "\(plain.origin)/agent", timeout: 10s }
          - { name: secure, url: "\(secure.origin)/agent", policy: local, timeout: 10s }

        """.write(toFile: "\(directory)/pinpath.yaml", atomically: true, encoding: .utf8)
        let summary = try Shell.run(
            ["/usr/bin/env"] + variables + [Shell.pinpath, "check-config", "--config", "\(directory)/pinpath.yaml"])
        #expect(summary.stdout.contains("no_proxy other.test,127.0.0.1 (environment)"), "\(summary.stdout)\(summary.stderr)")
        let run = try Shell.run(["/usr/bin/env"] + variables + [Shell.pinpath, "run", "--once", "--config", "\(directory)/pinpath.yaml"])
        #expect(run.status == 0, "\(run.stdout)\(run.stderr)")

        #expect(proxy.requests.isEmpty, "the proxy saw \(proxy.requests)")
        #expect(plain.requests.map(\.path) == ["/curl", "/request", "/agent"])
        #expect(secure.requests.map(\.path) == ["/request", "/agent"])
    }

    @Test("With the proxy's port closed, the request fails to connect and names the proxy")
    func proxyDown() async throws {
        let port = try TLSServer.freePort()
        let session = try session()
        defer { session.shutdown() }
        let error = try #require(await send(session, "https://127.0.0.1:1/", options("http://127.0.0.1:\(port)")).failureValue)
        #expect(error.code == .connectFailed, "\(error)")
        #expect(error.message.contains("through the proxy http://127.0.0.1:\(port)"), "\(error)")
    }
}

extension Result {
    var failureValue: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
