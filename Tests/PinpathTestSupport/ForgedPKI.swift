import Foundation
import PinpathSecurity
import Testing

/// Forged certificates for the chain-signature attacks of issue 11 (CVE-2016-2402 class), generated once per
/// test run with the openssl CLI into a temporary directory, and removed at exit.
///
/// The genuine side: a private CA that no trust store holds (`privateca`, the usual reason to allow invalid
/// certificates) with a leaf it really signed (`privateleaf`), and a self-signed server certificate made
/// the way `openssl req -x509` makes one (`pinnedself`, CA:true). The attacker's side: one key
/// (`attacker.key`) and certificates that only *name* the genuine ones:
/// - `forged-private`: a leaf for 127.0.0.1 and valid.test whose Issuer is the private CA's subject, signed
///   by the attacker's key, with no authority key identifier. Served followed by the genuine `privateca`.
/// - `forged-inter`: the same against TestPKI's trusted `inter` (Issuer "Pinpath Test Intermediate").
/// - `forged-self`: the same against `pinnedself` (Issuer is its subject). Served followed by the genuine
///   `pinnedself`.
/// - `attackerself`: the attacker's plain self-signed certificate for 127.0.0.1 and valid.test.
/// - `by-customer`: a leaf for 127.0.0.1 and valid.test signed by the key of `customer`, a genuine leaf of the
///   private CA for another host (CA:false, no key usage): every signature verifies, only the CA constraint
///   fails. Served followed by `customer` and `privateca`.
/// - `corrupted-ip`: TestPKI's genuine `ip` leaf with one byte of its signature flipped (key `ip.key` of TestPKI).
/// - `corrupted-self`: the genuine `pinnedself` with one byte of its self-signature flipped (its key).
/// Every forged leaf names IP:127.0.0.1, IP:::1 and DNS:valid.test, so one set serves both the library tests
/// and servers on loopback; every forged leaf's key is `attacker.key` (`<name>.key` is a copy).
public final class ForgedPKI: Sendable {
    public static let shared = ForgedPKI(
        directory: GeneratedDirectory.make("pinpath-forged", what: "the forged PKI", script: script, arguments: [TestPKI.shared.directory]))

    /// The directory holding `<name>.pem` (and `<name>.key` for the genuine identities).
    public let directory: String

    private init(directory: String) {
        self.directory = directory
    }

    /// `<name>.<suffix>` in the forged PKI's directory.
    public func path(_ name: String, _ suffix: String = "pem") -> String { "\(directory)/\(name).\(suffix)" }

    /// The certificate `<name>.pem`.
    public func certificate(_ name: String) throws -> Certificate {
        try #require(try Certificate.certificates(contentsOf: path(name)).first)
    }

    /// The attacker's private key, which signed every forged certificate.
    public var attackerKey: String { path("attacker", "key") }

    /// Generates the forgeries into $1, reading TestPKI's `inter` and `ip` from $2. `x509 -req` adds an authority
    /// key identifier by default; `authorityKeyIdentifier = none` leaves it out of the forged leaves, so that
    /// OpenSSL links them to an issuer by name alone.
    static let script = #"""
        set -euo pipefail
        cd "$1"
        GENUINE="$2"
        # TestPKI's configuration (v3_ca, v3_leaf with $SAN) plus what only forgeries and self-signed servers need.
        cp "$GENUINE/ca.cnf" forged.cnf
        cat >> forged.cnf <<'CNF'
        [ self_signed_server ]
        basicConstraints = critical, CA:true
        subjectKeyIdentifier = hash
        authorityKeyIdentifier = keyid:always, issuer
        subjectAltName = $ENV::SAN
        [ customer_leaf ]
        basicConstraints = CA:false
        subjectAltName = DNS:customer.test
        [ forged_leaf ]
        basicConstraints = CA:false
        keyUsage = digitalSignature, keyEncipherment
        extendedKeyUsage = serverAuth
        subjectAltName = $ENV::SAN
        authorityKeyIdentifier = none
        CNF
        export SAN="IP:127.0.0.1, IP:::1, DNS:valid.test"
        ec() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1.key"; }
        # selfsigned name subject extensions
        selfsigned() { openssl req -new -x509 -config forged.cnf -key "$1.key" -subj "$2" -days 3650 -extensions "$3" -out "$1.pem"; }
        # issue name subject issuer-cert issuer-key extensions
        issue() {
          openssl req -new -config forged.cnf -key "$1.key" -subj "$2" -out "$1.csr"
          openssl x509 -req -in "$1.csr" -CA "$3" -CAkey "$4" -set_serial "0x$(openssl rand -hex 8)" -days 3650 \
            -extfile forged.cnf -extensions "$5" -out "$1.pem" 2>/dev/null
        }

        # The genuine side.
        ec privateca; selfsigned privateca "/CN=Pinpath Private CA" v3_ca
        ec privateleaf; issue privateleaf "/CN=Loopback" privateca.pem privateca.key v3_leaf
        ec pinnedself; selfsigned pinnedself "/CN=Pinned Self-Signed Server" self_signed_server

        # The attacker: one key, throwaway "issuers" that only copy a genuine certificate's subject, and leaves
        # they sign. The throwaway issuers are never served.
        # OpenSSL links a certificate to an issuer only if its signature algorithm fits the issuer's key type, so the
        # attacker signs with a key of the genuine issuer's type: EC for the private CA, RSA for TestPKI's intermediate.
        ec attacker
        openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out attacker-rsa.key 2>/dev/null
        forge() { # name genuine-issuer-pem signing-key
          subject=$(openssl x509 -in "$2" -noout -subject -nameopt RFC2253 | sed 's/^subject=//')
          openssl req -new -x509 -config forged.cnf -key "$3" -subj "/$subject" -days 3650 -extensions v3_ca \
            -out "$1-issuer.pem"
          cp attacker.key "$1.key"
          issue "$1" "/CN=Loopback" "$1-issuer.pem" "$3" forged_leaf
        }
        forge forged-private privateca.pem attacker.key
        forge forged-inter "$GENUINE/inter.pem" attacker-rsa.key
        forge forged-self pinnedself.pem attacker.key
        ec customer; issue customer "/CN=customer.test" privateca.pem privateca.key customer_leaf
        cp attacker.key by-customer.key; issue by-customer "/CN=Loopback" customer.pem customer.key forged_leaf
        cp attacker.key attackerself.key
        selfsigned attackerself "/CN=Loopback" self_signed_server

        # A genuine certificate with one signature byte flipped (the last byte of the DER is the signature's).
        corrupt() {  # name, genuine certificate, its key
          openssl x509 -in "$2" -outform der -out "$1.der"
          size=$(stat -c %s "$1.der")
          last=$(od -An -tu1 -j $((size - 1)) -N1 "$1.der" | tr -d ' ')
          printf "$(printf '\\%03o' $(( last ^ 0x55 )))" | dd of="$1.der" bs=1 seek=$((size - 1)) conv=notrunc status=none
          openssl x509 -inform der -in "$1.der" -out "$1.pem"
          cp "$3" "$1.key"
        }
        corrupt corrupted-ip "$GENUINE/ip.pem" "$GENUINE/ip.key"
        corrupt corrupted-self pinnedself.pem pinnedself.key
        """#
}
