import PinpathHTTP
import Testing

/// What messages show of a URL: never its userinfo, query, fragment (issue 11, rule 8) or path parameters
/// (issue 25).
@Suite("Display URLs")
struct DisplayURLTests {
    @Test(
        "Credentials, query, fragment and path parameters are removed, from parsable and unparsable text alike",
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
            // Path parameters, where servlet containers put the session: every segment's, in parsed and raw text.
            ("https://api.test/app;jsessionid=S3SS10N/page", "https://api.test/app/page"),
            ("https://api.test/a;x=1;y=2/b;z=3?q=1", "https://api.test/a/b"),
            ("https://api.test/login;jsessionid=S3SS10N", "https://api.test/login"),
            ("http://user:pw@exa mple.test/app;jsessionid=S3SS10N/x", "http://exa mple.test/app/x"),
            ("https://api.test/a%3Bb/c", "https://api.test/a%3Bb/c"),
        ])
    func redacts(_ input: String, _ shown: String) {
        #expect(DisplayURL.redacting(input) == shown)
    }
}
