import Foundation
import PinpathSecurity
import Testing

/// The test PKI, generated once per test run with the openssl CLI into a temporary directory (badssl-style:
/// roots, intermediates and one leaf per failure), and removed at exit.
public final class TestPKI: Sendable {
    public static let shared = TestPKI(
        directory: GeneratedDirectory.make("pinpath-pki", what: "the test PKI", script: script))

    /// The directory holding `<name>.pem`, `<name>.key` for each name in the script.
    public let directory: String

    private init(directory: String) {
        self.directory = directory
    }

    public func path(_ name: String, _ suffix: String = "pem") -> String { "\(directory)/\(name).\(suffix)" }

    /// A file in the PKI directory, by its full name.
    public func file(_ name: String) -> String { "\(directory)/\(name)" }

    /// The certificate `<name>.pem`.
    public func certificate(_ name: String) throws -> Certificate {
        try #require(try Certificate.certificates(contentsOf: path(name)).first)
    }

    /// The certificates, in order, as a server would send them.
    public func chain(_ names: [String]) throws -> [Certificate] { try names.map(certificate) }

    /// The pin of `<name>.pem` computed by the openssl pipeline from FIELD-NOTES, independent of our code.
    public func opensslPin(_ name: String) throws -> String {
        try Shell.check([
            "/bin/bash", "-c",
            "openssl x509 -in \"$1\" -pubkey -noout | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | base64",
            "pin", path(name),
        ]).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The roots a "system" store would hold here: the test root and another trusted root.
    public func trustStore() throws -> TrustStore { try TrustStore(caFile: path("store")) }

    /// Generates the PKI into $1. `openssl ca` is used because it is the only OpenSSL 3.0 tool that sets exact
    /// start and end dates (expired, not yet valid).
    static let script = #"""
        set -euo pipefail
        cd "$1"
        mkdir -p newcerts
        : > index.txt
        echo 1000 > serial
        cat > ca.cnf <<'CNF'
        [ ca ]
        default_ca = CA_default
        [ CA_default ]
        dir = .
        database = ./index.txt
        new_certs_dir = ./newcerts
        serial = ./serial
        default_md = sha256
        policy = policy_any
        unique_subject = no
        copy_extensions = none
        [ policy_any ]
        commonName = supplied
        [ req ]
        distinguished_name = dn
        prompt = no
        [ dn ]
        CN = placeholder
        [ v3_ca ]
        basicConstraints = critical, CA:true
        keyUsage = critical, keyCertSign, cRLSign
        subjectKeyIdentifier = hash
        authorityKeyIdentifier = keyid:always
        [ v3_leaf ]
        basicConstraints = CA:false
        keyUsage = digitalSignature, keyEncipherment
        extendedKeyUsage = serverAuth
        subjectAltName = $ENV::SAN
        [ v3_cn_only ]
        basicConstraints = CA:false
        keyUsage = digitalSignature, keyEncipherment
        extendedKeyUsage = serverAuth
        CNF
        export SAN=DNS:unused
        Q=-quiet
        key() { openssl genpkey $Q -algorithm RSA -pkeyopt rsa_keygen_bits:${2:-2048} -out "$1.key" 2>/dev/null; }
        root() { # name CN: self-signed with `ca -selfsign`, the only way to set a start date on OpenSSL 3.0
          key "$1"
          openssl req -new -config ca.cnf -key "$1.key" -subj "/CN=$2" -out "$1.csr"
          openssl ca -batch -selfsign -config ca.cnf -keyfile "$1.key" -in "$1.csr" -out "$1.pem" -extensions v3_ca \
            -startdate 20190101000000Z -enddate 20460101000000Z -notext 2>/dev/null
        }
        # sign name CN issuer extensions start end [md]
        sign() {
          openssl req -new -config ca.cnf -key "$1.key" -subj "/CN=$2" -out "$1.csr"
          openssl ca -batch -config ca.cnf -cert "$3.pem" -keyfile "$3.key" -in "$1.csr" -out "$1.pem" -extensions "$4" \
            -startdate "$5" -enddate "$6" -md "${7:-sha256}" -notext 2>/dev/null
        }
        NOW=20200101000000Z; LATER=20450101000000Z
        root root "Pinpath Test Root"
        key inter; sign inter "Pinpath Test Intermediate" root v3_ca $NOW $LATER
        root otherroot "Other Trusted Root"
        key otherinter; sign otherinter "Other Trusted Intermediate" otherroot v3_ca $NOW $LATER
        root rogueroot "Untrusted Root"
        key sha1inter; sign sha1inter "SHA-1 Intermediate" root v3_ca $NOW $LATER sha1

        SAN=DNS:valid.test,DNS:www.valid.test
        key valid; sign valid valid.test inter v3_leaf $NOW $LATER
        key expired; sign expired valid.test inter v3_leaf $NOW 20210101000000Z
        key notyet; sign notyet valid.test inter v3_leaf 20440101000000Z $LATER
        key untrusted; sign untrusted valid.test rogueroot v3_leaf $NOW $LATER
        key rogue; sign rogue valid.test otherinter v3_leaf $NOW $LATER
        key sha1leaf; sign sha1leaf valid.test sha1inter v3_leaf $NOW $LATER
        key rsa1024 1024; sign rsa1024 valid.test inter v3_leaf $NOW $LATER
        SAN=DNS:other.test; key wronghost; sign wronghost other.test inter v3_leaf $NOW $LATER
        SAN=IP:127.0.0.1,IP:::1; key ip; sign ip "Loopback" inter v3_leaf $NOW $LATER
        # Loopback leaves from an untrusted root and from the other trusted CA: an https proxy nobody trusts, and
        # an intercepting proxy impersonating a loopback origin with a certificate the store accepts.
        key rogueip; sign rogueip "Rogue Loopback" rogueroot v3_leaf $NOW $LATER
        key otherip; sign otherip "Other Loopback" otherinter v3_leaf $NOW $LATER
        SAN=DNS:*.wild.test; key wildcard; sign wildcard "*.wild.test" inter v3_leaf $NOW $LATER
        SAN=DNS:w*.part.test; key partial; sign partial "w*.part.test" inter v3_leaf $NOW $LATER
        key cnonly; sign cnonly cnonly.test inter v3_cn_only $NOW $LATER
        key selfsigned
        SAN=DNS:valid.test openssl req -new -x509 -config ca.cnf -key selfsigned.key -subj /CN=valid.test -days 3650 \
          -extensions v3_leaf -out selfsigned.pem

        # Keys of each type, as self-signed certificates, for the pin tests.
        openssl genpkey $Q -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out p256.key
        openssl genpkey $Q -algorithm EC -pkeyopt ec_paramgen_curve:P-384 -out p384.key
        openssl genpkey $Q -algorithm ED25519 -out ed25519.key
        for k in p256 p384 ed25519; do
          openssl req -new -x509 -config ca.cnf -key $k.key -subj "/CN=$k.test" -days 30 -out $k.pem
        done
        cat root.pem otherroot.pem > store.pem
        """#
}
