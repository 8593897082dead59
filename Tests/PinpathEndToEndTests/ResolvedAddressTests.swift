import Foundation
import PinpathHTTP
import PinpathReachability
import PinpathSecurity
import PinpathTestSupport
import Testing

/// Issue 31, item 7: `request --resolve HOST:PORT:ADDRESS`, `--servername` on https and the library's
/// ``RequestOptions/resolvedAddresses``: the connection goes to another address while SNI, `Host` and the
/// per-host policy keep the name. A real server on 127.0.0.2 with a certificate for `service.test`, a name that
/// resolves nowhere, and one on 127.0.0.1 for a redirect's other host.
@Suite("Connecting to a given address: --resolve and --servername", .serialized)
final class ResolvedAddressTests {
    static let pki = NamesPKI.shared
    static let certificates: (root: String, leaf: String, key: String, otherRoot: String, otherLeaf: String) = {
        try! pki.root("resolve-root")
        try! pki.leaf(
            "resolve-leaf", issuer: "resolve-root", subject: "/CN=service.test",
            extensions: ["subjectAltName=DNS:service.test,DNS:localhost"])
        try! pki.root("resolve-other-root")
        try! pki.leaf(
            "resolve-other-leaf", issuer: "resolve-other-root", subject: "/CN=service.test", extensions: ["subjectAltName=DNS:service.test"]
        )
        return (
            pki.path("resolve-root"), pki.path("resolve-leaf"), pki.path("resolve-leaf", "key"), pki.path("resolve-other-root"),
            pki.path("resolve-other-leaf")
        )
    }()

    /// On 127.0.0.2, whose certificate names service.test and localhost (not 127.0.0.2).
    let pinned: RecordingServer
    /// On 127.0.0.1, same certificate: where a redirect to `localhost` lands.
    let other: RecordingServer

    init() throws {
        let certificate = (leaf: Self.certificates.leaf, key: Self.certificates.key, chain: [String]())
        pinned = try RecordingServer(address: "127.0.0.2", certificate: certificate, directory: Self.pki.directory)
        other = try RecordingServer(address: "127.0.0.1", certificate: certificate, directory: Self.pki.directory)
    }

    deinit {
        pinned.stop()
        other.stop()
    }

    var port: UInt16 { pinned.port }
    var serviceURL: String { "https://service.test:\(port)/" }
    var resolve: [String] { ["--resolve", "service.test:\(port):127.0.0.2"] }

    func request(_ arguments: [String]) throws -> Shell.Result { try Shell.run([Shell.pinpath, "request"] + arguments) }

    func json(_ text: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any], "\(text)")
    }

    func pin(_ certificate: String) throws -> String {
        try #require(try Certificate.certificates(contentsOf: certificate).first).spkiPin.description
    }

    @Test("--resolve connects to the address; SNI, Host and the chain check keep the name, which resolves nowhere")
    func resolveKeepsTheName() throws {
        let result = try request([serviceURL, "--ca-file", Self.certificates.root, "--json"] + resolve)
        #expect(result.status == 0, "\(result.stderr)")
        let summary = try json(result.stdout)
        #expect(summary["remote_address"] as? String == "127.0.0.2:\(port)")
        #expect(summary["url"] as? String == serviceURL)
        let seen = try #require(pinned.requests.first)
        #expect(seen.serverName == "service.test")
        #expect(seen.header("Host") == "service.test:\(port)")
        // Without it the name is resolved, and it resolves nowhere: nothing reaches the server again.
        let unresolved = try request([serviceURL, "--ca-file", Self.certificates.root])
        #expect(unresolved.status == 3, "\(unresolved.stderr)")
        #expect(pinned.requests.count == 1)
    }

    @Test("The name's pins apply with --resolve: a wrong pin for service.test refuses although 127.0.0.2 has no policy")
    func resolveHoldsTheNamesPolicy() throws {
        let wrong = try pin(Self.certificates.otherLeaf)
        let refused = try request([serviceURL, "--ca-file", Self.certificates.root, "--pin", wrong, "--json"] + resolve)
        #expect(refused.status == 1, "\(refused.stderr)")
        let error = try #require(try json(refused.stdout)["error"] as? [String: Any])
        #expect(error["category"] as? String == "policy_rejected", "\(error)")
        #expect(pinned.requests.isEmpty, "no request byte after a refused handshake")
        let right = try pin(Self.certificates.leaf)
        let accepted = try request([serviceURL, "--ca-file", Self.certificates.root, "--pin", right] + resolve)
        #expect(accepted.status == 0, "\(accepted.stderr)")
    }

    @Test("Session: resolvedAddresses with a per-host policy for the name, through the reachability gate")
    func sessionResolvedAddresses() async throws {
        let monitor = try await ReachabilityMonitor.start()
        defer { monitor.stop() }
        let wrong = try SPKIPin(parsing: try pin(Self.certificates.otherLeaf))
        let right = try SPKIPin(parsing: try pin(Self.certificates.leaf))
        func session(pins: [SPKIPin]) throws -> Session {
            let policy = try SecurityPolicy.oneOff(pins: pins)
            return try Session(
                Session.Configuration(
                    policies: HostPolicySet([HostPolicy(patterns: [try HostPattern(parsing: "service.test")], policy: policy)]),
                    trustStore: try TrustStore(caFile: Self.certificates.root)),
                monitor: monitor)
        }
        var options = RequestOptions()
        options.resolvedAddresses = [try ResolvedAddress(parsing: "SERVICE.test:\(port):127.0.0.2")]
        let request = SessionRequest(method: .get, url: try #require(URL(string: serviceURL)))
        let accepting = try session(pins: [right])
        defer { accepting.shutdown() }
        let response = try await accepting.send(request, options: options)
        #expect(response.statusCode == 200)
        #expect(response.remoteAddress == "127.0.0.2:\(port)")
        #expect(response.tls?.evaluation?.host == "service.test")
        let refusing = try session(pins: [wrong])
        defer { refusing.shutdown() }
        await #expect {
            _ = try await refusing.send(request, options: options)
        } throws: { error in
            (error as? HTTPError)?.code == .policyRejected && (error as? HTTPError)?.remoteAddress == "127.0.0.2:\(port)"
        }
        // An entry for another port does not apply: the name is resolved (and resolves nowhere).
        options.resolvedAddresses = [ResolvedAddress(host: "service.test", port: Int(port) + 1, address: IPAddress("127.0.0.2")!)]
        await #expect(throws: HTTPError.self) { _ = try await accepting.send(request, options: options) }
    }

    @Test("A redirect to another host is not pinned: it resolves its own name")
    func redirectIsNotPinned() throws {
        let target = "https://localhost:\(other.port)/landed"
        let encoded = target.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
        let result = try request(
            ["\(serviceURL)redirect?status=302&to=\(encoded)", "--ca-file", Self.certificates.root, "--json"] + resolve)
        #expect(result.status == 0, "\(result.stderr)")
        let summary = try json(result.stdout)
        #expect(summary["remote_address"] as? String == "127.0.0.1:\(other.port)", "\(summary)")
        #expect(summary["redirects"] as? Int == 1)
        #expect(pinned.requests.map(\.path) == ["/redirect?status=302&to=\(encoded)"])
        #expect(other.requests.map(\.path) == ["/landed"])
        #expect(other.requests.first?.serverName == "localhost")
    }

    @Test("--servername on https: SNI, Host and the pins use the name while the connection goes to the URL's host")
    func serverNameOnHTTPS() throws {
        let url = "https://127.0.0.2:\(port)/"
        let named = try request([url, "--servername", "service.test", "--ca-file", Self.certificates.root, "--json"])
        #expect(named.status == 0, "\(named.stderr)")
        #expect(try json(named.stdout)["remote_address"] as? String == "127.0.0.2:\(port)")
        let seen = try #require(pinned.requests.last)
        #expect(seen.serverName == "service.test")
        #expect(seen.header("Host") == "service.test:\(port)")
        // The certificate does not name 127.0.0.2: without --servername the chain check refuses.
        let unnamed = try request([url, "--ca-file", Self.certificates.root])
        #expect(unnamed.status == 2, "\(unnamed.stderr)")
        let wrong = try request([
            url, "--servername", "service.test", "--ca-file", Self.certificates.root, "--pin", try pin(Self.certificates.otherLeaf),
        ])
        #expect(wrong.status == 1, "\(wrong.stderr)")
        #expect(pinned.requests.count == 1)
        let http = try request(["http://127.0.0.2:\(port)/", "--servername", "service.test", "--json"])
        #expect(http.status == 64)
        #expect(
            (try json(http.stdout)["error"] as? [String: Any])?["message"] as? String
                == "--servername is the TLS server name, and a http URL has no TLS; use https")
    }

    @Test("--servername: a redirect back to the server name goes to the URL's host; with --resolve for that host, to its address")
    func serverNameWithRedirectAndResolve() throws {
        let relative = try request([
            "https://127.0.0.2:\(port)/redirect?status=302&to=%2Flanded", "--servername", "service.test", "--ca-file",
            Self.certificates.root, "--json",
        ])
        #expect(relative.status == 0, "\(relative.stderr)")
        #expect(try json(relative.stdout)["remote_address"] as? String == "127.0.0.2:\(port)")
        #expect(pinned.requests.map(\.path) == ["/redirect?status=302&to=%2Flanded", "/landed"])
        #expect(pinned.requests.allSatisfy { $0.serverName == "service.test" && $0.header("Host") == "service.test:\(port)" })
        // curl's --connect-to then --resolve: the URL's host (which resolves nowhere) is connected to at its address.
        let both = try request([
            "https://balancer.test:\(port)/both", "--servername", "service.test", "--resolve", "balancer.test:\(port):127.0.0.2",
            "--ca-file", Self.certificates.root,
        ])
        #expect(both.status == 0, "\(both.stderr)")
        #expect(pinned.requests.last.map { ($0.path, $0.serverName) } ?? ("", nil) == ("/both", "service.test"))
    }

    @Test("An IPv6 address, in brackets or not, is dialled as IPv6")
    func ipv6Address() throws {
        let certificate = (leaf: Self.certificates.leaf, key: Self.certificates.key, chain: [String]())
        let server: RecordingServer
        do {
            server = try RecordingServer(address: "::1", certificate: certificate, directory: Self.pki.directory)
        } catch {
            print("skipped: no IPv6 loopback here (\(error))")
            return
        }
        defer { server.stop() }
        for address in ["[::1]", "::1"] {
            let result = try request([
                "https://service.test:\(server.port)/", "--resolve", "service.test:\(server.port):\(address)", "--ca-file",
                Self.certificates.root, "--json",
            ])
            #expect(result.status == 0, "\(result.stderr)")
            #expect(try json(result.stdout)["remote_address"] as? String == "[::1]:\(server.port)", "\(result.stdout)")
        }
        #expect(server.requests.map(\.serverName) == ["service.test", "service.test"])
    }

    /// A leaf of the same root for the IPv6 loopback as a URL host: `https://[::1]:PORT/` pinned to 127.0.0.2.
    static let ipv6HostLeaf: (leaf: String, key: String) = {
        try! pki.leaf("resolve-ipv6-host", issuer: "resolve-root", subject: "/CN=IPv6 host", extensions: ["subjectAltName=IP:::1"])
        return (pki.path("resolve-ipv6-host"), pki.path("resolve-ipv6-host", "key"))
    }()

    @Test("--resolve for an IPv6 URL host: [::1]:PORT:127.0.0.2 connects to 127.0.0.2, the certificate checked for ::1")
    func ipv6URLHost() throws {
        let server = try RecordingServer(
            address: "127.0.0.2", certificate: (leaf: Self.ipv6HostLeaf.leaf, key: Self.ipv6HostLeaf.key, chain: []),
            directory: Self.pki.directory)
        defer { server.stop() }
        let result = try request([
            "https://[::1]:\(server.port)/", "--resolve", "[::1]:\(server.port):127.0.0.2", "--ca-file", Self.certificates.root, "--json",
        ])
        #expect(result.status == 0, "\(result.stdout) \(result.stderr)")
        #expect(try json(result.stdout)["remote_address"] as? String == "127.0.0.2:\(server.port)", "\(result.stdout)")
        #expect(server.requests.first?.header("Host") == "[::1]:\(server.port)")
    }

    @Test("Session: resolvedAddresses for an IPv6 URL host connect to the address")
    func sessionIPv6URLHost() async throws {
        let server = try RecordingServer(
            address: "127.0.0.2", certificate: (leaf: Self.ipv6HostLeaf.leaf, key: Self.ipv6HostLeaf.key, chain: []),
            directory: Self.pki.directory)
        defer { server.stop() }
        let session = try Session(Session.Configuration(trustStore: try TrustStore(caFile: Self.certificates.root)))
        defer { session.shutdown() }
        var options = RequestOptions()
        options.resolvedAddresses = [try ResolvedAddress(parsing: "[::1]:\(server.port):127.0.0.2")]
        let response = try await session.send(
            SessionRequest(method: .get, url: try #require(URL(string: "https://[::1]:\(server.port)/"))), options: options)
        #expect(response.statusCode == 200)
        #expect(response.remoteAddress == "127.0.0.2:\(server.port)")
    }

    @Test("--pin-file and --mode: the leaf's key passes, another key refuses; --mode certificate takes the anchors from the file")
    func pinFileAndMode() throws {
        let base = [serviceURL, "--ca-file", Self.certificates.root] + resolve
        let byKey = try request(base + ["--pin-file", Self.certificates.leaf])
        #expect(byKey.status == 0, "\(byKey.stderr)")
        let otherKey = try request(base + ["--pin-file", Self.certificates.otherLeaf, "--mode", "public_key"])
        #expect(otherKey.status == 1, "\(otherKey.stderr)")
        #expect(otherKey.stderr.hasPrefix("pinpath: error: policy_rejected: "), "\(otherKey.stderr)")
        let anchored = try request(
            [serviceURL, "--pin-file", Self.certificates.root, "--mode", "certificate"] + resolve)
        #expect(anchored.status == 0, "the pinned root is the anchor, with no --ca-file: \(anchored.stderr)")
        let otherAnchor = try request([serviceURL, "--pin-file", Self.certificates.otherRoot, "--mode", "certificate"] + resolve)
        #expect([1, 2].contains(otherAnchor.status), "\(otherAnchor.stderr)")
        #expect(otherAnchor.status != 0)
        let modeWithoutPins = try request([serviceURL, "--mode", "certificate"] + resolve)
        #expect(modeWithoutPins.status == 64)
        #expect(modeWithoutPins.stderr == "pinpath: error: --mode needs pins: give --pin or --pin-file\n")
        #expect(pinned.requests.count == 2)
    }

    @Test("Through a proxy the address cannot be honoured: refused, exit 64, nothing sent to the proxy or the server")
    func refusedThroughAProxy() throws {
        let proxy = try RecordingServer(directory: Self.pki.directory)
        defer { proxy.stop() }
        let result = try request([serviceURL, "--proxy", proxy.origin, "--ca-file", Self.certificates.root, "--json"] + resolve)
        #expect(result.status == 64, "\(result.stderr)")
        let message = try #require((try json(result.stdout)["error"] as? [String: Any])?["message"] as? String)
        #expect(message.contains("through the proxy") && message.contains("nothing was sent"), "\(message)")
        #expect(proxy.requests.isEmpty && pinned.requests.isEmpty)
    }

    @Test(
        "A malformed --resolve is a usage error naming it, with --json one object",
        arguments: [
            ("", "give the host, its port"), ("service.test", "give the host, its port"),
            ("service.test:443", "give the port and the address"),
            ("service.test:443:", "the address is empty"), (":443:127.0.0.2", "the host is empty"),
            ("service.test:0:127.0.0.2", "not a number from 1 to 65535"), ("service.test:http:127.0.0.2", "not a number from 1 to 65535"),
            ("service.test:443:db.internal", "is not an IPv4 or IPv6 address"), ("*:443:127.0.0.2", "a wildcard host"),
            ("service.test:443:127.0.0.2,127.0.0.3", "give one address"), ("[::1:443:127.0.0.2", "no closing"),
            ("service.test:443:127.0.0.2\u{1B}[31m", "is not an IPv4 or IPv6 address"),
            (
                "service.test:443:::ffff:192.0.2.66",
                "an IPv4-mapped IPv6 address, which goes out over IPv4 while the reachability gate would judge IPv6 routes; write it as 192.0.2.66"
            ),
            ("service.test:443:[::ffff:127.0.0.1]", "write it as 127.0.0.1"),
            ("service.test:443:0.0.0.0", "0.0.0.0 is the unspecified address, which connects to this machine"),
            ("service.test:443:::", ":: is the unspecified address"),
        ])
    func malformed(_ value: String, _ why: String) throws {
        let result = try request([serviceURL, "--resolve", value, "--json"])
        #expect(result.status == 64)
        let object = try json(result.stdout)
        let error = try #require(object["error"] as? [String: Any], "\(result.stdout)")
        #expect(error["category"] as? String == "usage")
        let message = try #require(error["message"] as? String)
        #expect(message.hasPrefix("--resolve \""), "\(message)")
        #expect(message.contains(why), "\(message)")
        #expect(!result.stderr.contains("\u{1B}"), "escaped: \(result.stderr)")
        #expect(result.stderr.split(separator: "\n").count == 1, "\(result.stderr)")
    }

    @Test("An IPv6 address in brackets or bare, and a bracketed IPv6 host, parse; the entry prints as curl writes it")
    func parsing() throws {
        let bracketed = try ResolvedAddress(parsing: "Service.Test.:8443:[::1]")
        #expect(bracketed.host == "service.test" && bracketed.port == 8443 && bracketed.address == IPAddress("::1"))
        #expect(bracketed.description == "service.test:8443:[::1]")
        #expect(try ResolvedAddress(parsing: "service.test:8443:::1") == bracketed)
        let v6Host = try ResolvedAddress(parsing: "[2001:db8::1]:443:192.0.2.1")
        #expect(v6Host.applies(toHost: "[2001:db8::1]", port: 443))
        #expect(!v6Host.applies(toHost: "[2001:db8::1]", port: 444))
    }
}
