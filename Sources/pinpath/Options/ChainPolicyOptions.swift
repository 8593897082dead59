import ArgumentParser
import PinpathSecurity
import PinpathSupport

/// `--profile` and `--max-depth`: the rules a verified path must meet beyond OpenSSL's (`audit`, `request`,
/// `verify`).
struct ProfileOptions: ParsableArguments {
    @Option(
        help:
            """
            The rules a chain must meet beyond OpenSSL's: auto (the default: webpki for a chain to the system store, rfc5280 \
            for one to an anchor you give with --ca-file or --pin-file), webpki (RFC 5280 and the Baseline Requirements) or \
            rfc5280 (RFC 5280 alone) for every chain.
            """
    )
    var profile: ProfileSelection = .auto

    @Option(name: .customLong("max-depth"), help: "The most certificates a verified chain may have, the root included (1-100).")
    var maxDepth: Int?

    func validate() throws {
        try ArgumentRefusal.checking { () throws(CommandFailure) in
            if let maxDepth, !(1...100).contains(maxDepth) {
                throw CommandFailure.usage("--max-depth must be from 1 to 100 (got \(maxDepth))")
            }
        }
    }

    /// Whether a policy beyond the default one is needed for these options.
    var isSet: Bool { profile != .auto || maxDepth != nil }
}

/// `--pin`, `--pin-file` and `--mode`: the pins a chain must carry (`audit`, `request`, `verify`).
struct PinOptions: ParsableArguments {
    @Option(
        name: .customLong("pin"),
        help: """
            A pin, sha256/<base64 of the SHA-256 of the SubjectPublicKeyInfo>, or curl's sha256//… or HPKP's \
            pin-sha256="…" (repeatable).
            """)
    var pins: [SPKIPin] = []

    @Option(
        name: .customLong("pin-file"),
        help: """
            Pins from this file (repeatable): sha256/…, sha256//… or pin-sha256="…" lines (# comments), or the keys \
            of the certificates or keys in it (PEM or DER).
            """)
    var pinFiles: [String] = []

    @Option(
        help:
            """
            What a pin matches: public_key (any certificate of the verified chain with a pinned key; the default with pins), \
            certificate (the --pin-file certificates are the anchors) or none (no pins).
            """
    )
    var mode: PinningMode?

    func validate() throws {
        try ArgumentRefusal.checking { () throws(CommandFailure) in
            let pinned = !pins.isEmpty || !pinFiles.isEmpty
            if let mode, mode != .none, !pinned {
                throw CommandFailure.usage("--mode needs pins: give --pin or --pin-file")
            }
            if mode == PinningMode.none, pinned {
                throw CommandFailure.usage("--mode none checks no pins; drop --pin and --pin-file, or use --mode public_key")
            }
            if mode == .certificate && !pins.isEmpty {
                throw CommandFailure.usage("--pin gives public-key pins; --mode certificate takes certificates from --pin-file")
            }
        }
    }

    /// Whether any pin option was given.
    var isSet: Bool { !pins.isEmpty || !pinFiles.isEmpty || mode != nil }

    /// The policy, from the pins and the certificates of `--pin-file` (the anchors with `--mode certificate`),
    /// held to the profile and revocation options.
    func policy(profile profileOptions: ProfileOptions, revocation revocationOptions: RevocationOptions) throws(CommandFailure)
        -> SecurityPolicy
    {
        var pinned = pins
        var certificates: [Certificate] = []
        for path in pinFiles {
            let file: PinFile
            do {
                file = try PinFile(contentsOf: path)
            } catch {
                throw CommandFailure.usage("--pin-file \(error)")
            }
            if mode == .certificate {
                guard !file.certificates.isEmpty else {
                    throw CommandFailure.usage(
                        "--pin-file \(path): --mode certificate needs certificates; it holds only pins, keys or CSRs")
                }
                certificates += file.certificates
            } else {
                pinned += file.pins
            }
        }
        let crls = try revocationOptions.crls()
        let revocation = try revocationOptions.mode()
        do {
            return try SecurityPolicy.oneOff(
                pins: pinned, pinnedCertificates: certificates, profile: profileOptions.profile,
                maximumChainDepth: profileOptions.maxDepth, crls: crls, revocation: revocation,
                ocspSoftFail: revocationOptions.ocspSoftFail)
        } catch {
            throw CommandFailure.usage("\(error)")
        }
    }
}

/// What a chain is judged by in `audit` and `verify`: the anchors, the pins, the profile and the time.
struct ChainPolicyOptions: ParsableArguments {
    @OptionGroup var pinOptions: PinOptions

    @Option(name: .customLong("ca-file"), help: "Trust the certificates in this PEM file instead of the system store.")
    var caFile: String?

    @OptionGroup var profileOptions: ProfileOptions

    @OptionGroup var revocationOptions: RevocationOptions

    @Option(help: "Verify as of this time (2026-01-31, 2026-01-31T12:00:00Z or @UNIX-SECONDS) instead of now.")
    var at: VerificationTime?

    /// The policy, from the pins and the certificates of `--pin-file` (the anchors with `--mode certificate`).
    func policy() throws(CommandFailure) -> SecurityPolicy {
        try pinOptions.policy(profile: profileOptions, revocation: revocationOptions)
    }

    func trustStore() throws(CommandFailure) -> TrustStore {
        do {
            return try caFile.map { try TrustStore(caFile: $0) } ?? TrustStore.system()
        } catch {
            throw caFile == nil
                ? CommandFailure.unavailable("the system trust store: \(error)")
                : CommandFailure.usage("--ca-file \(error)")
        }
    }
}

/// A server name given as an option (`--servername`, `--host`): a host name or an IP address, the same rules
/// as a HOST of `audit`, without a port; an IPv6 address may come in brackets.
func parseServerName(_ text: String, option: String) throws(CommandFailure) -> String {
    let endpoint: TLSEndpoint
    do {
        endpoint = try TLSEndpoint(parsing: text, defaultPort: 443)
    } catch {
        throw CommandFailure.usage("\(option): \(error)")
    }
    guard endpoint.host == text || "[\(endpoint.host)]" == text else {
        throw CommandFailure.usage("\(option) \"\(text)\" is a name, not NAME:PORT")
    }
    return endpoint.host
}
