import Foundation

/// Every behaviour of the hostile-server kit behind an agent endpoint: the servers, the endpoints' YAML and
/// the `error_category` each endpoint's probes must end with. Used by the hostile agent tests and the soak.
///
/// Two endpoints share one certificate-switching server, pinned to the first chain only: whichever connects
/// first passes, the other is `policy_rejected` (``switchingEndpoints``), so the pins ran on both connections.
public final class HostileAgentScene {
    /// One endpoint of the scene.
    public struct Endpoint: Sendable {
        public var name: String
        public var url: String
        /// The policy's name in ``policiesYAML``, or `nil` for none.
        public var policy: String?
        /// The category every probe must end with; `nil` when it depends on the order of connections.
        public var expectedCategory: String?
    }

    public private(set) var servers: [HostileServer] = []
    public private(set) var endpoints: [Endpoint] = []
    /// The two endpoints on the switching server.
    public let switchingEndpoints = ["switching-a", "switching-b"]
    /// The entries of `policies:` the endpoints name (`test-ca`, `inter-pin`), indented for that mapping.
    public let policiesYAML: String

    /// Starts one server per behaviour (15 endpoints on 14 servers).
    public init(pki: TestPKI) throws {
        let good = HostileServer.TLSIdentity(certificate: pki.path("ip"), key: pki.path("ip", "key"), chain: [pki.path("inter")])
        let other = try pki.otherIPLeaf()
        var bare = good
        bare.chain = []
        policiesYAML = """
              test-ca:
                mode: none
                ca_file: \(pki.path("store"))
              inter-pin:
                mode: public_key
                pins: ["\(try pki.certificate("inter").spkiPin)"]
                require_backup_pin: false
                ca_file: \(pki.path("store"))

            """
        // name, server, scheme, policy, expected error_category
        let table: [(String, HostileServer.Behaviour, String, String?, String)] = [
            ("silent", .silent, "http", nil, "timed_out"),
            ("slowloris", .slowloris, "http", nil, "timed_out"),
            ("header-flood", .headerFlood, "http", nil, "protocol_error"),
            ("huge-body", .hugeBody(announced: true), "http", nil, "protocol_error"),
            ("huge-chunked-body", .hugeBody(announced: false), "http", nil, "protocol_error"),
            ("malformed-status", .malformedStatusLine("HTTP/1.1 two hundred OK"), "http", nil, "protocol_error"),
            ("not-http", .malformedStatusLine("SSH-2.0-OpenSSH_9.2"), "http", nil, "protocol_error"),
            ("oversized-header", .oversizedHeader, "http", nil, "protocol_error"),
            ("reset", .resetMidResponse, "http", nil, "protocol_error"),
            ("tls-alert", .tlsAlert, "https", "test-ca", "tls_failed"),
            ("tls-alert-after-handshake", .tlsAlertAfterHandshake(good), "https", "test-ca", "tls_failed"),
            (
                "fifty-certificates", .manyCertificates(bare, filler: try HostileServer.fillerCertificates(count: 49, in: pki.directory)),
                "https", "test-ca", "tls_invalid"
            ),
            ("refused", .refuse, "http", nil, "connect_failed"),
        ]
        do {
            for (name, behaviour, scheme, policy, category) in table {
                let server = try HostileServer(behaviour, directory: pki.directory)
                servers.append(server)
                endpoints.append(
                    Endpoint(name: name, url: "\(scheme)://127.0.0.1:\(server.port)/", policy: policy, expectedCategory: category))
            }
            let switching = try HostileServer(
                .switchingCertificates(
                    good, HostileServer.TLSIdentity(certificate: other.certificate, key: other.key, chain: [pki.path("otherinter")])),
                directory: pki.directory)
            servers.append(switching)
            for name in switchingEndpoints {
                endpoints.append(
                    Endpoint(name: name, url: "https://127.0.0.1:\(switching.port)/", policy: "inter-pin", expectedCategory: nil))
            }
        } catch {
            stop()
            throw error
        }
    }

    deinit { stop() }

    /// The endpoints as entries of `endpoints:`.
    public func endpointsYAML(interval: String, timeout: String) -> String {
        endpoints.map { endpoint in
            "  - name: \(endpoint.name)\n    url: \(endpoint.url)\n    timeout: \(timeout)\n    interval: \(interval)\n"
                + (endpoint.policy.map { "    policy: \($0)\n" } ?? "")
        }.joined()
    }

    /// Stops every server (joins their threads, closes their sockets). Safe to call twice.
    public func stop() { for server in servers { server.stop() } }
}

extension TestPKI {
    /// A leaf for IP 127.0.0.1 under the other trusted root (`otherinter`): valid, but with different pins.
    public func otherIPLeaf() throws -> (certificate: String, key: String) {
        let certificate = file("otherip.pem")
        let key = file("otherip.key")
        if !FileManager.default.fileExists(atPath: certificate) {
            try Shell.check([
                "/bin/bash", "-c",
                """
                set -e; cd "$1"
                openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out otherip.key
                openssl req -new -key otherip.key -subj /CN=OtherLoopback -out otherip.csr
                printf 'basicConstraints=CA:false\\nkeyUsage=digitalSignature\\nextendedKeyUsage=serverAuth\\nsubjectAltName=IP:127.0.0.1\\n' > otherip.ext
                openssl x509 -req -in otherip.csr -CA otherinter.pem -CAkey otherinter.key -CAcreateserial -days 365 -sha256 \
                  -extfile otherip.ext -out otherip.pem 2>/dev/null
                """,
                "otherip", directory,
            ])
        }
        return (certificate, key)
    }
}
