/// The status page of the metrics listener (`GET /`, `/status.css`, `/status.js`): three files of
/// `StatusPage/Assets/` compiled into the binary (`PackageResources`), which the page's script fills from
/// `/api/v1/status`.
///
/// Everything the page shows came from outside (endpoint names from included files, certificate subjects, server
/// messages), so the script renders text only (`textContent`, never markup), and every answer carries a
/// Content-Security-Policy that lets the page run its own script and style and fetch from the agent alone: an
/// injected `<script>` or `onerror=` would not run even if a rendering slipped.
enum StatusPage {
    /// One file of the page: its bytes and its media type.
    struct Asset: Sendable {
        let contentType: String
        let bytes: [UInt8]
    }

    /// The file served at `path`, or `nil` when the path is not one of the page's.
    static func asset(at path: Substring) -> Asset? {
        switch path {
        case "/": return Asset(contentType: "text/html; charset=utf-8", bytes: PackageResources.index_html)
        case "/status.css": return Asset(contentType: "text/css; charset=utf-8", bytes: PackageResources.status_css)
        case "/status.js": return Asset(contentType: "text/javascript; charset=utf-8", bytes: PackageResources.status_js)
        default: return nil
        }
    }

    /// The headers of every file of the page, besides its `Content-Type` and `Content-Length`.
    ///
    /// `default-src 'self'` with every kind the page uses narrowed to the agent itself and the rest refused: no
    /// inline script or style attribute, no plugin, no frame around the page, no `<base>` or form to send anything
    /// elsewhere. `nosniff`: a browser takes each file as the type it is served with. `no-store`: an upgraded agent's
    /// page is never mixed with an older script from a cache.
    static let headers: [(name: String, value: String)] = [
        ("Content-Security-Policy", contentSecurityPolicy),
        ("X-Content-Type-Options", "nosniff"),
        ("Cache-Control", "no-store"),
        ("Referrer-Policy", "no-referrer"),
        ("X-Frame-Options", "DENY"),
    ]

    /// The page's Content-Security-Policy.
    static let contentSecurityPolicy =
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; object-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
}
