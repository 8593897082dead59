import Foundation
import PinpathTestSupport
import PinpathYAML
import Testing

/// `pinpath modules --from-blackbox`, run as a user would, on a blackbox_exporter configuration with every module
/// of blackbox_exporter's own example.yml (the same modules and options, values of our own), and on hostile files.
@Suite("pinpath modules --from-blackbox")
struct BlackboxConversionTests {
    /// The modules and options of blackbox_exporter's example.yml (its http, tcp, icmp, dns, unix and websocket
    /// modules), plus a grpc module; `PKI` and `BODY` are replaced by files the test makes.
    static let example = #"""
        modules:
          http_2xx_example:
            prober: http
            timeout: 5s
            http:
              valid_http_versions: ["HTTP/1.1", "HTTP/2.0"]
              valid_status_codes: []
              method: GET
              headers:
                Host: vhost.test.example
                Origin: origin.test.example
              http_headers:
                Accept-Language:
                  values:
                    - "fr-FR"
              follow_redirects: true
              fail_if_ssl: false
              fail_if_not_ssl: false
              fail_if_body_matches_regexp:
                - "database is down"
              fail_if_body_not_matches_regexp:
                - "Welcome aboard"
              fail_if_header_matches:
                - header: Set-Cookie
                  allow_missing: true
                  regexp: '.*'
              fail_if_header_not_matches:
                - header: Access-Control-Allow-Origin
                  regexp: '(\*|origin\.test)'
              tls_config:
                insecure_skip_verify: false
              preferred_ip_protocol: "ip4"
              ip_protocol_fallback: false
          http_with_proxy:
            prober: http
            http:
              proxy_url: "http://127.0.0.1:3129"
              skip_resolve_phase_with_proxy: true
          http_with_proxy_and_headers:
            prober: http
            http:
              proxy_url: "http://127.0.0.1:3129"
              proxy_connect_header:
                Proxy-Authorization:
                  - Bearer proxy-token-do-not-copy
          http_post_2xx:
            prober: http
            timeout: 5s
            http:
              method: POST
              headers:
                Content-Type: application/json
              body: '{"ping":1}'
          http_post_body_file:
            prober: http
            timeout: 5s
            http:
              method: POST
              body_file: "BODY"
          http_basic_auth_example:
            prober: http
            timeout: 5s
            http:
              method: POST
              headers:
                Host: "login.test.example"
              basic_auth:
                username: "prober"
                password: "basic-password-do-not-copy"
          http_json_cel_match:
            prober: http
            timeout: 5s
            http:
              method: GET
              fail_if_body_json_not_matches_cel: "body.state == 'up'"
          http_2xx_oauth_client_credentials:
            prober: http
            timeout: 5s
            http:
              valid_http_versions: ["HTTP/1.1", "HTTP/2"]
              follow_redirects: true
              preferred_ip_protocol: "ip4"
              valid_status_codes:
                - 200
                - 201
              oauth2:
                client_id: "client"
                client_secret: "oauth-secret-do-not-copy"
                token_url: "https://auth.test.example/token"
                endpoint_params:
                  grant_type: "client_credentials"
          http_custom_ca_example:
            prober: http
            http:
              method: GET
              tls_config:
                ca_file: "PKI/root.pem"
          http_gzip:
            prober: http
            http:
              method: GET
              compression: gzip
          http_gzip_with_accept_encoding:
            prober: http
            http:
              method: GET
              compression: gzip
              headers:
                Accept-Encoding: gzip
          tls_connect:
            prober: tcp
            timeout: 5s
            tcp:
              tls: true
          tcp_connect_example:
            prober: tcp
            timeout: 5s
          imap_starttls:
            prober: tcp
            timeout: 5s
            tcp:
              query_response:
                - expect: "OK.*STARTTLS"
                - send: ". STARTTLS"
                - expect: "OK"
                - starttls: true
                - send: ". capability"
                - expect: "CAPABILITY IMAP4rev1"
          smtp_starttls:
            prober: tcp
            timeout: 5s
            tcp:
              query_response:
                - expect: "^220 ([^ ]+) ESMTP (.+)$"
                - send: "EHLO prober\r"
                - expect: "^250-STARTTLS"
                - send: "STARTTLS\r"
                - expect: "^220"
                - starttls: true
                - send: "EHLO prober\r"
                - expect: "^250-AUTH"
                - send: "QUIT\r"
          irc_banner_example:
            prober: tcp
            timeout: 5s
            tcp:
              query_response:
                - send: "NICK prober"
                - send: "USER prober prober prober :prober"
                - expect: "PING :([^ ]+)"
                  send: "PONG ${1}"
                - expect: "^:[^ ]+ 001"
          rabbitmq:
            prober: tcp
            timeout: 30s
            tcp:
              query_response:
                - send: "HELO\r"
                - send: "\r"
                - expect: "AMQP"
              tls: true
              tls_config:
                insecure_skip_verify: false
                ca_file: "PKI/root.pem"
          rabbitmq_insecure:
            prober: tcp
            timeout: 30s
            tcp:
              query_response:
                - send: "HELO\r"
                - expect: "AMQP"
              tls: true
              tls_config:
                insecure_skip_verify: true
                ca_file: "PKI/root.pem"
                cert_file: "PKI/valid.pem"
                key_file: "PKI/valid.key"
                server_name: "amqp.test.example"
          icmp_example:
            prober: icmp
            timeout: 5s
            icmp:
              preferred_ip_protocol: "ip4"
              source_ip_address: "127.0.0.1"
          dns_udp_example:
            prober: dns
            timeout: 5s
            dns:
              query_name: "www.test.example"
              query_type: "A"
              valid_rcodes:
                - NOERROR
          dns_soa:
            prober: dns
            dns:
              query_name: "test.example"
              query_type: "SOA"
          dns_tcp_example:
            prober: dns
            dns:
              transport_protocol: "tcp"
              preferred_ip_protocol: "ip4"
              query_name: "www.test.example"
          unix_socket_ping:
            prober: unix
            timeout: 5s
            unix:
              query_response:
                - send: "PING"
                - expect: "PONG"
          postgresql:
            prober: tcp
            tcp:
              query_response:
              - send: !!binary AAAACATSFi8=
              - expect_bytes: S
              - starttls: true
          http_with_header_from_files:
            prober: http
            http:
              http_headers:
                X-API-Key:
                  files:
                    - /path/to/api-key.txt
          websocket_example_basic_auth:
            prober: websocket
            websocket:
              http_config:
                basic_auth:
                  username: "user"
                  password: "websocket-password-do-not-copy"
              query_response:
                - expect: "^Hello"
          grpc_health:
            prober: grpc
            grpc:
              service: "health"
              tls: true
          http_bearer:
            prober: http
            http:
              bearer_token: "bearer-token-do-not-copy"
              headers:
                X-Api-Key: "header-key-do-not-copy"
              proxy_url: "http://prober:proxy-password-do-not-copy@127.0.0.1:3129"
        """#

    /// What no output may hold: every secret the example writes.
    static let secrets = [
        "proxy-token-do-not-copy", "basic-password-do-not-copy", "oauth-secret-do-not-copy", "websocket-password-do-not-copy",
        "bearer-token-do-not-copy", "header-key-do-not-copy", "proxy-password-do-not-copy",
    ]

    /// The converted output of ``example``, with the directory holding its files.
    struct Converted {
        let directory: TemporaryDirectory
        let input: String
        let result: Shell.Result
        let modules: Node.Mapping
        let root: Node.Mapping
    }

    static func convertExample() throws -> Converted {
        let directory = try TemporaryDirectory("blackbox")
        try Data("{\"ping\":1}".utf8).write(to: URL(filePath: directory.file("body.json")))
        let pki = TestPKI.shared
        let text = example.replacing("PKI/", with: pki.file("")).replacing("\"BODY\"", with: "\"\(directory.file("body.json"))\"")
        let input = directory.file("blackbox.yml")
        try text.write(toFile: input, atomically: true, encoding: .utf8)
        let result = try Shell.run([Shell.pinpath, "modules", "--from-blackbox", input])
        let root = try #require(try Parser(yaml: result.stdout).singleRoot()?.mapping, "\(result.stdout)")
        let modules = try #require(root["modules"]?.mapping, "\(result.stdout)")
        return Converted(directory: directory, input: input, result: result, modules: modules, root: root)
    }

    /// The scalar at `path` (keys from the root mapping down), or nil.
    static func scalar(_ mapping: Node.Mapping?, _ path: String...) -> String? {
        var node: Node? = mapping.map(Node.mapping)
        for key in path { node = node?.mapping?[key] }
        return node?.string
    }

    /// The comment lines of the module `name`: those between the previous module's lines and its key.
    static func comments(of name: String, in output: String) -> [String] {
        let lines = output.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        guard let keyLine = lines.firstIndex(of: "  \(name):") else { return [] }
        return lines[..<keyLine].reversed().prefix { $0.hasPrefix("  # ") }.reversed().map { String($0.dropFirst(4)) }
    }

    @Test("Every http and tcp module of the example converts, in the file's order; other probers are skipped with a comment")
    func modulesAndOrder() throws {
        let converted = try Self.convertExample()
        #expect(converted.result.status == 0, "\(converted.result.stderr)")
        #expect(converted.result.stderr.isEmpty, "\(converted.result.stderr)")
        let names = converted.modules.compactMap(\.key.string)
        #expect(
            names == [
                "http_2xx_example", "http_with_proxy", "http_with_proxy_and_headers", "http_post_2xx", "http_post_body_file",
                "http_basic_auth_example", "http_json_cel_match", "http_2xx_oauth_client_credentials", "http_custom_ca_example",
                "http_gzip", "http_gzip_with_accept_encoding", "tls_connect", "tcp_connect_example", "imap_starttls",
                "smtp_starttls", "irc_banner_example", "rabbitmq", "rabbitmq_insecure", "http_with_header_from_files",
                "http_bearer",
            ])
        let output = converted.result.stdout
        for (module, prober) in [
            ("icmp_example", "icmp"), ("dns_udp_example", "dns"), ("dns_soa", "dns"), ("dns_tcp_example", "dns"),
            ("unix_socket_ping", "unix"), ("websocket_example_basic_auth", "websocket"), ("grpc_health", "grpc"),
        ] {
            #expect(output.contains("  # module \"\(module)\" skipped: prober \"\(prober)\": "), "\(module)")
        }
        // PostgreSQL's STARTTLS (an SSLRequest) is no protocol pinpath speaks.
        #expect(
            output.contains(
                "  # module \"postgresql\" skipped: its query_response upgrades with STARTTLS in a protocol pinpath does not speak"))
        // Deterministic: the same file gives the same bytes.
        let again = try Shell.run([Shell.pinpath, "modules", "--from-blackbox", converted.input])
        #expect(again.stdout == output)
    }

    @Test("Each mapped http option is in the output with pinpath's key and value")
    func httpOptions() throws {
        let converted = try Self.convertExample()
        let modules = converted.modules
        #expect(Self.scalar(modules, "http_2xx_example", "timeout") == "5s")
        #expect(Self.scalar(modules, "http_2xx_example", "method") == "GET")
        #expect(Self.scalar(modules, "http_2xx_example", "headers", "Host") == "vhost.test.example")
        #expect(Self.scalar(modules, "http_2xx_example", "headers", "Origin") == "origin.test.example")
        #expect(Self.scalar(modules, "http_2xx_example", "headers", "Accept-Language") == "fr-FR")
        #expect(Self.scalar(modules, "http_2xx_example", "follow_redirects") == "true")
        #expect(Self.scalar(modules, "http_2xx_example", "ip_family") == "ipv4")
        #expect(Self.scalar(modules, "http_2xx_example", "expect", "body_matches") == "Welcome aboard")
        #expect(Self.scalar(modules, "http_2xx_example", "expect", "headers", "Access-Control-Allow-Origin") == #"/(\*|origin\.test)/"#)
        // An empty valid_status_codes is 2xx, pinpath's default: no status written.
        #expect(Self.scalar(modules, "http_2xx_example", "expect", "status") == nil)
        #expect(modules["http_2xx_example"]?.mapping?["kind"] == nil, "the target's scheme decides, as in blackbox")

        #expect(Self.scalar(modules, "http_with_proxy", "proxy") == "http://127.0.0.1:3129")
        #expect(Self.scalar(modules, "http_post_2xx", "method") == "POST")
        #expect(Self.scalar(modules, "http_post_2xx", "body") == #"{"ping":1}"#)
        #expect(Self.scalar(modules, "http_post_2xx", "headers", "Content-Type") == "application/json")
        #expect(Self.scalar(modules, "http_post_body_file", "body_file") == converted.directory.file("body.json"))
        let statuses = modules["http_2xx_oauth_client_credentials"]?.mapping?["expect"]?.mapping?["status"]
        guard case .sequence(let codes) = statuses else {
            Issue.record("no status list")
            return
        }
        #expect(codes.compactMap(\.string) == ["200", "201"])

        // A CA file is a policy beside the modules, named by the modules that use it (one per file).
        #expect(Self.scalar(modules, "http_custom_ca_example", "policy") == "blackbox-ca-1")
        #expect(Self.scalar(modules, "http_custom_ca_example", "kind") == "https")
        #expect(Self.scalar(converted.root, "policies", "blackbox-ca-1", "ca_file") == TestPKI.shared.path("root"))
        #expect(Self.scalar(converted.root, "policies", "blackbox-ca-1", "mode") == "none")
        #expect(converted.root["policies"]?.mapping?.count == 1)
    }

    @Test("basic_auth, bearer tokens, credential headers and a proxy password become ${NAME}; no secret is copied")
    func secrets() throws {
        let converted = try Self.convertExample()
        let output = converted.result.stdout
        for secret in Self.secrets { #expect(!output.contains(secret), "\(secret)") }
        let modules = converted.modules
        #expect(
            Self.scalar(modules, "http_basic_auth_example", "headers", "Authorization")
                == "Basic ${BLACKBOX_HTTP_BASIC_AUTH_EXAMPLE_AUTHORIZATION}")
        #expect(Self.scalar(modules, "http_bearer", "headers", "Authorization") == "Bearer ${BLACKBOX_HTTP_BEARER_AUTHORIZATION}")
        #expect(Self.scalar(modules, "http_bearer", "headers", "X-Api-Key") == "${BLACKBOX_HTTP_BEARER_X_API_KEY}")
        #expect(
            Self.scalar(modules, "http_with_header_from_files", "headers", "X-API-Key")
                == "${BLACKBOX_HTTP_WITH_HEADER_FROM_FILES_X_API_KEY}")
        #expect(
            Self.scalar(modules, "http_bearer", "proxy")
                == "http://${BLACKBOX_HTTP_BEARER_PROXY_USER}:${BLACKBOX_HTTP_BEARER_PROXY_PASSWORD}@127.0.0.1:3129")
        let comments = Self.comments(of: "http_basic_auth_example", in: output)
        #expect(
            comments.contains { $0.hasPrefix("basic_auth: the secret was not copied: set BLACKBOX_HTTP_BASIC_AUTH_EXAMPLE_AUTHORIZATION") })
    }

    /// Attacker's review of issue 26: `authorization.type` was copied into the header before its `${…}`, so
    /// `type: "${AWS_SECRET_ACCESS_KEY}"` made pinpath send that variable of its own environment; a proxy URL's user
    /// name alone (often a token) was copied as it was.
    @Test("Attack: an authorization type that is not a scheme name writes no header; a proxy's user name alone is read from ${NAME}")
    func authorizationTypeAndProxyUser() throws {
        let directory = try TemporaryDirectory("blackbox")
        let input = directory.file("blackbox.yml")
        try #"""
        modules:
          typed:
            prober: http
            http:
              authorization: { type: "${AWS_SECRET_ACCESS_KEY}", credentials: "typed-token-do-not-copy" }
              method: HEAD
          spaced:
            prober: http
            http:
              authorization: { type: "Bearer x", credentials: "spaced-token-do-not-copy" }
              method: HEAD
          custom:
            prober: http
            http:
              authorization: { type: "Token", credentials: "custom-token-do-not-copy" }
          proxied:
            prober: http
            http:
              proxy_url: "http://proxytoken123@127.0.0.1:3128"
        """#.write(toFile: input, atomically: true, encoding: .utf8)
        let result = try Shell.run([Shell.pinpath, "modules", "--from-blackbox", input])
        #expect(result.status == 0, "\(result.stderr)")
        let output = result.stdout
        let modules = try #require(try Parser(yaml: output).singleRoot()?.mapping?["modules"]?.mapping, "\(output)")
        for name in ["typed", "spaced"] {
            #expect(Self.scalar(modules, name, "headers", "Authorization") == nil, "\(name): \(output)")
            let comments = Self.comments(of: name, in: output)
            #expect(
                comments.contains { $0.hasPrefix("authorization.type: not converted: not an authentication scheme") }, "\(name): \(output)")
        }
        #expect(!output.contains("AWS_SECRET_ACCESS_KEY"), "\(output)")
        #expect(Self.scalar(modules, "custom", "headers", "Authorization") == "Token ${BLACKBOX_CUSTOM_AUTHORIZATION}")
        #expect(Self.scalar(modules, "proxied", "proxy") == "http://${BLACKBOX_PROXIED_PROXY_USER}@127.0.0.1:3128")
        #expect(!output.contains("proxytoken123") && !output.contains("-do-not-copy"), "\(output)")
        #expect(
            Self.comments(of: "proxied", in: output).contains {
                $0.hasPrefix("proxy_url: its user information was not copied: set the user name to BLACKBOX_PROXIED_PROXY_USER")
            }, "\(output)")

        // What pinpath would send: check-config accepts the output, and with the attacker's variable set the typed
        // module has no header that could carry it.
        try output.write(toFile: directory.file("modules.yaml"), atomically: true, encoding: .utf8)
        let checked = try Shell.run([
            "env", "AWS_SECRET_ACCESS_KEY=aws-secret-do-not-send", "BLACKBOX_CUSTOM_AUTHORIZATION=x", "BLACKBOX_PROXIED_PROXY_USER=u",
            Shell.pinpath, "check-config", "--effective", "--config", directory.file("modules.yaml"),
        ])
        #expect(checked.status == 0, "\(checked.stderr)\n\(output)")
        #expect(!checked.stdout.contains("aws-secret") && !checked.stderr.contains("aws-secret"))
    }

    /// The attacker's second review of issue 26: a tcp `send`, an http `body` and headers whose names do not say
    /// "credential" (`X-Pass`, `X-Signature`) were copied with no `targets:`, so the converted modules sent those
    /// secrets to any target a scraper named.
    @Test("Attack: a module that sends a body, a tcp send or a header not known to be harmless gets the placeholder targets: and says why")
    func secretsOutsideHeaders() throws {
        let directory = try TemporaryDirectory("blackbox")
        let input = directory.file("blackbox.yml")
        try #"""
        modules:
          redis_auth:
            prober: tcp
            tcp:
              query_response:
                - send: "AUTH s3cr3t-redis-pass"
                - expect: "OK"
          login:
            prober: http
            http:
              method: POST
              body: "username=mon&password=hunter2"
          odd_headers:
            prober: http
            http:
              headers:
                X-Pass: hunter3
                X-Signature: c2lnbmF0dXJl
                User-Agent: probe
          plain:
            prober: http
            http:
              headers:
                User-Agent: probe
                Accept: text/html
                Cache-Control: no-cache
          banner:
            prober: tcp
            tcp:
              query_response:
                - expect: "SSH-2.0"
        """#.write(toFile: input, atomically: true, encoding: .utf8)
        let result = try Shell.run([Shell.pinpath, "modules", "--from-blackbox", input])
        #expect(result.status == 0, "\(result.stderr)")
        let output = result.stdout
        let modules = try #require(try Parser(yaml: output).singleRoot()?.mapping?["modules"]?.mapping, "\(output)")
        let placeholder = "list-the-hosts-this-module-may-send-credentials-to.invalid"
        for (name, why) in [
            ("redis_auth", "what its query_response sends"), ("login", "a request body"),
            ("odd_headers", #"headers that may hold a secret ("X-Pass", "X-Signature")"#),
        ] {
            var targets: [String]?
            if case .sequence(let items)? = modules[name]?.mapping?["targets"] { targets = items.compactMap(\.string) }
            #expect(targets == [placeholder], "\(name): \(output)")
            #expect(
                Self.comments(of: name, in: output).contains { $0.hasPrefix("targets: blackbox sends this module's \(why) to any target") },
                "\(name): \(output)")
        }
        for name in ["plain", "banner"] {
            #expect(modules[name]?.mapping?["targets"] == nil, "\(name) sends nothing secret: \(output)")
        }
        // check-config accepts the output, and the placeholder admits no target: the secret goes nowhere.
        try output.write(toFile: directory.file("modules.yaml"), atomically: true, encoding: .utf8)
        let checked = try Shell.run([Shell.pinpath, "check-config", "--config", directory.file("modules.yaml")])
        #expect(checked.status == 0, "\(checked.stderr)\n\(output)")
    }

    @Test("tcp: tls: true is a tls module, STARTTLS exchanges smtp and imap, tls_config's files and server name carried over")
    func tcpOptions() throws {
        let converted = try Self.convertExample()
        let modules = converted.modules
        let pki = TestPKI.shared
        #expect(Self.scalar(modules, "tls_connect", "kind") == "tls")
        #expect(Self.scalar(modules, "tls_connect", "timeout") == "5s")
        #expect(Self.scalar(modules, "tcp_connect_example", "kind") == "tcp")
        #expect(Self.scalar(modules, "imap_starttls", "kind") == "imap")
        #expect(Self.scalar(modules, "imap_starttls", "starttls") == "true")
        #expect(Self.scalar(modules, "smtp_starttls", "kind") == "smtp")
        #expect(Self.scalar(modules, "rabbitmq", "kind") == "tls")
        #expect(Self.scalar(modules, "rabbitmq", "timeout") == "30s")
        #expect(Self.scalar(modules, "rabbitmq", "policy") == "blackbox-ca-1", "one policy per CA file")
        #expect(Self.scalar(modules, "rabbitmq_insecure", "client_certificate") == pki.path("valid"))
        #expect(Self.scalar(modules, "rabbitmq_insecure", "client_key") == pki.path("valid", "key"))
        #expect(Self.scalar(modules, "rabbitmq_insecure", "servername") == "amqp.test.example")
        // A plain tcp exchange: the sends before the first expect (each with blackbox's newline), a plain-text expect
        // as the banner; a regular expression is not plain text.
        #expect(Self.scalar(modules, "irc_banner_example", "kind") == "tcp")
        #expect(Self.scalar(modules, "irc_banner_example", "send") == "NICK prober\nUSER prober prober prober :prober\n")
        #expect(Self.scalar(modules, "irc_banner_example", "expect", "banner") == nil)
    }

    @Test("Each option that does not map is a comment at its module saying why")
    func unmappedOptions() throws {
        let output = try Self.convertExample().result.stdout
        let expected: [(module: String, comment: String)] = [
            ("http_2xx_example", "valid_http_versions: not converted: "),
            ("http_2xx_example", "fail_if_body_matches_regexp: not converted: pinpath has no expectation that a body must NOT match"),
            ("http_2xx_example", "fail_if_header_matches: not converted: "),
            ("http_with_proxy", "skip_resolve_phase_with_proxy: not converted: "),
            ("http_with_proxy_and_headers", "proxy_connect_header: not converted: "),
            ("http_json_cel_match", "fail_if_body_json_not_matches_cel: not converted: "),
            ("http_2xx_oauth_client_credentials", "oauth2: not converted: "),
            ("http_2xx_oauth_client_credentials", "valid_http_versions: not converted: "),
            ("http_2xx_oauth_client_credentials", "preferred_ip_protocol: not converted: pinpath does not prefer a family"),
            ("http_gzip", "compression: not converted: "),
            ("imap_starttls", "query_response: kind imap speaks the exchange up to STARTTLS itself"),
            ("irc_banner_example", "query_response: not converted: 2 of its steps"),
            ("rabbitmq", "query_response: not converted: pinpath's tls kind checks the handshake and sends nothing over it"),
            ("rabbitmq_insecure", "tls_config.insecure_skip_verify: not converted: pinpath never skips verification silently"),
        ]
        for (module, comment) in expected {
            #expect(Self.comments(of: module, in: output).contains { $0.hasPrefix(comment) }, "\(module): \(comment)\n\(output)")
        }
        // insecure_skip_verify: false is the default and needs no comment.
        #expect(!Self.comments(of: "rabbitmq", in: output).contains { $0.contains("insecure_skip_verify") })
    }

    /// Every variable the converted example reads, set to a value, and the file run through check-config.
    @Test("check-config accepts the output (needs modules: in the configuration, issue 26's first part)")
    func checkConfigAccepts() throws {
        let converted = try Self.convertExample()
        #expect(converted.result.status == 0)
        let output = converted.directory.file("modules.yaml")
        try converted.result.stdout.write(toFile: output, atomically: true, encoding: .utf8)
        let variables = Set(converted.result.stdout.matches(of: /\$\{([A-Z0-9_]+)\}/).map { String($0.output.1) })
        #expect(!variables.isEmpty)
        let result = try Shell.run(
            ["env"] + variables.sorted().map { "\($0)=placeholder" } + [Shell.pinpath, "check-config", "--config", output])
        #expect(result.status == 0, "\(result.stderr)\n\(converted.result.stdout)")
    }

    @Test("A module name with a newline, ': ', a quote, a control and a bidi override reads back as the same name")
    func hostileNames() throws {
        let directory = try TemporaryDirectory("blackbox")
        let names = ["a: b\nc", "x\" # y", "tab\there\u{7}", "evil\u{202E}txt", "- item", "&anchor", "!!tag", "---"]
        let yaml =
            "modules:\n"
            + names.enumerated().map { index, name in
                "  \(quotedJSON(name)):\n    prober: \(index.isMultiple(of: 2) ? "http" : "icmp")\n"
            }.joined()
        let input = directory.file("hostile.yml")
        try yaml.write(toFile: input, atomically: true, encoding: .utf8)
        let result = try Shell.run([Shell.pinpath, "modules", "--from-blackbox", input])
        #expect(result.status == 0, "\(result.stderr)")
        let modules = try #require(try Parser(yaml: result.stdout).singleRoot()?.mapping?["modules"]?.mapping, "\(result.stdout)")
        #expect(modules.compactMap(\.key.string) == names.enumerated().filter { $0.offset.isMultiple(of: 2) }.map(\.element))
        // Skipped ones are named in comments that stay one line each, controls escaped.
        for line in result.stdout.split(separator: "\n") {
            #expect(!line.unicodeScalars.contains { $0.value < 0x20 || $0 == "\u{202E}" }, "\(line)")
        }
        #expect(result.stdout.contains(#"# module "x\" # y" skipped"#))
    }

    @Test(
        "A file that is not blackbox configuration: exit 65 and one line naming the file and the problem, with the position",
        arguments: [
            ("not YAML", "modules: [\n  - a: b\n  c", "invalid YAML: "),
            ("no modules", "scrape_configs: []\n", "1:1: no modules: here"),
            ("modules not a mapping", "modules: [a, b]\n", "1:10: modules: modules: is not a mapping"),
            ("module not a mapping", "modules:\n  m: 1\n", "2:6: modules: the module \"m\" is not a mapping"),
            ("a scalar", "hello\n", "1:1: the file "),
            (
                "alias bomb",
                "a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\n"
                    + "d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\ne: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\nmodules: {m: [*e, *e, *e]}\n",
                "this alias expands the document past 100000 nodes"
            ),
            (
                "too deep", String(repeating: "[", count: 200) + String(repeating: "]", count: 200) + "\n",
                "1:65: nested deeper than 64 levels"
            ),
        ])
    func unusableFile(what: String, text: String, problem: String) throws {
        let directory = try TemporaryDirectory("blackbox")
        let input = directory.file("bad.yml")
        try text.write(toFile: input, atomically: true, encoding: .utf8)
        let result = try Shell.run([Shell.pinpath, "modules", "--from-blackbox", input])
        #expect(result.status == 65, "\(what): \(result.stderr)")
        #expect(result.stdout.isEmpty, "\(what)")
        #expect(result.stderr.hasPrefix("pinpath: error: \(input):"), "\(what): \(result.stderr)")
        #expect(result.stderr.contains(problem), "\(what): \(result.stderr)")
        #expect(result.stderr.split(separator: "\n").count == 1, "\(what): \(result.stderr)")
    }

    @Test("A missing file, a directory, a device, a binary and a huge file: exit 65 naming the file; no option: usage, 64")
    func unreadableFiles() throws {
        let directory = try TemporaryDirectory("blackbox")
        let binary = directory.file("binary.yml")
        try Data([0x00, 0xFF, 0xFE, 0x01]).write(to: URL(filePath: binary))
        // A sparse file past the 64 MiB a configuration file may have: refused by its size, before any reading.
        let huge = directory.file("huge.yml")
        #expect(FileManager.default.createFile(atPath: huge, contents: nil))
        let handle = try FileHandle(forWritingTo: URL(filePath: huge))
        try handle.truncate(atOffset: 65 << 20)
        try handle.close()
        for (path, message) in [
            (directory.file("missing.yml"), "cannot read the file: No such file or directory"),
            (directory.path, "is a directory"),
            ("/dev/zero", "is a character device"),
            (binary, "not UTF-8 text"),
            (huge, "larger than 64 MiB"),
        ] {
            let result = try Shell.run([Shell.pinpath, "modules", "--from-blackbox", path])
            #expect(result.status == 65, "\(path): \(result.stderr)")
            #expect(result.stderr.hasPrefix("pinpath: error: \(path)") && result.stderr.contains(message), "\(result.stderr)")
        }
        #expect(try Shell.run([Shell.pinpath, "modules"]).status == 64)
    }
}

/// `text` as a JSON string, which YAML reads as a double-quoted scalar: a way to write any name into a fixture.
private func quotedJSON(_ text: String) -> String {
    (try? JSONEncoder().encode(text)).map { String(decoding: $0, as: UTF8.self) } ?? ""
}

/// docs/prometheus.md's scrape configuration, held to Prometheus' own reader: what a user copies must load.
@Suite("docs/prometheus.md")
struct PrometheusDocumentTests {
    /// The ```yaml blocks of docs/prometheus.md, in order.
    static func yamlBlocks() throws -> [String] {
        let text = try String(contentsOfFile: Checkout.file("docs/prometheus.md"), encoding: .utf8)
        return text.components(separatedBy: "```yaml\n").dropFirst().compactMap { $0.components(separatedBy: "```").first }
    }

    @Test(
        "The prometheus.yml shown, with the target files shown where it reads them, passes promtool check config",
        .enabled(if: ExpositionReaders.promtool != nil, "needs promtool (Debian: prometheus)"))
    func scrapeConfiguration() throws {
        let blocks = try Self.yamlBlocks()
        let scrape = try #require(blocks.first { $0.hasPrefix("# prometheus.yml") }, "no prometheus.yml block")
        #expect(scrape.contains("metrics_path: /probe") && scrape.contains("target_label: __param_target"))
        let targets = blocks.filter { $0.hasPrefix("# /etc/prometheus/targets/") }
        #expect(targets.count == 2)
        let directory = try TemporaryDirectory("prometheus-docs")
        // Each target file where its first line says it lives, under the test's directory; promtool reads them
        // through the job's relabelling (a URL is only a valid target once it became __param_target).
        for block in targets {
            let heading = try #require(block.split(separator: "\n").first?.dropFirst(2).split(separator: ":").first)
            let file = URL(filePath: directory.path + heading)
            try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
            try block.write(to: file, atomically: true, encoding: .utf8)
        }
        let configuration = directory.file("prometheus.yml")
        try scrape.replacing("/etc/prometheus/targets/", with: "\(directory.path)/etc/prometheus/targets/")
            .write(toFile: configuration, atomically: true, encoding: .utf8)
        let result = try Shell.run([try #require(ExpositionReaders.promtool), "check", "config", configuration])
        #expect(result.status == 0 && !result.stdout.contains("WARNING"), "\(result.stdout)\(result.stderr)")
    }
}
