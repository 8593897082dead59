import PinpathHTTP
import Testing

/// What messages show of a URL: never its userinfo, query or fragment (issue 11, rule 8).
@Suite("Display URLs")
struct DisplayURLTests {
    @Test(
        "Credentials, query and fragment are removed, from parsable and unparsable text alike",
        arguments: [
            ("https://api.test/v1/items?access_token=t0k3n", "https://api.test/v1/items"),
            ("https://user:pa55@api.test:8443/x", "https://api.test:8443/x"),
            ("https://user:pa?ss@api.test/x?y=1", "https://api.test/x"),
            ("https://api.test/#access_token=t0k3n", "https://api.test/"),
            ("http://user:pw@exa mple.test/?t=1", "http://exa mple.test/"),
            ("https://api.test/a@b/c?d", "https://api.test/a@b/c"),
            ("mailto:a@b", "mailto:a@b"),
            ("https://[::1]:4433/health", "https://[::1]:4433/health"),
            // Unencoded `/` in a password: the URL does not parse, and no part of the password may show.
            ("https://admin:Zm9v/YmFy@localhost:9445/health", "https://localhost:9445/health"),
            ("https://admin:pa/ss#w0rd@localhost/x", "https://localhost/x"),
            ("https://api.test/x?email=a@b.test", "https://api.test/x"),
        ])
    func redacts(_ input: String, _ shown: String) {
        #expect(DisplayURL.redacting(input) == shown)
    }
}
