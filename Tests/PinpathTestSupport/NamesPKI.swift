import Foundation
import PinpathSecurity
import Testing

/// Certificates for the name and name-constraint rules, made one at a time with the openssl CLI into a
/// temporary directory removed at exit: each test issues the root, intermediates and leaf it needs, with the
/// extension lines that break (or satisfy) one rule. Names must be unique across tests (they are file names).
///
/// Keys are EC P-256; CAs carry critical basicConstraints, critical keyCertSign/cRLSign and key identifiers;
/// leaves carry digitalSignature, serverAuth and key identifiers, and only the names a test gives them.
public final class NamesPKI: Sendable {
    public static let shared = NamesPKI(
        directory: GeneratedDirectory.make(
            "pinpath-names-pki", what: "the names PKI directory", script: #"printf '[req]\ndistinguished_name=dn\n[dn]\n' > "$1/req.cnf""#))

    /// The directory holding `<name>.pem`, `<name>.key`.
    public let directory: String

    /// The extensions of every CA certificate.
    public static let caExtensions = [
        "basicConstraints=critical,CA:true", "keyUsage=critical,keyCertSign,cRLSign", "subjectKeyIdentifier=hash",
    ]
    /// The extensions of every leaf, before the test's own (its names).
    public static let leafExtensions = [
        "basicConstraints=CA:false", "keyUsage=critical,digitalSignature", "extendedKeyUsage=serverAuth",
        "subjectKeyIdentifier=hash", "authorityKeyIdentifier=keyid",
    ]

    private init(directory: String) {
        self.directory = directory
    }

    public func path(_ name: String, _ suffix: String = "pem") -> String { "\(directory)/\(name).\(suffix)" }

    /// A self-signed CA certificate `name` with `extensions` added to ``caExtensions``.
    @discardableResult
    public func root(_ name: String, subject: String? = nil, extensions: [String] = []) throws -> Certificate {
        try issue(name, issuer: nil, subject: subject ?? "/CN=\(name)", extensions: Self.caExtensions + extensions)
    }

    /// A CA certificate `name` signed by `issuer`, with `extensions` added to ``caExtensions``.
    @discardableResult
    public func intermediate(_ name: String, issuer: String, subject: String? = nil, extensions: [String] = []) throws -> Certificate {
        try issue(
            name, issuer: issuer, subject: subject ?? "/CN=\(name)",
            extensions: Self.caExtensions + ["authorityKeyIdentifier=keyid"] + extensions)
    }

    /// A leaf `name` signed by `issuer`, with `extensions` (its SAN, usually) added to ``leafExtensions``.
    /// `subject` is openssl's `/CN=…` form (`/` for an empty subject; UTF-8 is kept).
    @discardableResult
    public func leaf(_ name: String, issuer: String, subject: String, extensions: [String]) throws -> Certificate {
        try issue(name, issuer: issuer, subject: subject, extensions: Self.leafExtensions + extensions)
    }

    /// Issues `name` (a new key, a request, then `openssl x509 -req` signed by `issuer`'s key, or its own
    /// when `issuer` is `nil`) with exactly `extensions` (openssl config lines: `subjectAltName=DNS:a.test`,
    /// `nameConstraints=critical,DER:3000`). With `key`, the certificate gets the key of the earlier certificate
    /// of that name instead of a new one (a CA's second certificate for its key, a cross-signature).
    public func issue(_ name: String, issuer: String?, subject: String, extensions: [String], key: String? = nil) throws -> Certificate {
        try (["[ext]"] + extensions).joined(separator: "\n").appending("\n")
            .write(toFile: path(name, "ext"), atomically: true, encoding: .utf8)
        try Shell.check(["/bin/bash", "-c", Self.script, "issue", directory, name, issuer ?? "-", subject, key ?? "-"])
        return try #require(try Certificate.certificates(contentsOf: path(name)).first)
    }

    static let script = #"""
        set -euo pipefail
        cd "$1"; name=$2; issuer=$3; subject=$4; key=$5
        if [ "$key" = - ]; then
          openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$name.key"
        elif [ "$key" != "$name" ]; then
          cp "$key.key" "$name.key"
        fi
        openssl req -new -utf8 -config req.cnf -key "$name.key" -subj "$subject" -out "$name.csr"
        if [ "$issuer" = - ]; then signer=(-signkey "$name.key"); else signer=(-CA "$issuer.pem" -CAkey "$issuer.key"); fi
        openssl x509 -req -in "$name.csr" "${signer[@]}" -extfile "$name.ext" -extensions ext -days 3650 -sha256 \
          -out "$name.pem" 2>&1
        """#
}
