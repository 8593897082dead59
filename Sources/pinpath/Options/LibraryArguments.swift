import ArgumentParser
import PinpathAgent
import PinpathHTTP
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
    /// `public_key`, as the configuration spells it; the hyphenated `public-key` of earlier releases is accepted too.
    public init?(argument: String) { self.init(rawValue: argument.replacing("-", with: "_")) }
}

// Parsed by name, listed in the help from `allCases` (RawRepresentable and CaseIterable in PinpathSecurity).
extension ProfileSelection: ExpressibleByArgument {}

extension RevocationMode: ExpressibleByArgument {
    /// `require_stapled`, as the configuration spells it; `require-stapled` is accepted too, as every
    /// underscore value is with a hyphen.
    public init?(argument: String) { self.init(rawValue: argument.replacing("-", with: "_")) }
}

// swift-format-ignore: AvoidRetroactiveConformances
// The executable owns both sides of its command line; no library sees this conformance.
extension Duration: @retroactive ExpressibleByArgument {
    /// A duration as the configuration writes it (`5s`, `1500ms`, `1m30s`), or a bare number of seconds as the
    /// command line has always taken them (`--timeout 2.5`); a bare number is refused when not finite or beyond
    /// any sensible wait (10^12 s), which `Duration` could not hold exactly.
    public init?(argument: String) {
        if let seconds = Double(argument) {
            guard seconds.isFinite, abs(seconds) <= 1e12 else { return nil }
            self = .seconds(seconds)
            return
        }
        guard let duration = try? DurationSyntax.parse(argument) else { return nil }
        self = duration
    }

    /// The seconds, as the help shows a default (`10.0`).
    public var defaultValueDescription: String { "\(inSeconds)" }
}

extension ResolvedAddress: ExpressibleByArgument {
    /// `--resolve HOST:PORT:ADDRESS`, curl's syntax: connect to ADDRESS for HOST:PORT.
    public init?(argument: String) {
        guard let entry = ArgumentRefusal.parse({ try ResolvedAddress(parsing: argument) }, message: { "--resolve \($0)" }) else {
            return nil
        }
        self = entry
    }
}
