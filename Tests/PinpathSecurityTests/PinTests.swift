import Foundation
import PinpathTestSupport
import Testing

@testable import PinpathSecurity

@Suite("SPKI pins and key material")
struct PinTests {
    let pki = TestPKI.shared

    @Test("A certificate's pin equals the openssl pipeline's", arguments: ["valid", "rsa1024", "p256", "p384", "ed25519", "root"])
    func certificatePin(name: String) throws {
        let expected = try pki.opensslPin(name)
        #expect(try pki.certificate(name).spkiPin.description == "sha256/\(expected)")
        #expect(try pki.certificate(name).spkiPin.hpkp == "pin-sha256=\"\(expected)\"")
    }

    @Test(
        "Keys, CSRs and DER give the certificate's pin and a description",
        arguments: [
            ("valid", "RSA 2048-bit"), ("rsa1024", "RSA 1024-bit"), ("p256", "EC P-256"), ("p384", "EC P-384"),
            ("ed25519", "Ed25519"),
        ])
    func keyForms(name: String, description: String) throws {
        let expected = "sha256/" + (try pki.opensslPin(name))
        let dir = pki.directory
        // Each other form of the same key, made by the openssl CLI.
        try Shell.check([
            "/bin/bash", "-c",
            """
            set -e; cd "\(dir)"
            openssl pkey -in \(name).key -pubout -out \(name).pub.pem
            openssl pkey -in \(name).key -pubout -outform der -out \(name).pub.der
            openssl pkey -in \(name).key -outform der -out \(name).key.der
            openssl x509 -in \(name).pem -outform der -out \(name).der
            openssl req -new -key \(name).key -subj /CN=csr.test -out \(name).req.pem 2>/dev/null
            openssl req -in \(name).req.pem -outform der -out \(name).req.der
            """,
        ])
        let forms: [(String, KeyMaterial.Kind, String)] = [
            ("key", .privateKey, "\(description) private key"),
            ("pub.pem", .publicKey, "\(description) public key"),
            ("pub.der", .publicKey, "\(description) public key"),
            ("key.der", .privateKey, "\(description) private key"),
            ("der", .certificate, "CN=\(name == "valid" || name == "rsa1024" ? "valid.test" : name + ".test")"),
            ("req.pem", .certificateRequest, "CSR CN=csr.test (\(description))"),
            ("req.der", .certificateRequest, "CSR CN=csr.test (\(description))"),
        ]
        for (suffix, kind, label) in forms {
            let found = try KeyMaterial.load(contentsOf: pki.path(name, suffix))
            #expect(found.count == 1, "\(suffix)")
            #expect(found.first?.kind == kind, "\(suffix)")
            #expect(found.first?.spkiPin.description == expected, "\(suffix)")
            #expect(found.first?.label == label, "\(suffix)")
        }
    }

    @Test("A PEM bundle yields every certificate in order, skipping blocks with nothing to pin")
    func bundle() throws {
        let bundle = pki.path("bundle-with-params")
        let text = try ["valid", "inter", "root"].map { try String(contentsOfFile: pki.path($0), encoding: .utf8) }
        let params = try Shell.check(["/usr/bin/openssl", "ecparam", "-name", "prime256v1"])
        try (params + text.joined()).write(toFile: bundle, atomically: true, encoding: .utf8)
        let found = try KeyMaterial.load(contentsOf: bundle)
        #expect(found.map(\.label) == ["CN=valid.test", "CN=Pinpath Test Intermediate", "CN=Pinpath Test Root"])
        #expect(try found.map(\.spkiPin.description) == ["valid", "inter", "root"].map { "sha256/" + (try pki.opensslPin($0)) })
    }

    @Test("Legacy PKCS#1 RSA and SEC1 EC private keys load")
    func legacyKeys() throws {
        let dir = pki.directory
        try Shell.check([
            "/bin/bash", "-c",
            """
            set -e; cd "\(dir)"
            openssl pkey -in valid.key -traditional -out valid.pkcs1.key
            openssl ec -in p256.key -out p256.sec1.key 2>/dev/null
            openssl rsa -in valid.key -RSAPublicKey_out -out valid.pkcs1.pub 2>/dev/null
            """,
        ])
        for (file, name) in [("valid.pkcs1.key", "valid"), ("p256.sec1.key", "p256"), ("valid.pkcs1.pub", "valid")] {
            let text = try String(contentsOfFile: pki.file(file), encoding: .utf8)
            #expect(text.contains("-----BEGIN RSA") || text.contains("-----BEGIN EC"), "\(file) is in the legacy form")
            let found = try KeyMaterial.load(contentsOf: pki.file(file))
            #expect(found.first?.spkiPin.description == "sha256/" + (try pki.opensslPin(name)), "\(file)")
        }
    }

    @Test(
        "Bad input is an error naming the file and the problem",
        arguments: [
            ("missing.pem", nil as String?, SecurityError.Code.unreadableFile, "No such file"),
            ("garbage.bin", "not a certificate at all", .invalidInput, "not a PEM file, nor a DER"),
            ("empty.pem", "", .invalidInput, "not a PEM file"),
            ("damaged.pem", "-----BEGIN CERTIFICATE-----\nMIIB!!!!\n-----END CERTIFICATE-----\n", .invalidInput, "PEM block 1"),
            (
                "notcert.pem", "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n", .invalidInput,
                "PEM block 1 (CERTIFICATE) cannot be parsed"
            ),
            ("crl-only.pem", "-----BEGIN X509 CRL-----\nAAAA\n-----END X509 CRL-----\n", .invalidInput, "no certificate, public key"),
        ])
    func badInput(file: String, content: String?, code: SecurityError.Code, problem: String) throws {
        let path = pki.file(file)
        if let content { try content.write(toFile: path, atomically: true, encoding: .utf8) }
        #expect {
            try KeyMaterial.load(contentsOf: path)
        } throws: { error in
            let error = try #require(error as? SecurityError)
            return error.code == code && error.message.hasPrefix(path + ":") && error.message.contains(problem)
        }
    }

    @Test("An encrypted private key is refused with advice")
    func encryptedKey() throws {
        let path = pki.path("encrypted", "key")
        try Shell.check(["/usr/bin/openssl", "pkey", "-in", pki.path("p256", "key"), "-aes256", "-passout", "pass:x", "-out", path])
        #expect {
            try KeyMaterial.load(contentsOf: path)
        } throws: { error in
            (error as? SecurityError)?.message.contains("is encrypted; pin its certificate or public key instead") == true
        }
    }

    @Test("Pin strings round-trip")
    func pinRoundTrip() throws {
        let text = "sha256/" + (try pki.opensslPin("valid"))
        let pin = try SPKIPin(parsing: text)
        #expect(pin.description == text)
        #expect(pin.digest.count == 32)
        #expect(pin == (try pki.certificate("valid").spkiPin))
        #expect(pin != (try pki.certificate("inter").spkiPin))
    }

    @Test("A pin is read in its three spellings (pinpath's, curl's, HPKP's) and written back as sha256/")
    func pinSpellings() throws {
        let base64 = try pki.opensslPin("valid")
        let expected = try pki.certificate("valid").spkiPin
        for text in ["sha256/\(base64)", "sha256//\(base64)", "pin-sha256=\"\(base64)\""] {
            let pin = try SPKIPin(parsing: text)
            #expect(pin == expected, "\(text)")
            #expect(pin.description == "sha256/\(base64)")
        }
        // Base64 may start with "/": sha256/ then that is not curl's sha256//, and curl's spelling of it still reads.
        let slash = Data([0xFF] + [UInt8](repeating: 0, count: 31)).base64EncodedString()
        #expect(slash.hasPrefix("/"))
        for text in ["sha256/\(slash)", "sha256//\(slash)", "pin-sha256=\"\(slash)\""] {
            #expect(try SPKIPin(parsing: text).digest == [0xFF] + [UInt8](repeating: 0, count: 31), "\(text)")
        }
    }

    @Test(
        "A pin string that is not one of the three spellings of 32 bytes of base64 is refused, naming it",
        arguments: [
            ("", "is not sha256/<base64>, sha256//<base64> or pin-sha256=\"<base64>\""),
            ("sha1/AAAAAAAAAAAAAAAAAAAAAAAAAAA=", "is not sha256/<base64>"),
            ("pin-sha256=47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=", "is not sha256/<base64>"),
            ("pin-sha256=\"47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=", "is not sha256/<base64>"),
            ("pin-sha256=\"", "is not sha256/<base64>"),
            ("sha256/not base64!", "not valid base64"),
            ("sha256//AAAA", "decodes to 3 bytes"),
            ("sha256//not base64!", "is not valid base64 after \"sha256//\""),
            ("sha256/", "decodes to 0 bytes"),
            ("sha256//", "decodes to 0 bytes"),
            ("pin-sha256=\"\"", "decodes to 0 bytes"),
            ("sha256/AAAAAAAAAAAAAAAAAAAAAAAAAAA=", "decodes to 20 bytes"),
            ("pin-sha256=\"AAAAAAAAAAAAAAAAAAAAAAAAAAA=\"", "decodes to 20 bytes"),
            ("sha256/" + String(repeating: "A", count: 64), "decodes to 48 bytes"),
        ])
    func badPin(text: String, problem: String) {
        #expect {
            try SPKIPin(parsing: text)
        } throws: { error in
            let error = error as? SecurityError
            return error?.code == .invalidPin && error?.message.contains("\"\(text)\"") == true
                && error?.message.contains(problem) == true
        }
    }
}
