import Foundation
import Testing

/// Leaves for the name `localhost`, issued by the test PKI's intermediate (one by its untrusted root), generated
/// once per test run with the openssl CLI. The request core and the agent connect by name, and `localhost` is
/// the one name that reaches an `openssl s_server` on loopback without a network namespace.
public final class LocalhostPKI: Sendable {
    public static let shared = LocalhostPKI(
        directory: GeneratedDirectory.make(
            "pinpath-localhost", what: "the localhost leaves", script: script, arguments: [TestPKI.shared.directory]))

    /// The directory holding `<name>.pem` and `<name>.key` for each leaf of the script.
    public let directory: String

    private init(directory: String) {
        self.directory = directory
    }

    public func path(_ name: String, _ suffix: String = "pem") -> String { "\(directory)/\(name).\(suffix)" }

    /// Writes the certificates at `paths`, in order, into one PEM file in this directory and returns its path.
    public func chainFile(_ name: String, _ paths: [String]) throws -> String {
        let file = "\(directory)/\(name)"
        try paths.map { try String(contentsOfFile: $0, encoding: .utf8) }.joined().write(toFile: file, atomically: true, encoding: .utf8)
        return file
    }

    /// $1: this directory; $2: the test PKI's, whose `ca.cnf`, intermediate and untrusted root issue the leaves.
    /// `openssl ca` sets exact dates (the expired leaf), as in TestPKI.
    static let script = #"""
        set -euo pipefail
        cd "$1"
        PKI="$2"
        cp "$PKI/ca.cnf" .
        mkdir -p newcerts
        : > index.txt
        echo 2000 > serial
        # leaf name issuer extensions end [CN]
        leaf() {
          openssl genpkey -quiet -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$1.key" 2>/dev/null
          openssl req -new -config ca.cnf -key "$1.key" -subj "/CN=${5:-localhost}" -out "$1.csr"
          openssl ca -batch -config ca.cnf -cert "$PKI/$2.pem" -keyfile "$PKI/$2.key" -in "$1.csr" -out "$1.pem" \
            -extensions "$3" -startdate 20200101000000Z -enddate "$4" -notext 2>/dev/null
        }
        export SAN=DNS:localhost
        leaf valid inter v3_leaf 20450101000000Z
        leaf rotated inter v3_leaf 20450101000000Z
        leaf expired inter v3_leaf 20210101000000Z
        leaf untrusted rogueroot v3_leaf 20450101000000Z
        leaf cnonly inter v3_cn_only 20450101000000Z
        """#
}
