import ArgumentParser
import FoundationEssentials
import Glibc
import PinpathHTTP
import PinpathReachability
import PinpathSecurity
import PinpathSerialization
import PinpathSupport

struct RequestCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "request",
        abstract: "Make one HTTP(S) request through the gated core: reachability first, the pin check in the TLS handshake.",
        discussion: """
            The response body goes to standard output; --json prints a summary object instead (status, headers, \
            timings, remote address, TLS version and the verified chain's pins), or, when no response came, \
            {"url":…,"error":{"category":…,"message":…,"exit_code":N}} (category as in the agent's events).
            Redirects are followed (up to 10) unless --no-redirects; a redirect from https to http is refused \
            unless --allow-insecure-redirect, and a redirect to another origin keeps only Accept, \
            Accept-Encoding, Accept-Language, User-Agent, Content-Type and Content-Length of the -H headers, \
            and one that would send the body there again (307, 308) is refused, unless --location-trusted. The \
            pins, --pin-file, --mode, --profile and --max-depth apply to the URL's host (or --servername) only (other \
            hosts get the auto profile); \
            every host is verified against --ca-file or the system store. -v prints on standard error which \
            profile the URL's chain was held to and why.
            Through a proxy (--proxy, or the environment's), the reachability gate checks the proxy's address; \
            an https URL goes through a CONNECT tunnel and its TLS is still checked against the pins, and an \
            https proxy's own certificate is verified as any host's is.
            --resolve HOST:PORT:ADDRESS and --servername move only the connection (to ADDRESS, or to the URL's \
            host); the name checked stays HOST (or the server name), and the reachability check judges where the \
            connection goes. A redirect to another host or port is not affected. Neither can be honoured through a \
            proxy, which connects to the name itself: such a request is refused (exit 64; add --proxy none).
            -o FILE writes the body to FILE instead of standard output: into a partial file beside it \
            (.FILE.pinpath-partial, with its record .FILE.pinpath-partial.json), synced and renamed over FILE only \
            once complete, of the announced length and, with --sha256 HEX, of that SHA-256. A failed or \
            interrupted download leaves FILE as it was (absent, or the old file) and keeps the partial file when \
            it can be resumed (the server sent a strong ETag or a Last-Modified, and a length; otherwise it is \
            removed): --continue resumes it (Range from its length, If-Range with the validator it was started \
            under; a server that ignores the range or whose file changed starts it again from the first byte). A \
            partial file or record that is not yours (another user's, as in a shared or sticky directory, a hard \
            link, or readable by others) is never resumed: it is removed, or, when it cannot be, the download is \
            refused (exit 73). A dropped connection is resumed up to 3 times within one run. Without --timeout a \
            download has no total time limit (30s for the head, and a body that sends nothing for 30s fails); \
            --timeout bounds the whole download. Every connection of a download, a \
            resumption, a reconnection and a redirect to a mirror included, passes the reachability gate and the \
            pins again. FILE, its partial file and record must be absent or regular files (not a directory, a \
            symbolic link or a FIFO): checked before anything is sent. -o - is refused (leave out -o to write \
            to standard output). With -o, a progress bar is drawn on standard error when it is a terminal and \
            --json is not given; --json adds a "download" object (path, bytes, resumed, resumed_from, \
            restarted, reconnections, sha256) to the summary.
            -T FILE (--upload-file) sends FILE's bytes as the body (method PUT unless -X; Content-Type \
            application/octet-stream unless -H sets one), streamed from disk: FILE must be a regular file (a \
            directory, a FIFO or a device is refused, exit 64, before anything is sent), and one that grows or \
            shrinks while it is sent fails (exit 64, unreadable_file). With -T, a progress bar of the bytes sent \
            is drawn on standard error when it is a terminal and --json is not given. -T goes with -o (the file \
            uploaded, the answer downloaded; the bar then shows the download), not with -d, --json-body or --form.
            Exit codes: 0 accepted response (2xx) (with -o: the file in place and checked), 1 rejected by the \
            pins, 2 TLS chain or host name invalid, \
            a certificate revoked (category revoked), or a refused redirect (https to http, or a body to another \
            origin), 3 connection error or timeout, 4 not reachable (nothing was sent), 5 status not acceptable \
            (with -o: nothing written), 6 the body is not as expected (--sha256 mismatch: digest_mismatch; a \
            Content-Range other than the range asked for: invalid_response), 64 usage, 73 the -o file cannot be \
            created (not a regular file, directory missing or not writable, another user's partial file in the way; \
            nothing was sent), 74 writing the -o \
            file failed (a full disk: ENOSPC).
            """)

    @Argument(help: "An absolute http or https URL.")
    var url: String

    @Option(name: .customShort("X"), help: ArgumentHelp("The method (default GET, or POST when a body is given).", valueName: "method"))
    var method: String?

    @Option(name: .customShort("H"), help: ArgumentHelp("A header, 'Name: value' (repeatable).", valueName: "header"))
    var header: [String] = []

    @Option(
        name: .customShort("d"),
        help: ArgumentHelp("A request body, sent as given (form-urlencoded unless -H sets Content-Type).", valueName: "data"))
    var data: String?

    @Option(help: "A JSON request body (checked first; sent as application/json).")
    var jsonBody: String?

    @Option(help: "A form field k=v, or a file part k=@path (repeatable); a file makes the body multipart/form-data.")
    var form: [String] = []

    @Option(
        name: [.customShort("T"), .customLong("upload-file")],
        help: ArgumentHelp(
            "Send this file's bytes as the body, streamed from disk (application/octet-stream unless -H sets Content-Type; PUT unless -X).",
            valueName: "file"))
    var uploadFile: String?

    @Option(help: "A parameter k=v (repeatable): in the query string for GET, HEAD and DELETE, form-encoded in the body otherwise.")
    var param: [String] = []

    @OptionGroup var pinOptions: PinOptions

    @OptionGroup var revocationOptions: RevocationOptions

    @Option(help: "Trust only the certificates in this PEM file instead of the system store.")
    var caFile: String?

    @OptionGroup var profileOptions: ProfileOptions

    @OptionGroup var clientCertificate: ClientCertificateOptions

    @Option(
        help: """
            The name to send as SNI and in Host, and to check the certificate and the pins against, while the connection \
            goes to the URL's host (default: the URL's host).
            """)
    var servername: String?

    @Option(
        name: .customLong("resolve"),
        help: ArgumentHelp(
            """
            Connect to ADDRESS (an IPv4 or IPv6 address) for requests to HOST:PORT, as curl's --resolve (repeatable); \
            SNI, Host and the pins still use HOST, and the reachability check judges ADDRESS.
            """, valueName: "host:port:address"))
    var resolve: [ResolvedAddress] = []

    @Option(
        help: """
            The total time allowed: 30s, 1500ms, 2m, or a number of seconds (2.5). Default 30s; with -o the default \
            is no total (30s for the response's head and for each stall of the body), and a value given bounds the \
            whole download, every reconnection included.
            """)
    var timeout: Duration?

    @Option(help: "When the target is not reachable, wait up to this long for the network (10s, or seconds) instead of failing at once.")
    var waitForConnectivity: Duration?

    @Option(
        help: ArgumentHelp(
            "A proxy, http://host:port or https://host:port (user:password@ allowed), or 'none' to connect directly "
                + "(default: https_proxy/HTTPS_PROXY, http_proxy and no_proxy/NO_PROXY from the environment).",
            valueName: "url|none"))
    var proxy: String?

    @Flag(help: "Do not follow redirects.")
    var noRedirects = false

    @Flag(help: "Follow a redirect from https to http (credential headers are still not sent over http).")
    var allowInsecureRedirect = false

    @Flag(
        help:
            "Send the -H headers and the body to other origins a redirect leads to too, credentials included (curl's --location-trusted).")
    var locationTrusted = false

    @Flag(help: "Print a JSON summary instead of the body.")
    var json = false

    @Flag(name: .shortAndLong, help: "Print on standard error how the URL's TLS chain was verified: the profile applied and why.")
    var verbose = false

    @Option(
        name: [.customShort("o"), .customLong("output")],
        help: ArgumentHelp("Write the body to this file (created or replaced only once complete and checked).", valueName: "file"))
    var output: String?

    @Flag(name: .customLong("continue"), help: "With -o: resume the partial file an interrupted download of this URL left.")
    var resumeDownload = false

    @Option(
        name: .customLong("sha256"),
        help: ArgumentHelp("With -o: the body's SHA-256 (64 hexadecimal digits); another digest fails (exit 6).", valueName: "hex"))
    var expectedSHA256: String?

    func validate() throws {
        try ArgumentRefusal.checking { () throws(CommandFailure) in
            guard [data != nil, jsonBody != nil, !form.isEmpty, uploadFile != nil].filter({ $0 }).count <= 1 else {
                throw CommandFailure.usage("give one body: -d, --json-body, --form or -T")
            }
            if let timeout, timeout <= .zero {
                throw CommandFailure.usage("--timeout must be more than 0 (5s, 1500ms, or a number of seconds)")
            }
            if let waitForConnectivity, waitForConnectivity < .zero {
                throw CommandFailure.usage("--wait-for-connectivity must be 0 or more (10s, 1500ms, or a number of seconds)")
            }
            try validateDownload()
        }
    }

    /// The refusals of -o, --continue and --sha256.
    private func validateDownload() throws(CommandFailure) {
        guard let output else {
            if resumeDownload { throw CommandFailure.usage("--continue resumes a download to a file: give -o FILE") }
            if expectedSHA256 != nil { throw CommandFailure.usage("--sha256 checks a download to a file: give -o FILE") }
            return
        }
        guard output != "-" else {
            throw CommandFailure.usage("-o - is not supported: leave out -o to write the body to standard output")
        }
        guard !output.isEmpty else { throw CommandFailure.usage("-o needs a file name") }
        if let method, method.uppercased() == "HEAD" {
            throw CommandFailure.usage("-o writes a response body, and a HEAD response has none: use GET")
        }
        let sendsBody = data != nil || jsonBody != nil || !form.isEmpty || uploadFile != nil
        if resumeDownload, sendsBody || (method.map { $0.uppercased() != "GET" } ?? false) {
            throw CommandFailure.usage("--continue resumes a GET download (Range applies to GET alone): leave out the body or -X")
        }
        if let expectedSHA256, DownloadOptions.normalizedSHA256(expectedSHA256) == nil {
            throw CommandFailure.usage(
                "--sha256 \"\(UntrustedText.escaped(expectedSHA256, limit: 80))\" is not a SHA-256: give 64 hexadecimal digits (sha256sum's first column)"
            )
        }
    }

    func run() async throws {
        if let output {
            try await runDownload(to: output)
            return
        }
        let (request, response): (SessionRequest, SessionResponse)
        // -T's bar (with -o the bar shows the download instead).
        let bar = uploadFile != nil ? ProgressBar.ifWanted(json: json) : nil
        do {
            (request, response) = try await send(uploadBar: bar)
        } catch let failure as CommandFailure where json {
            // With --json, standard output always holds one object: the summary, or what went wrong.
            try? writeOutput(Self.failureSummary(failure, url: url).encoded() + "\n")
            throw failure
        }
        if json {
            try writeOutput(Self.summary(response).encoded() + "\n")
        } else {
            try writeOutput(response.body)
        }
        guard (200..<300).contains(response.statusCode) else {
            let status = "status \(response.statusCode) is not acceptable (200-299)"
            throw CommandFailure.request(5, category: .unexpectedStatus, "\(request.method) \(request.displayURL): \(status)")
        }
    }

    /// `-o FILE`: the download, its progress bar, and the summary with `--json`.
    private func runDownload(to output: String) async throws {
        do {
            let request = try buildRequest()
            // Refused before anything is sent (73): not a regular file, or another user's partial file that cannot
            // be removed. The library checks again when it starts.
            let target: DownloadDestination
            do throws(HTTPError) {
                target = try DownloadDestination(checking: output)
            } catch {
                throw CommandFailure.request(73, category: error.code, error.message)
            }
            let (configuration, options) = try sessionSetup(for: request.url)
            let monitor = try? await ReachabilityMonitor.start()  // without netlink, requests go ungated
            defer { monitor?.stop() }
            let session = try Self.session(configuration, monitor: monitor)
            let bar = ProgressBar.ifWanted(json: json)
            // The digest only when it is checked or shown (--json): it costs CPU time comparable to the transfer's.
            // --timeout, when given, is the whole download's; otherwise it takes what it takes (stalls still end it).
            var download = DownloadOptions(
                resume: resumeDownload, expectedSHA256: expectedSHA256, computesSHA256: json, timeout: timeout)
            if let bar { download.progress = { bar.update(bytes: $0.bytes, expected: $0.expectedBytes) } }
            let result: DownloadResult
            do throws(HTTPError) {
                result = try await session.download(request, to: output, options: options, download: download)
                bar?.finish()
                if verbose { Self.printVerification(result.response.tls?.evaluation) }
            } catch {
                bar?.finish()
                if verbose { Self.printVerification(error.evaluation) }
                // The library keeps a partial file only when it can be resumed: say how.
                let resumable = access(target.partialPath, F_OK) == 0 ? " (--continue)" : ""
                throw CommandFailure.request(Self.downloadExitCode(for: error.code), category: error.code, error.message + resumable)
            }
            if let warning = Self.ocspWarning(result.response) {
                try? LineOutput(descriptor: STDERR_FILENO).write(UntrustedText.escapedLines(["pinpath: warning: \(warning)"]))
            }
            if json { try writeOutput(Self.downloadSummary(result).encoded() + "\n") }
        } catch let failure as CommandFailure where json {
            try? writeOutput(Self.failureSummary(failure, url: url).encoded() + "\n")
            throw failure
        }
    }

    /// The exit code of a failed download: the request's, and the file's own (6, 74).
    static func downloadExitCode(for code: HTTPError.Code) -> Int32 {
        switch code {
        case .digestMismatch, .invalidResponse: return 6
        case .output: return 74
        case .usage: return 64
        default: return exitCode(for: code)
        }
    }

    /// The `--json` summary of a download: the response's, and a `download` object.
    static func downloadSummary(_ result: DownloadResult) -> JSONValue {
        let download = JSONValue.object([
            ("path", .string(result.path)), ("bytes", .int(Int(result.bytes))), ("resumed", .bool(result.resumedFrom != nil)),
            ("resumed_from", result.resumedFrom.map { .int(Int($0)) } ?? .null), ("restarted", .bool(result.restarted)),
            ("reconnections", .int(result.reconnections)), ("sha256", .string(result.sha256)),
        ])
        guard case .object(var members) = summary(result.response) else { return download }
        // The head's body is empty: the body's length is the file's.
        members = members.map { $0.0 == "body_bytes" ? ($0.0, .int(Int(result.bytes))) : $0 }
        members.append(("download", download))
        return .object(members)
    }

    /// A session for the request; a libcurl that cannot be used is exit 69.
    private static func session(_ configuration: Session.Configuration, monitor: ReachabilityMonitor?) throws -> Session {
        do throws(HTTPError) {
            return try Session(configuration, monitor: monitor)
        } catch {
            throw CommandFailure.unavailable(error.message)
        }
    }

    /// Sends the request; `uploadBar` shows the bytes of the body sent, and is cleared before anything else is
    /// printed.
    private func send(uploadBar: ProgressBar?) async throws -> (SessionRequest, SessionResponse) {
        let request = try buildRequest()
        var (configuration, options) = try sessionSetup(for: request.url)
        if let uploadBar { options.progress = { uploadBar.update(bytes: $0.sentBytes, expected: $0.expectedSentBytes) } }
        let monitor = try? await ReachabilityMonitor.start()  // without netlink, requests go ungated
        defer { monitor?.stop() }
        let session = try Self.session(configuration, monitor: monitor)
        let response: SessionResponse
        do throws(HTTPError) {
            response = try await session.send(request, options: options)
            uploadBar?.finish()
            if verbose { Self.printVerification(response.tls?.evaluation) }
        } catch {
            uploadBar?.finish()
            if verbose { Self.printVerification(error.evaluation) }
            // The category first, as the agent's events name it: scripts match it, people read the rest.
            throw CommandFailure.request(Self.exitCode(for: error.code), category: error.code, error.message)
        }
        if let warning = Self.ocspWarning(response) {
            try? LineOutput(descriptor: STDERR_FILENO).write(UntrustedText.escapedLines(["pinpath: warning: \(warning)"]))
        }
        return (request, response)
    }

    private func buildRequest() throws -> SessionRequest {
        var headers = HeaderFields()
        for (index, field) in header.enumerated() {
            guard let colon = field.firstIndex(of: ":") else {
                let name = Self.headerNameHint(field).map { " (\($0)…)" } ?? ""
                throw CommandFailure.usage("-H #\(index + 1)\(name) is not 'Name: value': put a colon after the name")
            }
            let name = field[..<colon]
            // `Authorization Basic user:pass` has a colon too: its "name" is the credential, refused here by position.
            guard !name.isEmpty, name.unicodeScalars.allSatisfy(Self.isHeaderNameScalar) else {
                let shown = Self.headerNameHint(field).map { " (\($0)…)" } ?? ""
                throw CommandFailure.usage(
                    "-H #\(index + 1)\(shown) has no header name before its colon (letters, digits and !#$%&'*+-.^_`|~ only)")
            }
            headers.add(name: String(name), value: String(field[field.index(after: colon)...].drop { $0 == " " }))
        }
        let hasBody = data != nil || jsonBody != nil || !form.isEmpty
        let method = RequestMethod(rawValue: self.method ?? (uploadFile != nil ? "PUT" : hasBody ? "POST" : "GET"))
        let parameters = try Self.pairs(param, option: "--param")
        do throws(HTTPError) {
            if let data {
                guard parameters.isEmpty || method.encodesParametersInURL else {
                    throw HTTPError(.invalidBody, "--param cannot go into the body together with -d; put them in the URL or the data")
                }
                let target = try HTTPRequestSerializer().request(method, url, parameters: parameters, headers: headers)
                return try HTTPRequestSerializer().request(method, target.url.absoluteString, body: Array(data.utf8), headers: headers)
            }
            if let uploadFile {
                guard parameters.isEmpty || method.encodesParametersInURL else {
                    throw HTTPError(.invalidBody, "--param cannot go into the body together with -T; put them in the URL")
                }
                let target = try HTTPRequestSerializer().request(method, url, parameters: parameters, headers: headers)
                // Checked and measured now (exit 64 naming it, nothing sent); streamed while sending.
                return try HTTPRequestSerializer().request(
                    method, target.url.absoluteString, bodyFromFile: uploadFile, headers: headers)
            }
            if let jsonBody {
                guard parameters.isEmpty || method.encodesParametersInURL else {
                    throw HTTPError(.invalidBody, "--param cannot go into the body together with --json-body")
                }
                let target = try HTTPRequestSerializer().request(method, url, parameters: parameters, headers: headers)
                return try JSONRequestSerializer().request(method, target.url.absoluteString, jsonText: jsonBody, headers: headers)
            }
            if !form.isEmpty {
                var fields = parameters
                var multipart = MultipartFormData()
                var hasFile = false
                for (index, field) in form.enumerated() {  // in the order given: multipart parts keep it
                    // Named by position, as -H and --param: a field typed without its name is often a token.
                    guard let equals = field.firstIndex(of: "="), equals != field.startIndex else {
                        throw HTTPError(.invalidBody, "--form #\(index + 1) is not k=v or k=@file: put a name before the '='")
                    }
                    let name = String(field[..<equals])
                    let text = String(field[field.index(after: equals)...])
                    if text.hasPrefix("@") {
                        hasFile = true
                        try multipart.appendFile(name: name, path: String(text.dropFirst()))
                    } else {
                        fields[name] = .string(text)
                        multipart.append(name: name, value: text)
                    }
                }
                guard !method.encodesParametersInURL else {
                    throw HTTPError(.invalidBody, "--form needs a method with a body (POST, PUT, PATCH), not \(method)")
                }
                if hasFile {
                    return try HTTPRequestSerializer().multipartRequest(
                        method, url, parameters: parameters, form: multipart, headers: headers)
                }
                return try HTTPRequestSerializer().request(method, url, parameters: fields, headers: headers)
            }
            return try HTTPRequestSerializer().request(method, url, parameters: parameters.isEmpty ? nil : parameters, headers: headers)
        } catch  where error.code == .unreadableFile {
            // The category scripts match, as when the file fails while it is sent.
            throw CommandFailure.request(64, category: .unreadableFile, error.message)
        } catch {
            throw CommandFailure.usage(error.message)
        }
    }

    /// How a malformed `-H` is named besides its position, never with its value, which is often a credential
    /// (`Authorization Bearer …`, `X-Api-Key=…`): the name-like part before the first character a header name
    /// cannot hold, shown only when it reads like a name, not like the start of a token: a space or colon follows
    /// it (`wJalr…/K7…` or `key=…` is a token cut at its first `/` or `=`), it is short and has no digit. Escaped.
    static func headerNameHint(_ field: String) -> String? {
        let scalars = field.unicodeScalars
        let name = scalars.prefix(while: isHeaderNameScalar)
        guard !name.isEmpty, name.count <= Self.headerNameHintLimit, name.endIndex < scalars.endIndex,
            scalars[name.endIndex] == " " || scalars[name.endIndex] == ":",
            !name.contains(where: { ("0"..."9").contains($0) })
        else { return nil }
        return UntrustedText.escaped(String(String.UnicodeScalarView(name)))
    }

    /// Whether `scalar` may be part of a header name: RFC 9110 §5.6.2's `tchar`, visible ASCII but its delimiters.
    static func isHeaderNameScalar(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value > 0x20 && scalar.value < 0x7F && !headerNameDelimiters.contains(scalar)
    }

    /// RFC 9110 §5.6.2's delimiters: none is part of a header name.
    private static let headerNameDelimiters = Set("\"(),/:;<=>?@[\\]{}".unicodeScalars)
    /// The longest name-like part ``headerNameHint(_:)`` shows.
    private static let headerNameHintLimit = 32

    /// `k=v` options as parameters; `k` alone is a bare key (AFNetworking's null value).
    private static func pairs(_ options: [String], option: String) throws -> Parameters {
        var parameters = Parameters()
        for (index, text) in options.enumerated() {
            let parts = text.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            // Named by position: the text is often a token (`--param =SECRET`, `--param access_token`).
            guard let name = parts.first, !name.isEmpty else {
                throw CommandFailure.usage("\(option) #\(index + 1) is not k=v: put a name before the '='")
            }
            parameters[String(name)] = parts.count == 2 ? .string(String(parts[1])) : .null
        }
        return parameters
    }

    /// `--proxy`, else the environment's proxies; a bad value is named without its credentials.
    private func proxies() throws -> ProxySettings {
        do throws(HTTPError) {
            switch proxy {
            case "none"?: return .direct
            case let text?: return .through(try Proxy(parsing: text))
            case nil: return try ProxySettings.environment { getenv($0).map { String(cString: $0) } }
            }
        } catch {
            throw CommandFailure.usage(proxy == nil ? error.message : "--proxy \(error.message)")
        }
    }

    private func sessionSetup(for url: URL) throws -> (Session.Configuration, RequestOptions) {
        var configuration = Session.Configuration()
        if let caFile {
            do { configuration.trustStore = try TrustStore(caFile: caFile) } catch { throw CommandFailure.usage("--ca-file \(error)") }
        }
        if let files = try clientCertificate.checked() {
            configuration.clientCertificate = ClientCertificate(certificatePath: files.certificate, keyPath: files.key)
        }
        var options = RequestOptions()
        options.timeout = timeout ?? .seconds(30)
        options.connectTimeout = min(options.connectTimeout, options.timeout)
        options.followRedirects = !noRedirects
        options.allowsInsecureRedirects = allowInsecureRedirect
        options.keepsHeadersAcrossOrigins = locationTrusted
        if let waitForConnectivity { options.reachability = .waitForConnectivity(waitForConnectivity) }
        options.proxies = try proxies()
        options.resolvedAddresses = resolve
        if let servername {
            guard url.scheme?.lowercased() == "https" else {
                throw CommandFailure.usage("--servername is the TLS server name, and a \(url.scheme ?? "") URL has no TLS; use https")
            }
            options.serverName = try parseServerName(servername, option: "--servername")
        }
        // The checked name gets a policy of its own when pinned or held to other rules than the default ones:
        // the server name's when one is given, else the URL's host (also with --resolve, which moves only the
        // connection).
        if pinOptions.isSet || profileOptions.isSet || revocationOptions.isSet {
            let policy = try pinOptions.policy(profile: profileOptions, revocation: revocationOptions)
            let host = options.serverName ?? url.host(percentEncoded: false).map(URLHost.withoutBrackets) ?? ""
            do {
                configuration.policies = HostPolicySet([HostPolicy(patterns: [try HostPattern(parsing: host)], policy: policy)])
            } catch {
                throw CommandFailure.usage("\(host): \(error)")
            }
        }
        return (configuration, options)
    }

    /// `-v`: the profile the chain was held to and why, on standard error (escaped: a server's names may be in it).
    private static func printVerification(_ evaluation: TrustEvaluation?) {
        guard let evaluation else { return }
        let profile = evaluation.appliedProfile?.description ?? "none (no chain verified)"
        let line = "pinpath: tls: \(evaluation.host):\(evaluation.port): profile \(profile)"
        try? LineOutput(descriptor: STDERR_FILENO).write(UntrustedText.escapedLines([line]))
    }

    /// The warning a soft OCSP failure gets (`--ocsp-soft-fail`): the request went on without a usable answer
    /// about the leaf's revocation, which must not pass unnoticed.
    static func ocspWarning(_ response: SessionResponse) -> String? {
        guard let check = response.tls?.evaluation?.ocspCheck, check.softFailed else { return nil }
        return "the revocation status of the server's certificate is unavailable (--ocsp-soft-fail let the request go on): "
            + (check.detail ?? "no usable OCSP answer")
    }

    static func summary(_ response: SessionResponse) -> JSONValue {
        let timings = response.timings
        return .object([
            ("url", .string(DisplayURL.redacting(response.url.absoluteString))),
            ("status_code", .int(response.statusCode)),
            ("http_version", .string(response.httpVersion)),
            ("remote_address", .string(response.remoteAddress)),
            ("tls_version", .string(response.tls?.version)),
            ("redirects", .int(response.redirectCount)),
            ("headers", .object(response.headers.fields.map { ($0.name.lowercased(), .string($0.value)) })),
            ("body_bytes", .int(response.body.count)),
            ("phases_ms", timings.phasesMillisecondsJSON()),
            ("total_ms", timings.totalMillisecondsJSON),
            (
                "tls",
                response.tls.map { tls in
                    .object([
                        ("cipher", .string(tls.cipher)),
                        ("verified_chain_pins", .array(tls.verifiedChainPins.map { .string($0) })),
                        ("ocsp_staple", .string(tls.evaluation?.ocspStaple?.status.description)),
                        ("profile", .string(tls.evaluation?.appliedProfile?.profile.name)),
                        ("profile_reason", .string(tls.evaluation?.appliedProfile?.reason)),
                        ("ocsp_status", .string(tls.evaluation?.ocspCheck?.status.description)),
                    ])
                } ?? .null
            ),
        ])
    }

    /// `{"url":…,"error":{"category":…,"message":…,"exit_code":N}}`: what `--json` prints when no response is
    /// summarized (the request failed, or was never sent).
    static func failureSummary(_ failure: CommandFailure, url: String) -> JSONValue {
        .object([
            ("url", .string(DisplayURL.redacting(url))),
            (
                "error",
                .object([
                    ("category", .string(failure.category.rawValue)), ("message", .string(failure.detail)),
                    ("exit_code", .int(Int(failure.exitCode.rawValue))),
                ])
            ),
        ])
    }

    /// The documented exit code of each failure.
    static func exitCode(for code: HTTPError.Code) -> Int32 {
        switch code {
        case .policyRejected: return 1
        case .tlsInvalid, .tlsExpired, .revoked, .insecureRedirect, .crossOriginBody: return 2
        case .unreachable: return 4
        case .unexpectedStatus, .unexpectedContentType: return 5
        case .invalidURL, .invalidHeader, .invalidBody, .unreadableFile, .usage: return 64
        default: return 3
        }
    }
}
