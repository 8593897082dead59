import Foundation

/// Client certificates for mutual TLS, issued by the test PKI's intermediate (clientAuth), generated once per
/// run with the openssl CLI: `client.pem` with `client.key` (plain) and `client-encrypted.key` (AES-256,
/// password ``password``; `client-encrypted-2.key`, the same key under ``otherPassword``), a `stranger`
/// certificate from the untrusted root, `*-combined.pem` (certificate and key in one file), a copy of the key
/// at another path, and `client-ca.pem` (the test root and intermediate) for `openssl s_server -Verify 1 -CAfile`.
public final class ClientCertificatePKI: Sendable {
    public static let shared = ClientCertificatePKI(
        directory: GeneratedDirectory.make(
            "pinpath-client-certs", what: "the client certificates", script: script, arguments: [TestPKI.shared.directory]))

    /// The encrypted key's password.
    public static let password = "correct horse battery staple"
    /// `client-encrypted-2.key`'s password.
    public static let otherPassword = "another password"

    public let directory: String

    private init(directory: String) {
        self.directory = directory
    }

    public func path(_ name: String, _ suffix: String = "pem") -> String { "\(directory)/\(name).\(suffix)" }

    /// $1: this directory; $2: the test PKI's.
    static let script = #"""
        set -euo pipefail
        cd "$1"
        PKI="$2"
        cat > client.ext <<'EXT'
        basicConstraints = CA:false
        keyUsage = digitalSignature
        extendedKeyUsage = clientAuth
        EXT
        # client name CN issuer
        client() {
          openssl genpkey -quiet -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$1.key" 2>/dev/null
          openssl req -new -key "$1.key" -subj "/CN=$2" -out "$1.csr" 2>/dev/null
          openssl x509 -req -in "$1.csr" -CA "$PKI/$3.pem" -CAkey "$PKI/$3.key" -set_serial "0x$(openssl rand -hex 8)" -days 3650 \
            -extfile client.ext -out "$1.pem" 2>/dev/null
        }
        client client "pinpath test client" inter
        client stranger "pinpath stranger" rogueroot
        openssl pkey -in client.key -aes256 -passout "pass:correct horse battery staple" -out client-encrypted.key
        openssl pkey -in client.key -aes256 -passout "pass:another password" -out client-encrypted-2.key
        cp client.key client-copy.key
        cat client.pem client.key > client-combined.pem
        cat stranger.pem stranger.key > stranger-combined.pem
        cat "$PKI/root.pem" "$PKI/inter.pem" > client-ca.pem
        """#
}
