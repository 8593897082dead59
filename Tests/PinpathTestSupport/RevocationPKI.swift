import Foundation
import PinpathSecurity
import Testing

/// A PKI with revocation data for the CRL and OCSP tests, generated once per test run with the openssl CLI
/// (`openssl ca -revoke`, `-gencrl`, `openssl ocsp -respout`) into a temporary directory, and removed at exit.
/// Its own CAs, so that revoking certificates leaves TestPKI alone. Every leaf names DNS:valid.test and
/// IP:127.0.0.1.
///
/// Certificates (`<name>.pem`, `<name>.key`): `root` (trust it with `root.pem`) → `inter` → leaves `good`,
/// `revoked` (revoked in `inter`'s CRL and OCSP index), `muststaple` (TLS feature status_request); `root` →
/// `revokedinter` (revoked in `root`'s CRL) → `underrevoked`; `root` → `nocrlsign` (key usage keyCertSign only,
/// so it may not sign CRLs) → `undernocrlsign`; `nokuroot` (a root without a key usage extension, which RFC 5280
/// §6.3.3 (f) lets sign CRLs) → `undernokuroot`, `revokedundernokuroot` (revoked in `nokuroot`'s CRL); `responder`, a delegated OCSP responder of `inter`
/// (extendedKeyUsage OCSPSigning); `forger`, a self-signed "responder" nobody delegated.
///
/// CRLs (PEM, `<name>.crl`; `inter.der.crl` is `inter.crl` in DER): `root` (revokes `revokedinter`), `inter`
/// (revokes `revoked`), `revokedinter`, `nocrlsign` (signed by a CA without cRLSign), `inter-stale`
/// (nextUpdate 2021-01-01), `inter-critical` (an unknown critical extension). Files of several:
/// `all.crl` (root, inter, revokedinter, nocrlsign), `rootonly.crl` (no CRL for `inter`'s certificates).
/// `nokuroot` (revokes `revokedundernokuroot`); `inter-nonumber.crl` / `inter-nonumber.der.crl`: `inter`'s CRL
/// without the CRLNumber extension (`openssl ca -gencrl` with no crlnumber file).
/// `inter-nonext.crl` / `inter-nonext.der.crl`: `inter`'s CRL re-signed without nextUpdate (DER surgery in
/// Python's standard library, signed by `openssl dgst -sign`: `openssl ca` cannot leave it out).
///
/// OCSP responses (DER): `good.ocsp`, `revoked.ocsp`, `muststaple.ocsp` (signed by `responder`, valid a day),
/// `good-by-inter.ocsp` (signed by `inter` itself), `forged-good.ocsp` (says `revoked` is good, signed by
/// `forger`). Their CertIDs are hashed with SHA-1 (`openssl ocsp`'s default); `good-sha256.ocsp`,
/// `good-sha384.ocsp`, `good-sha512.ocsp`, `good-md5.ocsp` and `revoked-sha256.ocsp` are hashed with the digest
/// named (`-sha256` before `-cert`: the responder answers with the request's CertID). `revoked-also-good.ocsp`,
/// signed by `responder`, lists `revoked` twice: good under a SHA-256 CertID first (from the forger's index),
/// then revoked under SHA-1 (DER surgery in Python's standard library, re-signed by `openssl dgst -sign`).
public final class RevocationPKI: Sendable {
    public static let shared = RevocationPKI(
        directory: GeneratedDirectory.make("pinpath-revocation", what: "the revocation PKI", script: script))

    /// The directory holding the files named above.
    public let directory: String

    private init(directory: String) {
        self.directory = directory
    }

    /// A file in the directory, by its full name (`inter.crl`, `good.ocsp`).
    public func file(_ name: String) -> String { "\(directory)/\(name)" }

    /// The certificate `<name>.pem`.
    public func certificate(_ name: String) throws -> Certificate {
        try #require(try Certificate.certificates(contentsOf: file("\(name).pem")).first)
    }

    /// The CRLs of `<name>.crl`.
    public func crls(_ name: String) throws -> [CertificateRevocationList] {
        try CertificateRevocationList.lists(contentsOf: file("\(name).crl"))
    }

    /// The store with `root` as its only anchor.
    public func trustStore() throws -> TrustStore { try TrustStore(caFile: file("root.pem")) }

    static let script = #"""
        set -euo pipefail
        cd "$1"
        mkdir -p newcerts
        cat > der.py <<'PY'
        \#(OpenSSLCAFiles.derPython)
        PY
        cat > ca.cnf <<'CNF'
        \#(OpenSSLCAFiles.commonConfiguration)
        [ v3_ca_no_key_usage ]
        basicConstraints = critical, CA:true
        subjectKeyIdentifier = hash
        authorityKeyIdentifier = keyid:always
        [ v3_ca_no_crl_sign ]
        basicConstraints = critical, CA:true
        keyUsage = critical, keyCertSign
        subjectKeyIdentifier = hash
        authorityKeyIdentifier = keyid:always
        [ v3_leaf ]
        basicConstraints = CA:false
        keyUsage = critical, digitalSignature, keyEncipherment
        extendedKeyUsage = serverAuth
        subjectKeyIdentifier = hash
        authorityKeyIdentifier = keyid:always
        subjectAltName = DNS:valid.test, IP:127.0.0.1
        [ v3_must_staple ]
        basicConstraints = CA:false
        keyUsage = critical, digitalSignature, keyEncipherment
        extendedKeyUsage = serverAuth
        subjectKeyIdentifier = hash
        authorityKeyIdentifier = keyid:always
        subjectAltName = DNS:valid.test, IP:127.0.0.1
        tlsfeature = status_request
        [ v3_responder ]
        basicConstraints = CA:false
        keyUsage = critical, digitalSignature
        extendedKeyUsage = OCSPSigning
        subjectKeyIdentifier = hash
        authorityKeyIdentifier = keyid:always
        [ crl_plain ]
        authorityKeyIdentifier = keyid:always
        [ crl_critical ]
        authorityKeyIdentifier = keyid:always
        1.3.6.1.4.1.55555.1 = critical, ASN1:NULL
        CNF
        echo 2000 > serial
        export CA=root  # ca.cnf names the database of the CA in $CA; req reads the file too
        Q=-quiet
        key() { openssl genpkey $Q -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$1.key" 2>/dev/null; }
        newdb() { : > "$1.index"; echo 01 > "$1.crlnumber"; }
        root() { # name CN [extensions]
          key "$1"; newdb "$1"
          openssl req -new -config ca.cnf -key "$1.key" -subj "/CN=$2" -out "$1.csr"
          CA=$1 openssl ca -batch -selfsign -config ca.cnf -keyfile "$1.key" -in "$1.csr" -out "$1.pem" -extensions "${3:-v3_ca}" \
            -startdate 20190101000000Z -enddate 20460101000000Z -notext 2>/dev/null
        }
        sign() { # name CN issuer extensions
          key "$1"
          openssl req -new -config ca.cnf -key "$1.key" -subj "/CN=$2" -out "$1.csr"
          CA=$3 openssl ca -batch -config ca.cnf -cert "$3.pem" -keyfile "$3.key" -in "$1.csr" -out "$1.pem" -extensions "$4" \
            -startdate 20200101000000Z -enddate 20450101000000Z -notext 2>/dev/null
        }
        ca() { # name CN issuer extensions: a CA with its own database
          sign "$@"; newdb "$1"
        }
        revoke() { CA=$2 openssl ca -batch -config ca.cnf -cert "$2.pem" -keyfile "$2.key" -revoke "$1.pem" 2>/dev/null; }
        crl() { # issuer output [extra options]
          local issuer=$1 out=$2; shift 2
          CA=$issuer openssl ca -batch -config ca.cnf -cert "$issuer.pem" -keyfile "$issuer.key" -gencrl -crlexts crl_plain \
            -out "$out.crl" "$@" 2>/dev/null
        }

        root root "Revocation Test Root"
        root nokuroot "Root Without Key Usage" v3_ca_no_key_usage
        ca inter "Revocation Test Intermediate" root v3_ca
        ca revokedinter "Revoked Intermediate" root v3_ca
        ca nocrlsign "Intermediate Without cRLSign" root v3_ca_no_crl_sign
        sign good valid.test inter v3_leaf
        sign revoked valid.test inter v3_leaf
        sign muststaple valid.test inter v3_must_staple
        sign responder "Revocation Test OCSP Responder" inter v3_responder
        sign underrevoked valid.test revokedinter v3_leaf
        sign undernocrlsign valid.test nocrlsign v3_leaf
        sign undernokuroot valid.test nokuroot v3_leaf
        sign revokedundernokuroot valid.test nokuroot v3_leaf
        key forger
        openssl req -new -x509 -config ca.cnf -key forger.key -subj "/CN=Revocation Test OCSP Responder" -days 3650 -out forger.pem

        revoke revoked inter
        revoke revokedinter root
        revoke revokedundernokuroot nokuroot
        crl root root
        crl inter inter
        crl revokedinter revokedinter
        crl nocrlsign nocrlsign
        crl nokuroot nokuroot
        # inter's CRL as a CA issues it without a crlnumber file: no CRLNumber extension.
        sed '/^crlnumber/d' ca.cnf > ca-nonumber.cnf
        CA=inter openssl ca -batch -config ca-nonumber.cnf -cert inter.pem -keyfile inter.key -gencrl -crlexts crl_plain \
          -out inter-nonumber.crl 2>/dev/null
        openssl crl -in inter-nonumber.crl -outform DER -out inter-nonumber.der.crl
        crl inter inter-stale -crl_lastupdate 20200101000000Z -crl_nextupdate 20210101000000Z
        CA=inter openssl ca -batch -config ca.cnf -cert inter.pem -keyfile inter.key -gencrl -crlexts crl_critical \
          -out inter-critical.crl 2>/dev/null
        openssl crl -in inter.crl -outform DER -out inter.der.crl
        cat root.crl inter.crl revokedinter.crl nocrlsign.crl > all.crl
        cp root.crl rootonly.crl

        ocsp() { # leaf output signer-cert signer-key
          openssl ocsp -index inter.index -CA inter.pem -issuer inter.pem -cert "$1.pem" -rsigner "$3.pem" -rkey "$4.key" \
            -ndays 1 -respout "$2.ocsp" >/dev/null 2>&1
        }
        ocsp good good responder responder
        ocsp revoked revoked responder responder
        ocsp muststaple muststaple responder responder
        ocsp good good-by-inter inter inter
        ocsp_md() { # leaf output digest [index]
          openssl ocsp -index "${4:-inter.index}" -CA inter.pem -issuer inter.pem -"$3" -cert "$1.pem" -rsigner responder.pem \
            -rkey responder.key -ndays 1 -respout "$2.ocsp" >/dev/null 2>&1
        }
        for digest in sha256 sha384 sha512 md5; do ocsp_md good "good-$digest" "$digest"; done
        ocsp_md revoked revoked-sha256 sha256
        # A forger's index in which the revoked leaf is valid: the forged response says "good".
        sed 's/^R\t\([^\t]*\)\t[^\t]*\t/V\t\1\t\t/' inter.index > forged.index
        cp inter.index.attr forged.index.attr  # unique_subject = no, as in inter's own
        openssl ocsp -index forged.index -CA inter.pem -issuer inter.pem -cert revoked.pem -rsigner forger.pem -rkey forger.key \
          -ndays 1 -respout forged-good.ocsp >/dev/null 2>&1
        # The genuine responder saying "good" of the revoked leaf under SHA-256, merged before its SHA-1 "revoked".
        ocsp_md revoked revoked-said-good-sha256 sha256 forged.index
        python3 - revoked-said-good-sha256.ocsp revoked.ocsp revoked-also-good.ocsp <<'PY'
        import subprocess, sys
        from der import content, elements, wrap
        def basic(path):  # BasicOCSPResponse fields: tbsResponseData, signatureAlgorithm, signature, [0] certs
            _, response_bytes = elements(content(open(path, "rb").read()))
            _, octets = elements(content(content(response_bytes)))
            return elements(content(content(octets)))
        def fields(tbs):  # ResponseData fields, and the index of `responses` (the only SEQUENCE among them)
            items = elements(content(tbs))
            return items, next(i for i, item in enumerate(items) if item[0] == 0x30)
        first, second, output = sys.argv[1:4]
        a, b = basic(first), basic(second)
        (fa, ia), (fb, ib) = fields(a[0]), fields(b[0])
        singles = elements(content(fa[ia])) + elements(content(fb[ib]))
        tbs = wrap(0x30, b"".join(fa[:ia] + [wrap(0x30, b"".join(singles))] + fa[ia + 1:]))
        open("merged.tbs", "wb").write(tbs)
        signature = subprocess.run(["openssl", "dgst", "-sha256", "-sign", "responder.key", "merged.tbs"], check=True, capture_output=True).stdout
        basic_der = wrap(0x30, tbs + a[1] + wrap(0x03, b"\0" + signature) + b"".join(a[3:]))
        basic_oid = wrap(0x06, bytes.fromhex("2b0601050507300101"))  # id-pkix-ocsp-basic
        open(output, "wb").write(wrap(0x30, wrap(0x0a, b"\0") + wrap(0xa0, wrap(0x30, basic_oid + wrap(0x04, basic_der)))))
        PY
        # inter's CRL re-signed without nextUpdate (openssl ca always writes one): the TBS with its fifth field
        # removed, signed by inter's key, in DER and PEM.
        openssl crl -in inter.crl -outform DER -out inter.crl.der
        python3 - <<'PY'
        from der import elements, read, wrap
        der = open("inter.crl.der", "rb").read()
        _, h, _ = read(der, 0)
        tbs, algorithm, _ = elements(der[h:])
        _, th, _ = read(tbs, 0)
        fields = elements(tbs[th:])
        assert fields[4][0] in (0x17, 0x18), "the fifth TBS field is not nextUpdate"
        open("nonext.tbs", "wb").write(wrap(0x30, b"".join(fields[:4] + fields[5:])))
        import subprocess
        signature = subprocess.run(["openssl", "dgst", "-sha256", "-sign", "inter.key", "nonext.tbs"], check=True, capture_output=True).stdout
        open("inter-nonext.der.crl", "wb").write(wrap(0x30, open("nonext.tbs", "rb").read() + algorithm + wrap(0x03, b"\0" + signature)))
        PY
        openssl crl -inform DER -in inter-nonext.der.crl -out inter-nonext.crl
        """#
}
