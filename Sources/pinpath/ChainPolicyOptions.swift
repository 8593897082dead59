import ArgumentParser
import FoundationEssentials
import PinpathSecurity
import PinpathSupport

// Parsed by name, listed in the help from `allCases` (RawRepresentable and CaseIterable in PinpathSecurity).
extension VerificationProfile: ExpressibleByArgument {}

/// `--profile` and `--max-depth`: the rules a verified path must meet beyond OpenSSL's (`audit`, `request`,
/// `verify`).
struct ProfileOptions: ParsableArguments {
    @Option(help: "The rules a chain must meet beyond OpenSSL's: webpki (RFC 5280 and the Baseline Requirements, the default) or rfc5280 (RFC 5280 alone, for private PKIs).")
    var profile: VerificationProfile = .webpki

    @Option(name: .customLong("max-depth"), help: "The most certificates a verified chain may have, the root included (1-100).")
    var maxDepth: Int?

    /// The maximum depth, checked.
    func maximumDepth() throws -> Int? {
        guard let maxDepth else { return nil }
        guard (1...100).contains(maxDepth) else {
            throw CommandFailure.usage("--max-depth must be from 1 to 100 (got \(maxDepth))")
        }
        return maxDepth
    }
}

/// What a chain is judged by in `audit` and `verify`: the anchors, the pins, the profile and the time.
struct ChainPolicyOptions: ParsableArguments {
    /// What a pin matches.
    enum Mode: String, ExpressibleByArgument, CaseIterable {
        case none
        case publicKey = "public-key"
        case certificate

        /// The configuration's spelling (`public_key`) is accepted too.
        init?(argument: String) { self.init(rawValue: argument == "public_key" ? "public-key" : argument) }
    }

    @Option(name: .customLong("pin"), help: "A pin, sha256/<base64 of the SHA-256 of the SubjectPublicKeyInfo> (repeatable).")
    var pins: [String] = []

    @Option(
        name: .customLong("pin-file"),
        help: "Pins from this file (repeatable): sha256/… lines (# comments), or the keys of the certificates or keys in it (PEM or DER).")
    var pinFiles: [String] = []

    @Option(help: "What a pin matches: public-key (any certificate of the verified chain with a pinned key; the default with pins), certificate (the --pin-file certificates are the anchors) or none (no pins).")
    var mode: Mode?

    @Option(name: .customLong("ca-file"), help: "Trust the certificates in this PEM file instead of the system store.")
    var caFile: String?

    @OptionGroup var profileOptions: ProfileOptions

    @OptionGroup var revocationOptions: RevocationOptions

    @Option(help: "Verify as of this time (2026-01-31, 2026-01-31T12:00:00Z or @UNIX-SECONDS) instead of now.")
    var at: String?

    /// Checks that the options make sense together. Not in `validate()`, so that the message is pinpath's one
    /// line (`pinpath: error: …`) and not ArgumentParser's usage block.
    func check() throws {
        let pinned = !pins.isEmpty || !pinFiles.isEmpty
        if let mode, mode != .none, !pinned {
            throw CommandFailure.usage("--mode needs pins: give --pin or --pin-file")
        }
        if mode == Mode.none, pinned {
            throw CommandFailure.usage("--mode none checks no pins; drop --pin and --pin-file, or use --mode public-key")
        }
        if mode == .certificate && !pins.isEmpty {
            throw CommandFailure.usage("--pin gives public-key pins; --mode certificate takes certificates from --pin-file")
        }
        _ = try profileOptions.maximumDepth()
    }

    /// The policy: one pin is enough (a check of a chain is a diagnostic: the backup pin that enforcing
    /// policies need elsewhere in pinpath is not required).
    func policy() throws -> SecurityPolicy {
        var pinned: [SPKIPin] = []
        var certificates: [Certificate] = []
        for text in pins {
            do {
                pinned.append(try SPKIPin(parsing: text))
            } catch let error as SecurityError {
                throw CommandFailure.usage("--pin: \(error.message)")
            }
        }
        for file in pinFiles {
            let found = try PinFile.load(file)
            if mode == .certificate {
                guard !found.certificates.isEmpty else {
                    throw CommandFailure.usage("--pin-file \(file): --mode certificate needs certificates; it holds only pins, keys or CSRs")
                }
                certificates += found.certificates
            } else {
                pinned += found.pins
            }
        }
        let profile = profileOptions.profile
        let depth = try profileOptions.maximumDepth()
        let crls = try revocationOptions.crls()
        let revocation = revocationOptions.revocation
        do {
            if !certificates.isEmpty {
                return try SecurityPolicy(
                    mode: .certificate, pinnedCertificates: certificates, requiresBackupPin: false, profile: profile,
                    maximumChainDepth: depth, crls: crls, revocation: revocation)
            }
            return try SecurityPolicy(
                mode: pinned.isEmpty ? .none : .publicKey, pins: pinned, requiresBackupPin: false, profile: profile,
                maximumChainDepth: depth, crls: crls, revocation: revocation)
        } catch let error as SecurityError {
            throw CommandFailure.usage(error.message)
        }
    }

    func trustStore() throws -> TrustStore {
        do {
            return try caFile.map { try TrustStore(caFile: $0) } ?? TrustStore.system()
        } catch let error as SecurityError {
            throw caFile == nil
                ? CommandFailure.unavailable("the system trust store: \(error.message)")
                : CommandFailure.usage("--ca-file \(error.message)")
        }
    }

    /// `--at`: RFC 3339, a bare date (midnight UTC) or `@UNIX-SECONDS`.
    func verificationTime() throws -> Date? {
        guard let at else { return nil }
        if at.hasPrefix("@"), let seconds = Int64(at.dropFirst()) {
            return Date(timeIntervalSince1970: TimeInterval(seconds))
        }
        let text = at.count == 10 ? at + "T00:00:00Z" : at
        guard let date = try? Date.ISO8601FormatStyle().parse(text) else {
            throw CommandFailure.usage("--at \"\(at)\" is not a time (use 2026-01-31, 2026-01-31T12:00:00Z or @UNIX-SECONDS)")
        }
        return date
    }
}

/// What a `--pin-file` holds: `sha256/…` lines (the pins deployed clients hold, as `pinpath pins` prints
/// them), or certificates and keys whose public keys are pinned.
struct PinFile {
    var pins: [SPKIPin] = []
    /// The certificates found, for `--mode certificate`; none in a file of pin lines.
    var certificates: [Certificate] = []

    /// Reads `path`; a line that starts with `sha256/`, in a file with no PEM block, makes it a file of pin
    /// lines, each then checked.
    static func load(_ path: String) throws -> PinFile {
        let bytes: [UInt8]
        do {
            bytes = try readWholeFile(path)
        } catch {
            throw CommandFailure.usage("--pin-file \(error)")
        }
        let text = String(decoding: bytes, as: UTF8.self)
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
            .map { line in String(line.prefix { $0 != "#" }.drop { $0.isWhitespace }.reversed().drop { $0.isWhitespace }.reversed()) }
        guard !text.contains("-----BEGIN "), lines.contains(where: { $0.hasPrefix("sha256/") }) else {
            do {
                let found = try KeyMaterial.load(bytes: bytes, source: path)
                return PinFile(pins: found.map(\.spkiPin), certificates: found.compactMap(\.certificate))
            } catch let error as SecurityError {
                throw CommandFailure.usage("--pin-file \(error)")
            }
        }
        var file = PinFile()
        for (index, line) in lines.enumerated() where !line.isEmpty {
            // `pinpath pins` prints `sha256/… SUBJECT`: the pin is the first word.
            let pin = line.prefix { !$0.isWhitespace }
            do {
                file.pins.append(try SPKIPin(parsing: String(pin)))
            } catch let error as SecurityError {
                throw CommandFailure.usage("--pin-file \(path):\(index + 1): \(error.message)")
            }
        }
        return file
    }
}

/// A server name given as an option (`--servername`, `--host`): a host name or an IP address, the same rules
/// as a HOST of `audit`, without a port; an IPv6 address may come in brackets.
func parseServerName(_ text: String, option: String) throws -> String {
    let endpoint: TLSEndpoint
    do {
        endpoint = try TLSEndpoint(parsing: text, defaultPort: 443)
    } catch let error as SecurityError {
        throw CommandFailure.usage("\(option): \(error.message)")
    }
    guard endpoint.host == text || "[\(endpoint.host)]" == text else {
        throw CommandFailure.usage("\(option) \"\(text)\" is a name, not NAME:PORT")
    }
    return endpoint.host
}
