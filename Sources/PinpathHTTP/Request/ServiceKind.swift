/// What a request's URL scheme asks the request core to do: an HTTP exchange, or a connection check for a
/// service that is not a web server (`tls://`, `tcp://`, mail and FTP with STARTTLS or implicit TLS, LDAP over
/// implicit TLS).
///
/// Every kind goes through the same ``Session``: the reachability gate before connecting, the security policy
/// inside the handshake (for the kinds that use TLS), the same timings and errors. The non-HTTP kinds open a
/// connection with libcurl's `CURLOPT_CONNECT_ONLY`, which runs the protocol's connect phase (greeting,
/// `STARTTLS`, the TLS handshake, the capability command libcurl sends after it) and sends nothing else.
/// A kind with a ``refusal`` (`ldap`, StartTLS) is known by name only so that it can be refused with its reason.
public enum ServiceKind: String, Sendable, CaseIterable {
    case http
    case https
    /// TCP and a TLS handshake, then close.
    case tls
    /// TCP connect only, and optionally one exchange (``TCPExchange``).
    case tcp
    /// SMTP with `STARTTLS` required (a server that does not offer it fails; nothing continues in plaintext).
    case smtp
    /// SMTP over implicit TLS (submissions, 465).
    case smtps
    /// IMAP with `STARTTLS` required.
    case imap
    /// IMAP over implicit TLS (993).
    case imaps
    /// POP3 with `STLS` required.
    case pop3
    /// POP3 over implicit TLS (995).
    case pop3s
    /// FTP with the `AUTH` upgrade required (libcurl asks `AUTH SSL`, then `AUTH TLS`; it logs in as `anonymous`
    /// in its connect phase).
    case ftp
    /// LDAP with StartTLS: refused (``refusal``), because libcurl goes on in plaintext after StartTLS.
    case ldap
    /// LDAP over implicit TLS (636).
    case ldaps

    /// The kind for a URL scheme (any case); `nil` for a scheme the core does not know. A kind it knows may
    /// still be refused (``refusal``).
    public init?(scheme: String?) {
        // Every request reads its kind: the common spellings without lowercasing a copy.
        switch scheme {
        case "https": self = .https
        case "http": self = .http
        case let scheme?:
            guard let kind = ServiceKind(rawValue: scheme.lowercased()) else { return nil }
            self = kind
        case nil: return nil
        }
    }

    /// The kinds the request core probes: all but the refused ones.
    public static let probed = allCases.filter { $0.refusal == nil }

    /// Why the request core refuses this kind before resolving or connecting anything, as a sentence that names
    /// the kind and what to use instead; `nil` for the kinds it probes.
    ///
    /// `ldap` (StartTLS): from the connection filters of 7.87 until 8.6.0 (curl commit 4b6d44f, "openldap: fix
    /// STARTTLS"), libcurl's OpenLDAP backend never adds TLS to the connection after the server accepts StartTLS.
    /// Seen on Debian 12's 7.88.1 with a recording proxy in front of slapd: after the StartTLS success libcurl
    /// sends its LDAP operations in plaintext (no ClientHello at all), and no option changes that.
    public var refusal: String? {
        switch self {
        case .ldap:
            """
            ldap:// (LDAP with StartTLS) is refused: libcurl (7.87 to 8.5, Debian 12's 7.88.1 among them) never starts TLS \
            after the server accepts StartTLS and goes on in plaintext, so the server could not be verified; use ldaps:// \
            (LDAP over TLS, port 636) instead
            """
        default: nil
        }
    }

    /// An HTTP exchange (`http`, `https`): methods, headers, bodies, statuses, redirects.
    public var isHTTP: Bool { self == .http || self == .https }

    /// The connection is held to a security policy in a TLS handshake.
    public var usesTLS: Bool { self != .http && self != .tcp }

    /// The plaintext protocol is upgraded with its `STARTTLS` command, which libcurl is told to require.
    public var upgradesWithSTARTTLS: Bool { [.smtp, .imap, .pop3, .ftp, .ldap].contains(self) }

    /// For a STARTTLS kind, the command that asks for the upgrade (`STARTTLS`, `STLS`, `AUTH`); nil for the others.
    public var upgradeCommand: String? {
        switch self {
        case .smtp, .imap: "STARTTLS"
        case .pop3: "STLS"
        case .ftp: "AUTH"
        case .ldap: "StartTLS"
        default: nil
        }
    }

    /// For a STARTTLS kind, what libcurl 7.88 exchanges in plaintext up to the upgrade, at most (seen on Debian
    /// 12's 7.88.1 with the test servers' transcripts): nothing else precedes the TLS handshake.
    var plaintextExchange: String? {
        switch self {
        case .smtp: "the greeting, EHLO and STARTTLS"
        case .imap: "the greeting, CAPABILITY and STARTTLS"
        case .pop3: "the greeting, CAPA and STLS"
        case .ftp: "the greeting and AUTH SSL (then AUTH TLS when refused)"
        case .ldap: "the StartTLS request"
        default: nil
        }
    }

    /// The server speaks first with a greeting that ``SessionResponse/banner`` captures (SMTP, IMAP, POP3, FTP).
    public var greets: Bool { [.smtp, .smtps, .imap, .imaps, .pop3, .pop3s, .ftp].contains(self) }

    /// The port when the URL names none; `nil` for `tls` and `tcp`, whose URLs must name one.
    public var defaultPort: Int? {
        switch self {
        case .http: 80
        case .https: 443
        case .tls, .tcp: nil
        case .smtp: 25
        case .smtps: 465
        case .imap: 143
        case .imaps: 993
        case .pop3: 110
        case .pop3s: 995
        case .ftp: 21
        case .ldap: 389
        case .ldaps: 636
        }
    }

    /// The phases a result of this kind has, at blackbox_exporter's boundaries: `resolve` and `connect`
    /// for `tcp`; `tls` added for the TLS kinds (for STARTTLS kinds it includes the greeting and the
    /// upgrade); all five for HTTP.
    public var phases: [String] {
        switch self {
        case .http, .https: ["resolve", "connect", "tls", "processing", "transfer"]
        case .tcp: ["resolve", "connect"]
        default: ["resolve", "connect", "tls"]
        }
    }

    /// The scheme libcurl is given: `tls` is an `https` connection that stops after the handshake, `tcp` an
    /// `http` one that stops after connecting (`CURLOPT_CONNECT_ONLY` sends no request for either).
    var curlScheme: String {
        switch self {
        case .tls: "https"
        case .tcp: "http"
        default: rawValue
        }
    }
}

/// One query-response exchange on a `tcp://` connection (blackbox_exporter's `query_response`, once): send
/// ``send`` if any, then read until ``readUntil`` arrives, the server closes, 4 KiB were read or the
/// request's time is up. What was read is the response's ``SessionResponse/banner``.
public struct TCPExchange: Sendable, Equatable {
    /// The bytes to send first, if any.
    public var send: [UInt8]?
    /// Stop reading once this text has arrived; `nil` stops at the first line end.
    public var readUntil: String?

    /// The most bytes read.
    public static let maximumBannerSize = 4096

    public init(send: [UInt8]? = nil, readUntil: String? = nil) {
        self.send = send
        self.readUntil = readUntil
    }
}
