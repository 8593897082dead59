import CLinuxShims
import COpenSSL
import Glibc
import Synchronization

/// The users of `metrics.basic_auth` and their bcrypt hashes, as exporter-toolkit's `basic_auth_users`: checked
/// with the system's `crypt(3)` (libxcrypt), compared in constant time, successful checks cached.
///
/// A hash and a password are secrets: neither is ever in a description, a log line, an event or a metric.
struct BasicAuthUsers: Sendable, Equatable {
    /// Each user's hash; user names are not secret (`check-config --effective` lists them).
    let hashes: [String: BcryptHash]
    /// A hash of the users' cost that matches no password, checked for an unknown user so that a wrong user name
    /// costs what a wrong password does.
    let decoy: BcryptHash

    init(hashes: [String: BcryptHash]) {
        self.hashes = hashes
        let cost = hashes.values.map(\.cost).max() ?? 10
        // A canonical 22-character salt (Openwall's test vectors') and 31 characters of hash no password gives.
        decoy = BcryptHash(
            verified: "$2b$\(cost < 10 ? "0" : "")\(cost)$CCCCCCCCCCCCCCCCCCCCC." + String(repeating: "O", count: 31), cost: cost)
    }

    /// The user names, sorted.
    var users: [String] { hashes.keys.sorted() }

    /// Whether `password` is `user`'s, by bcrypt: 50 to 100 ms at cost 10, so never on the event loop.
    func verify(user: String, password: String) -> Bool {
        let known = hashes[user]
        let matches = (known ?? decoy).matches(password)
        return known != nil && matches
    }
}

/// A bcrypt hash (`$2b$`, `$2y$` or `$2a$`, a two-digit cost, 53 characters of salt and hash), checked at load.
struct BcryptHash: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    private let text: String
    /// The cost (log2 of the rounds), 4 to 31.
    let cost: Int

    fileprivate init(verified text: String, cost: Int) {
        self.text = text
        self.cost = cost
    }

    /// Why a value is not a bcrypt hash, in words that never repeat it (it may be a password written by mistake).
    struct ParseError: Error, CustomStringConvertible {
        let description: String
    }

    private static let alphabet = Set("./ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789".utf8)

    /// Reads a stored hash.
    /// - Throws: ``ParseError`` saying what is wrong without quoting the value.
    init(parsing value: String) throws(ParseError) {
        let make = "make one with `htpasswd -nbBC 10 \"\" PASSWORD | tr -d ':\\n'` or `mkpasswd -m bcrypt -R 10`"
        let bytes = Array(value.utf8)
        guard bytes.count == 60, bytes.starts(with: Array("$2".utf8)),
            [UInt8(ascii: "a"), UInt8(ascii: "b"), UInt8(ascii: "y")].contains(bytes[2]),
            bytes[3] == UInt8(ascii: "$"), bytes[6] == UInt8(ascii: "$")
        else {
            let shape: String
            if !value.hasPrefix("$") {
                shape = "it does not start with $ (a plaintext password is never accepted here)"
            } else if value.hasPrefix("$2") && value.utf8.count == 60 {
                shape = "its bcrypt variant is not $2b$, $2y$ or $2a$"
            } else if value.hasPrefix("$2") {
                shape = "it is \(value.utf8.count) characters long; a bcrypt hash has 60"
            } else {
                shape = "it is not a bcrypt hash ($2b$, $2y$ or $2a$); other crypt methods are not accepted"
            }
            throw ParseError(description: "not a bcrypt hash: \(shape); \(make)")
        }
        guard let cost = Int(String(decoding: bytes[4..<6], as: UTF8.self)), (4...31).contains(cost) else {
            throw ParseError(description: "the bcrypt cost is not a number from 04 to 31; \(make)")
        }
        guard bytes[7...].allSatisfy({ Self.alphabet.contains($0) }) else {
            throw ParseError(description: "the salt and hash hold characters outside bcrypt's alphabet (./A-Za-z0-9); \(make)")
        }
        self.init(verified: value, cost: cost)
    }

    /// Never the hash itself: not in a description, a debug description nor a `dump`.
    var description: String { "(bcrypt hash, cost \(cost))" }
    var debugDescription: String { description }
    var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }

    /// Whether bcrypt of `password` under this hash's salt and cost gives this hash; compared in constant time.
    /// A password with a NUL byte matches nothing (`crypt(3)` would stop at it).
    func matches(_ password: String) -> Bool {
        var output = [CChar](repeating: 0, count: 128)
        let hashed = password.utf8.contains(0) ? -1 : pinpath_crypt(password, text, &output, output.count)
        defer { output.withUnsafeMutableBytes { if let base = $0.baseAddress { explicit_bzero(base, $0.count) } } }
        let expected = Array(text.utf8)
        guard hashed == 0 else { return false }
        let computed = output.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
        guard computed.count == expected.count else { return false }
        return CRYPTO_memcmp(computed, expected, expected.count) == 0
    }
}

/// The credentials that passed recently, so that a scrape every second does not pay bcrypt each time: keyed by
/// SHA-256 of the user, the stored hash and the password (never the password itself), at most
/// ``capacity`` entries (the oldest goes first). Failures are not cached: a flood of wrong passwords cannot push a
/// right one out, and each costs a check.
final class CredentialCache: Sendable {
    static let capacity = 64
    private let entries = Mutex<[[UInt8]]>([])

    static func key(user: String, hash: BcryptHash?, password: String) -> [UInt8] {
        // Lengths first, so that ("ab", "c") and ("a", "bc") differ.
        var input: [UInt8] = []
        for part in [user, hash.map { "\($0.cost)" + $0.textForCache } ?? "", password] {
            withUnsafeBytes(of: UInt32(part.utf8.count).bigEndian) { input += $0 }
            input += part.utf8
        }
        defer { input.withUnsafeMutableBytes { if let base = $0.baseAddress { explicit_bzero(base, $0.count) } } }
        var digest = [UInt8](repeating: 0, count: Int(SHA256_DIGEST_LENGTH))
        _ = SHA256(input, input.count, &digest)
        return digest
    }

    func contains(_ key: [UInt8]) -> Bool { entries.withLock { $0.contains(key) } }

    func insert(_ key: [UInt8]) {
        entries.withLock { entries in
            guard !entries.contains(key) else { return }
            if entries.count >= Self.capacity { entries.removeFirst() }
            entries.append(key)
        }
    }

    func removeAll() { entries.withLock { $0.removeAll() } }
}

extension BcryptHash {
    /// The hash's text, for the cache key only.
    fileprivate var textForCache: String { text }
}
