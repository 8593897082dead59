import Foundation
import PinpathSecurity
import Testing

/// Chains for the certificate rules of the verification profile (issue 12), generated once per test run with
/// the openssl CLI into a temporary directory, and removed at exit. Each case `NAME` is two files:
/// `NAME.served.pem` (the leaf first, then what a server would send) and `NAME.anchors.pem` (the trust store).
/// Every leaf names DNS:example.com. The usual chain is root -> inter -> leaf (`valid`), RSA 2048, with the
/// extensions a public CA gives (critical basic constraints and key usage on CAs, SKI and AKI keyIdentifier,
/// leaf EKU serverAuth); each other case changes one thing, named by the case (`leaf-no-eku`, `root-v1`…).
public final class CertificateProfilePKI: Sendable {
    public static let shared = CertificateProfilePKI(
        directory: GeneratedDirectory.make("pinpath-certrules", what: "the certificate-rule chains", script: script))

    /// The directory holding the cases' files and each certificate `<name>.pem` with its key `<name>.key`.
    public let directory: String

    private init(directory: String) {
        self.directory = directory
    }

    /// A file of the directory, by its full name.
    public func file(_ name: String) -> String { "\(directory)/\(name)" }

    /// The chain case `name` serves, leaf first.
    public func served(_ name: String) throws -> [Certificate] {
        try Certificate.certificates(contentsOf: file("\(name).served.pem"))
    }

    /// The trust anchors of case `name`.
    public func anchors(_ name: String) throws -> [Certificate] {
        try Certificate.certificates(contentsOf: file("\(name).anchors.pem"))
    }

    /// Generates the cases into $1. `openssl x509 -req` with an extension section per certificate: OpenSSL 3.0
    /// adds a subject and an authority key identifier unless the section says `none`, and makes a v1
    /// certificate when given no extension file. `DER:` values make what the CLI refuses to (a malformed AIA);
    /// it drops an extension of 2 octets or less, so an empty AKI cannot be made this way.
    static let script = #"""
        set -euo pipefail
        cd "$1"
        Q=-quiet
        rsa() { openssl genpkey $Q -algorithm RSA -pkeyopt rsa_keygen_bits:${2:-2048} -out "$1.key" 2>/dev/null; }
        ec() { openssl genpkey $Q -algorithm EC -pkeyopt ec_paramgen_curve:$2 -pkeyopt ec_param_enc:${3:-named_curve} -out "$1.key"; }
        rsa root; rsa inter; rsa inter2; rsa leaf; rsa other
        # Extensions of a CA and of a leaf; a case changes what it names ("key = value" replaces that key's line,
        # "key = -" drops it, another key is added).
        CA=("basicConstraints = critical, CA:true" "keyUsage = critical, keyCertSign, cRLSign"
            "subjectKeyIdentifier = hash" "authorityKeyIdentifier = keyid:always")
        LEAF=("basicConstraints = critical, CA:false" "keyUsage = critical, digitalSignature, keyEncipherment"
            "extendedKeyUsage = serverAuth" "subjectAltName = DNS:example.com" "subjectKeyIdentifier = hash"
            "authorityKeyIdentifier = keyid:always")
        extensions() { # ca|leaf changes...
          local -a lines; if [[ $1 == ca ]]; then lines=("${CA[@]}"); else lines=("${LEAF[@]}"); fi; shift
          local change index found
          for change in "$@"; do
            found=0
            for index in "${!lines[@]}"; do
              if [[ ${lines[$index]%% =*} == "${change%% =*}" ]]; then lines[$index]=$change; found=1; fi
            done
            [[ $found == 1 ]] || lines+=("$change")
          done
          echo "[ x ]"
          for change in "${lines[@]}"; do [[ ${change#*= } == - ]] || echo "$change"; done
        }
        # make NAME ISSUER|self KEY ROLE changes...: the certificate NAME.pem (key NAME.key) with subject CN=$SUBJECT
        # or CN=NAME, serial $SERIAL or a random one, valid from now for ten years; ROLE "v1" makes a version 1
        # certificate (no extensions).
        make() {
          local name=$1 issuer=$2 key=$3 role=$4; shift 4
          local -a signer
          if [[ $issuer == self ]]; then signer=(-signkey "$key.key"); else signer=(-CA "$issuer.pem" -CAkey "$issuer.key"); fi
          openssl req -new -key "$key.key" -subj "/CN=${SUBJECT:-$name}" -out "$name.csr"
          local -a ext=()
          if [[ $role != v1 ]]; then extensions "$role" "$@" > "$name.ext"; ext=(-extfile "$name.ext" -extensions x); fi
          openssl x509 -req -in "$name.csr" "${signer[@]}" -set_serial "${SERIAL:-0x$(openssl rand -hex 12)}" \
            -days 3650 "${ext[@]}" -out "$name.pem" 2>"$name.log" || { cat "$name.log" >&2; exit 1; }
          [[ $name == "$key" ]] || cp "$key.key" "$name.key"
        }
        # chain CASE SERVED... -- ANCHORS...: CASE.served.pem (leaf first) and CASE.anchors.pem.
        chain() {
          local case=$1; shift
          : > "$case.served.pem"
          while [[ $1 != -- ]]; do cat "$1.pem" >> "$case.served.pem"; shift; done
          shift
          : > "$case.anchors.pem"
          for anchor in "$@"; do cat "$anchor.pem" >> "$case.anchors.pem"; done
        }
        # For a certificate whose issuer has no subject key identifier: a made-up keyIdentifier (nothing to match).
        UNMATCHED_AKI="authorityKeyIdentifier = DER:30:16:80:14:$(openssl rand -hex 20 | sed 's/../&:/g; s/:$//')"
        # The usual chain: root -> inter -> leaf.
        make root self root ca
        make inter root inter ca
        make leaf inter leaf leaf
        chain valid leaf inter -- root
        # with_inter, with_leaf, with_root CASE changes...: the usual chain with that certificate changed (root -> leaf
        # for a changed root).
        with_inter() { local case=$1; shift; make "$case-inter" root inter ca "$@"; make "$case-leaf" "$case-inter" leaf leaf; chain "$case" "$case-leaf" "$case-inter" -- root; }
        with_leaf() { local case=$1; shift; make "$case-leaf" inter leaf leaf "$@"; chain "$case" "$case-leaf" inter -- root; }
        with_root() { local case=$1; shift; make "$case-root" self root ca "$@"; make "$case-leaf" "$case-root" leaf leaf; chain "$case" "$case-leaf" -- "$case-root"; }

        # Extended key usage
        with_leaf leaf-no-eku "extendedKeyUsage = -"
        with_leaf leaf-eku-client "extendedKeyUsage = clientAuth"
        with_leaf leaf-eku-any "extendedKeyUsage = anyExtendedKeyUsage"
        with_leaf leaf-eku-server-any "extendedKeyUsage = serverAuth, anyExtendedKeyUsage"
        with_leaf leaf-eku-server-client "extendedKeyUsage = serverAuth, clientAuth"
        with_leaf leaf-eku-server-codesigning "extendedKeyUsage = serverAuth, codeSigning"
        with_leaf leaf-eku-critical "extendedKeyUsage = critical, serverAuth"
        with_leaf leaf-eku-server-precert "extendedKeyUsage = serverAuth, 1.3.6.1.4.1.11129.2.4.4"
        with_inter inter-eku-client "extendedKeyUsage = clientAuth"
        with_inter inter-eku-server "extendedKeyUsage = serverAuth, clientAuth"
        with_inter inter-eku-any "extendedKeyUsage = anyExtendedKeyUsage"
        with_root root-eku-server "extendedKeyUsage = serverAuth"
        with_root root-eku-client "extendedKeyUsage = clientAuth"
        make eku-inter root inter ca "extendedKeyUsage = serverAuth"; make eku-inter-leaf eku-inter leaf leaf
        chain anchor-inter-with-eku eku-inter-leaf eku-inter -- eku-inter

        # Basic constraints, key usage
        with_leaf leaf-ca "basicConstraints = critical, CA:true" "keyUsage = critical, digitalSignature"
        with_leaf leaf-keycertsign "keyUsage = critical, digitalSignature, keyCertSign"
        with_leaf leaf-no-bc "basicConstraints = -"
        with_leaf leaf-no-ku "keyUsage = -"
        with_inter inter-bc-noncritical "basicConstraints = CA:true"
        with_root root-bc-noncritical "basicConstraints = CA:true"
        with_root root-no-bc "basicConstraints = -"
        with_inter inter-no-ku "keyUsage = -"
        with_inter inter-ku-no-certsign "keyUsage = critical, digitalSignature, cRLSign"
        with_root root-ku-no-certsign "keyUsage = critical, digitalSignature, cRLSign"
        make pl0-inter root inter ca "basicConstraints = critical, CA:true, pathlen:0"
        make pl0-inter2 pl0-inter inter2 ca; make pl0-leaf pl0-inter2 leaf leaf
        chain pathlen-exceeded pl0-leaf pl0-inter2 pl0-inter -- root
        make pl0-leaf1 pl0-inter leaf leaf; chain pathlen-zero-ok pl0-leaf1 pl0-inter -- root
        make two-inter2 inter inter2 ca; make two-leaf two-inter2 leaf leaf; chain four-certificates two-leaf two-inter2 inter -- root
        with_root root-no-ku "keyUsage = -"
        # A CA certificate as the leaf, key usage keyCertSign only (x509-limbo's rfc5280::ca-as-leaf); with a
        # pathLenConstraint under a pathlen:0 intermediate (pathlen::validation-ignores-pathlen-in-leaf); with an
        # extended key usage, or a Netscape certificate type, for clients only.
        make ca-leaf root inter2 ca "subjectAltName = DNS:example.com"; chain ca-as-leaf ca-leaf -- root
        make pl0-ca-leaf pl0-inter inter2 ca "basicConstraints = critical, CA:true, pathlen:0" "subjectAltName = DNS:example.com"
        chain pathlen-in-leaf pl0-ca-leaf pl0-inter -- root
        make ca-leaf-client root inter2 ca "subjectAltName = DNS:example.com" "extendedKeyUsage = clientAuth"
        chain ca-as-leaf-eku-client ca-leaf-client -- root
        make ca-leaf-nscert root inter2 ca "subjectAltName = DNS:example.com" "nsCertType = client"
        chain ca-as-leaf-nscert-client ca-leaf-nscert -- root
        # A self-issued intermediate (the same subject as its issuer, another key: a CA's key rollover) between
        # inter and the leaf: x509-limbo's pathlen::max-chain-depth-1-self-issued.
        SUBJECT=inter make si-inter inter inter2 ca; make si-leaf si-inter leaf leaf
        chain self-issued-intermediate si-leaf si-inter inter -- root

        # Key identifiers
        make noski-inter root inter ca "subjectKeyIdentifier = none"
        make noski-inter-leaf noski-inter leaf leaf "$UNMATCHED_AKI"
        chain inter-no-ski noski-inter-leaf noski-inter -- root
        make noski-root self root ca "subjectKeyIdentifier = none" "authorityKeyIdentifier = none"
        make noski-root-leaf noski-root leaf leaf "$UNMATCHED_AKI"
        chain root-no-ski noski-root-leaf -- noski-root
        with_leaf leaf-no-ski "subjectKeyIdentifier = none"
        with_leaf leaf-no-aki "authorityKeyIdentifier = none"
        with_inter inter-no-aki "authorityKeyIdentifier = none"
        with_root root-no-aki "authorityKeyIdentifier = none"
        with_root root-aki-issuer "authorityKeyIdentifier = keyid:always, issuer:always"
        with_root root-aki-no-keyid "authorityKeyIdentifier = issuer:always"
        with_root root-aki-mismatch "$UNMATCHED_AKI"
        with_root root-aki-critical "authorityKeyIdentifier = critical, keyid:always"
        with_root root-ski-critical "subjectKeyIdentifier = critical, hash"
        with_leaf leaf-aki-issuer "authorityKeyIdentifier = keyid:always, issuer:always"
        make xsigned root inter ca "authorityKeyIdentifier = none"; make xsigned-leaf xsigned leaf leaf
        chain anchor-inter-no-aki xsigned-leaf xsigned -- xsigned

        # Keys
        rsa rsa2052 2052; rsa rsa3072 3072
        ec p224 P-224; ec p256 P-256; ec p384 P-384; ec p521 P-521; ec explicit P-256 explicit
        openssl genpkey $Q -algorithm ED25519 -out ed25519.key; openssl genpkey $Q -algorithm ED448 -out ed448.key
        openssl genpkey $Q -genparam -algorithm DSA -pkeyopt dsa_paramgen_bits:2048 -out dsa.params
        openssl genpkey $Q -paramfile dsa.params -out dsa.key
        for key in rsa2052 rsa3072 p224 p256 p384 p521 explicit ed25519 ed448 dsa; do
          make "key-$key" inter "$key" leaf; chain "leaf-key-$key" "key-$key" inter -- root
        done
        make dsa-root self dsa ca; make dsa-root-leaf dsa-root leaf leaf; chain root-key-dsa dsa-root-leaf -- dsa-root

        # Serial numbers, versions
        SERIAL=0 with_leaf leaf-serial-zero
        SERIAL=-4096 with_leaf leaf-serial-negative
        SERIAL=0x$(printf 'ff%.0s' {1..20}) with_leaf leaf-serial-20-octets
        SERIAL=0x01$(printf 'ff%.0s' {1..20}) with_leaf leaf-serial-21-octets
        SUBJECT=example.com make v1-leaf inter leaf v1; chain leaf-v1 v1-leaf inter -- root
        make v1-inter root inter v1; make v1-inter-leaf v1-inter leaf leaf "$UNMATCHED_AKI"; chain inter-v1 v1-inter-leaf v1-inter -- root
        make v1-root self root v1
        make v1-root-leaf v1-root leaf leaf "$UNMATCHED_AKI"
        chain root-v1 v1-root-leaf -- v1-root

        # Authority information access
        with_leaf leaf-aia "authorityInfoAccess = caIssuers;URI:http://ca.example.com/inter.der"
        with_leaf leaf-aia-critical "authorityInfoAccess = critical, caIssuers;URI:http://ca.example.com/inter.der"
        with_leaf leaf-aia-malformed "authorityInfoAccess = DER:6d:61:6c:66:6f:72:6d:65:64"
        with_leaf leaf-aia-empty "authorityInfoAccess = DER:30:00"

        # Policy constraints
        with_inter inter-pc-noncritical "policyConstraints = requireExplicitPolicy:3"
        with_inter inter-explicit-policy "policyConstraints = critical, requireExplicitPolicy:0"
        make policy-inter root inter ca "policyConstraints = critical, requireExplicitPolicy:0" "certificatePolicies = 2.23.140.1.2.1"
        make policy-leaf policy-inter leaf leaf "certificatePolicies = 2.23.140.1.2.1"
        chain explicit-policy-met policy-leaf policy-inter -- root

        # A self-signed server certificate as `openssl req -x509` long made them (CA:TRUE, no EKU, AKI with issuer and
        # serial).
        SELF_SERVER=("basicConstraints = critical, CA:true" "keyUsage = -" "extendedKeyUsage = -"
          "authorityKeyIdentifier = keyid:always, issuer:always")
        make self-server self leaf leaf "${SELF_SERVER[@]}"

        # End to end, served on loopback: leaves for 127.0.0.1 as well.
        make e2e-valid inter leaf leaf "subjectAltName = DNS:example.com, IP:127.0.0.1"
        make e2e-no-eku inter leaf leaf "subjectAltName = DNS:example.com, IP:127.0.0.1" "extendedKeyUsage = -"
        make e2e-ca-leaf inter leaf ca "subjectAltName = DNS:example.com, IP:127.0.0.1"

        # Anchors
        chain anchor-inter leaf inter -- inter
        chain anchor-inter-not-served leaf -- inter
        chain anchor-inter-root-served leaf root -- inter
        make eku-root self root ca "extendedKeyUsage = serverAuth"; make eku-root-inter eku-root inter ca
        make eku-root-leaf eku-root-inter leaf leaf
        chain root-eku-server-long eku-root-leaf eku-root-inter -- eku-root
        chain anchor-shortest eku-root-leaf eku-root-inter -- eku-root eku-root-inter
        """#
}
