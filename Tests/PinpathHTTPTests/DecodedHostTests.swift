import FoundationEssentials
import Testing

@testable import PinpathHTTP

/// `URL.decodedHost` skips percent-decoding when the host has no `%`: it must read every host as
/// `host(percentEncoded: false)` does, the gate, the verifier and the messages all use it.
@Suite("Decoded URL hosts")
struct DecodedHostTests {
    @Test(
        "The host the request core reads is the percent-decoded one, with or without a percent sign",
        arguments: [
            "http://Example.COM:80/x", "http://[::1]:8080/", "http://[fe80::1%25eth0]/", "http://a%41b.com/", "http://127.0.0.1/",
            "http://%FF/", "https://user:pw@host/p?q", "http:///x", "http://ex%2Eample.com/", "tls://h%2Dx.example:443",
        ])
    func sameAsFoundations(_ text: String) throws {
        let url = try #require(URL(string: text))
        #expect(url.decodedHost == url.host(percentEncoded: false))
    }
}
