import ArgumentParser
import PinpathReachability
import PinpathSecurity

// Command-line values parsed by the libraries' own parsers, so that a command receives typed values and a
// refusal reads as the library words it (see ``ArgumentRefusal``).

extension SPKIPin: ExpressibleByArgument {
    /// `--pin sha256/<base64>` (or curl's `sha256//…`, HPKP's `pin-sha256="…"`).
    public init?(argument: String) {
        guard let pin = ArgumentRefusal.parse({ try SPKIPin(parsing: argument) }, message: { "--pin: \($0)" }) else { return nil }
        self = pin
    }
}

extension TLSEndpoint: ExpressibleByArgument {
    /// A `HOST[:PORT]` argument; the port defaults to 443.
    public init?(argument: String) {
        guard let endpoint = ArgumentRefusal.parse({ try TLSEndpoint(parsing: argument) }, message: { $0 }) else { return nil }
        self = endpoint
    }
}

extension VerificationTime: ExpressibleByArgument {
    /// `--at 2026-01-31`, `--at 2026-01-31T12:00:00Z` or `--at @UNIX-SECONDS`.
    public init?(argument: String) {
        guard let time = ArgumentRefusal.parse({ try VerificationTime(parsing: argument) }, message: { "--at \($0)" }) else {
            return nil
        }
        self = time
    }
}

extension ReachabilityTarget: ExpressibleByArgument {
    /// `--target HOST`: a host name or an IP address.
    public init?(argument: String) {
        guard let target = ArgumentRefusal.parse({ try ReachabilityTarget(parsing: argument) }, message: { "--target \($0)" }) else {
            return nil
        }
        self = target
    }
}

extension PinningMode: ExpressibleByArgument {
    /// The command line spells `public_key` with a hyphen, as its other values; the configuration's spelling
    /// is accepted too.
    public init?(argument: String) { self.init(rawValue: argument == "public-key" ? "public_key" : argument) }

    public static var allValueStrings: [String] { ["none", "public-key", "certificate"] }
}

// Parsed by name, listed in the help from `allCases` (RawRepresentable and CaseIterable in PinpathSecurity).
extension ProfileSelection: ExpressibleByArgument {}

extension RevocationMode: ExpressibleByArgument {}

// swift-format-ignore: AvoidRetroactiveConformances
// The executable owns both sides of its command line; no library sees this conformance.
extension Duration: @retroactive ExpressibleByArgument {
    /// A number of seconds, as the command line has always taken them (`--timeout 2.5`); refused when not a
    /// finite number or beyond any sensible wait (10^12 s), which `Duration` could not hold exactly.
    public init?(argument: String) {
        guard let seconds = Double(argument), seconds.isFinite, abs(seconds) <= 1e12 else { return nil }
        self = .seconds(seconds)
    }

    /// The seconds, as the help shows a default (`10.0`).
    public var defaultValueDescription: String { "\(inSeconds)" }
}
