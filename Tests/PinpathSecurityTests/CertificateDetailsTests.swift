import Foundation
import PinpathSecurity
import PinpathTestSupport
import Testing

/// Certificate details against what the test PKI script set and what the openssl CLI prints.
@Suite("Certificate details")
struct CertificateDetailsTests {
    @Test("Validity dates are the ones `openssl ca` set, and days left count down from them")
    func validity() throws {
        let pki = TestPKI.shared
        let valid = try pki.certificate("valid")
        #expect(valid.notBefore == Date(timeIntervalSince1970: 1_577_836_800))  // 2020-01-01T00:00:00Z
        #expect(valid.notAfter == Date(timeIntervalSince1970: 2_366_841_600))  // 2045-01-01T00:00:00Z
        let expired = try pki.certificate("expired")
        #expect(expired.notAfter == Date(timeIntervalSince1970: 1_609_459_200))  // 2021-01-01T00:00:00Z
        #expect(expired.daysUntilExpiry(from: Date(timeIntervalSince1970: 1_609_459_200 - 86_400 * 3 - 1)) == 3)
        #expect(expired.daysUntilExpiry(from: Date(timeIntervalSince1970: 1_609_459_200 + 1)) == -1)
        #expect(try pki.certificate("notyet").notBefore == Date(timeIntervalSince1970: 2_335_219_200))  // 2044-01-01
    }

    @Test(
        "Subject alternative names in certificate order",
        arguments: [
            ("valid", ["DNS:valid.test", "DNS:www.valid.test"]),
            ("ip", ["IP:127.0.0.1", "IP:::1"]),
            ("wildcard", ["DNS:*.wild.test"]),
            ("cnonly", []),
        ])
    func alternativeNames(name: String, expected: [String]) throws {
        #expect(try TestPKI.shared.certificate(name).subjectAlternativeNames == expected)
    }

    @Test(
        "Key type and size, and the signature algorithm by OpenSSL's long name",
        arguments: [
            ("valid", "RSA 2048", "sha256WithRSAEncryption"),
            ("rsa1024", "RSA 1024", "sha256WithRSAEncryption"),
            ("sha1inter", "RSA 2048", "sha1WithRSAEncryption"),
            ("p256", "EC P-256", "ecdsa-with-SHA256"),
            ("p384", "EC P-384", "ecdsa-with-SHA256"),
            ("ed25519", "Ed25519", "ED25519"),
        ])
    func keyAndSignature(name: String, keyType: String, signature: String) throws {
        let certificate = try TestPKI.shared.certificate(name)
        #expect(certificate.keyType == keyType)
        #expect(certificate.signatureAlgorithm == signature)
    }

    @Test("The SHA-256 fingerprint equals `openssl x509 -fingerprint -sha256`, and is not the pin")
    func fingerprint() throws {
        let pki = TestPKI.shared
        for name in ["valid", "p256", "ed25519"] {
            let printed = try Shell.check(["openssl", "x509", "-in", pki.path(name), "-noout", "-fingerprint", "-sha256"])
            let certificate = try pki.certificate(name)
            #expect("sha256 Fingerprint=\(certificate.sha256Fingerprint)\n" == printed)
            #expect(certificate.sha256Fingerprint.count == 32 * 3 - 1)
        }
    }
}
