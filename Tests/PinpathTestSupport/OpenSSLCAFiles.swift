/// What the test PKIs that run `openssl ca` with one database per CA share (``RevocationPKI``,
/// ``OCSPResponderPKI``, the three-service scenario's): the first part of their `ca.cnf`, and a DER reader and writer for the surgery some
/// fixtures need (a re-dated OCSP answer, a CRL with an odd extension), which Python's standard library lacks.
public enum OpenSSLCAFiles {
    /// `[ca]`, `[CA_default]` (the database `$CA.index` and CRL number `$CA.crlnumber` of the CA named in `$CA`, one
    /// serial file, SHA-256, 30-day CRLs, any subject), `[req]` and `[v3_ca]`; each PKI appends its own extension
    /// sections.
    public static let commonConfiguration = #"""
        [ ca ]
        default_ca = CA_default
        [ CA_default ]
        dir = .
        database = ./$ENV::CA.index
        crlnumber = ./$ENV::CA.crlnumber
        new_certs_dir = ./newcerts
        serial = ./serial
        default_md = sha256
        default_crl_days = 30
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
        """#

    /// `der.py`: `read` (tag, header and content lengths at an offset), `elements`, `content` and `wrap`.
    public static let derPython = #"""
        def read(b, i):  # (tag, header length, content length) of the DER element at i
            n = b[i + 1]
            if n < 0x80: return b[i], 2, n
            k = n & 0x7f
            return b[i], 2 + k, int.from_bytes(b[i + 2:i + 2 + k], "big")
        def elements(b):
            i, out = 0, []
            while i < len(b):
                _, h, n = read(b, i); out.append(b[i:i + h + n]); i += h + n
            return out
        def content(e):
            _, h, n = read(e, 0)
            return e[h:h + n]
        def wrap(tag, content):
            n = len(content)
            size = bytes([n]) if n < 0x80 else bytes([0x80 | ((n.bit_length() + 7) // 8)]) + n.to_bytes((n.bit_length() + 7) // 8, "big")
            return bytes([tag]) + size + content
        """#
}
