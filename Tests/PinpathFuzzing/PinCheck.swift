import PinpathSecurity

/// Pin strings and host patterns, as policies, the configuration and the CLI's `--pin` read them
/// (``SPKIPin/init(parsing:)``, ``HostPattern/init(parsing:)``), on the fuzz bytes as text.
///
/// Promises checked: a refusal is a ``SecurityError`` of the right code that quotes the text; an accepted pin
/// has 32 bytes and its `sha256/…` form parses back to it; an accepted pattern's written form parses back to
/// it and matches the hosts it stands for.
enum PinCheck {
    static func check(_ bytes: [UInt8]) throws(InvariantViolation) {
        let text = String(decoding: bytes, as: UTF8.self)
        try checkPin(text)
        try checkHostPattern(text)
    }

    private static func checkPin(_ text: String) throws(InvariantViolation) {
        let pin: SPKIPin
        do {
            pin = try SPKIPin(parsing: text)
        } catch {
            try requireRefusal(error, .invalidPin, of: text)
            return
        }
        try require(pin.digest.count == 32, "pin \(excerpt(text)) accepted with \(pin.digest.count) bytes")
        let written = pin.description
        try require(written.hasPrefix("sha256/") && written.utf8.count == 51, "pin \(excerpt(text)) is written \(excerpt(written))")
        try require(
            (try? SPKIPin(parsing: written)) == pin, "pin \(excerpt(text)) is written \(excerpt(written)), which does not parse back to it")
        try require(pin.hpkp == "pin-sha256=\"\(pin.base64)\"", "pin \(excerpt(text)) has the HPKP form \(excerpt(pin.hpkp))")
    }

    private static func checkHostPattern(_ text: String) throws(InvariantViolation) {
        let pattern: HostPattern
        do {
            pattern = try HostPattern(parsing: text)
        } catch {
            try requireRefusal(error, .invalidHostPattern, of: text)
            return
        }
        let written = pattern.description
        try require(
            (try? HostPattern(parsing: written)) == pattern,
            "host pattern \(excerpt(text)) is written \(excerpt(written)), which does not parse back to it")
        // OkHttp's rule: no controls, spaces or URL delimiters; `:` and `%` only in an IPv6 address.
        let delimiters = written.unicodeScalars.filter { $0.value < 0x20 || $0.value == 0x7F || " #/?@[\\]".unicodeScalars.contains($0) }
        try require(
            delimiters.isEmpty, "host pattern \(excerpt(text)) was accepted with \(excerpt(String(String.UnicodeScalarView(delimiters))))")
        try require(!written.contains(":") || !written.hasPrefix("*"), "wildcard pattern \(excerpt(text)) was accepted with a \":\"")
        guard written.allSatisfy(\.isASCII) else { return }  // case folding beyond ASCII is not what hosts use
        // The domain a pattern names, and one label under it, are the hosts every form is about.
        let domain =
            written.hasPrefix("**.") ? String(written.dropFirst(3)) : written.hasPrefix("*.") ? String(written.dropFirst(2)) : written
        let expectations = [
            (domain, !written.hasPrefix("*.")),
            ("label.\(domain)", written.hasPrefix("*")),
            ("label.\(domain)".uppercased() + ".", written.hasPrefix("*")),
        ]
        for (host, expected) in expectations {
            try require(
                pattern.matches(host) == expected,
                "host pattern \(excerpt(text)) \(expected ? "does not match" : "matches") \(excerpt(host))")
        }
    }

    /// A refusal must be the documented error, and name the text it refuses so a person can find it.
    private static func requireRefusal(_ error: any Error, _ code: SecurityError.Code, of text: String) throws(InvariantViolation) {
        guard let error = error as? SecurityError else {
            throw InvariantViolation("\(excerpt(text)) was refused with \(type(of: error)), not SecurityError: \(error)")
        }
        try require(error.code == code, "\(excerpt(text)) was refused as \(error.code), not \(code): \(error.message)")
        try require(
            containsBytes(error.message, "\"\(text)\""), "the refusal of \(excerpt(text)) does not quote it: \(excerpt(error.message))")
    }
}
