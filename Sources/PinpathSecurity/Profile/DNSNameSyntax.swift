import PinpathSupport

/// RFC 1034's preferred name syntax as RFC 1123 relaxed it (RFC 5280 §4.2.1.6): ASCII letters, digits and
/// hyphens in labels of 1–63 characters, no hyphen at either end of a label, at most 253 characters, no
/// empty label. Presented names may start with a wildcard label (`*.example.com`), constraints never.
enum DNSNameSyntax {
    /// What is wrong with a dNSName presented in a certificate, or `nil`: the syntax above, with `*` allowed
    /// only as the whole leftmost label of a name of at least two more labels.
    static func problem(inPresented name: [UInt8]) -> String? {
        var labels = name.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        if labels.first.map(Array.init) == [UInt8(ascii: "*")] {
            guard labels.count > 1 else { return "is a wildcard with no domain after it" }
            labels.removeFirst()
        }
        return problem(in: name, labels: labels)
    }

    /// What is wrong with a dNSName name constraint, or `nil`: the syntax above, or empty (every name).
    /// RFC 5280 §4.2.1.10 writes DNS constraints as `host.example.com`; a leading period belongs to URI and
    /// email constraints only, so `.example.com` is malformed here (x509-limbo, Go and rustls-webpki agree;
    /// OpenSSL reads it as "subdomains only").
    static func problem(inConstraint name: [UInt8]) -> String? {
        if name.isEmpty { return nil }
        if name.first == UInt8(ascii: ".") { return "has a leading period" }
        return problem(in: name, labels: name.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false))
    }

    private static func problem(in name: [UInt8], labels: [ArraySlice<UInt8>]) -> String? {
        if name.isEmpty { return "is empty" }
        if name.contains(where: { $0 >= 0x80 }) {
            return "is not ASCII (an internationalized name must be in its xn-- form)"
        }
        if name.count > 253 { return "is longer than 253 characters" }
        for label in labels {
            if label.isEmpty { return "has an empty label" }
            if label.count > 63 { return "has a label longer than 63 characters" }
            if label.contains(UInt8(ascii: "*")) { return "has a wildcard that is not the whole leftmost label" }
            if label.contains(UInt8(ascii: "_")) { return "has an underscore" }
            guard label.allSatisfy(isLetterDigitHyphen) else { return "has a character other than a letter, digit or hyphen" }
            if label.first == UInt8(ascii: "-") || label.last == UInt8(ascii: "-") {
                return "has a label that starts or ends with a hyphen"
            }
        }
        return nil
    }

    private static func isLetterDigitHyphen(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"):
            return true
        default:
            return false
        }
    }

    /// The name for a message: its text in quotes, its own quotes and backslashes as `\x22` and `\x5c` (so the
    /// quoting is unambiguous), controls and bidi formatting escaped and the whole cut by `UntrustedText` (a
    /// hostile certificate's name must not act on a terminal that shows the message: `CommandFailure.report`
    /// keeps line feeds), invalid UTF-8 as U+FFFD.
    static func quoted(_ name: [UInt8]) -> String {
        var text = ""
        for scalar in String(decoding: name, as: UTF8.self).unicodeScalars {
            if scalar == "\"" || scalar == "\\" {
                text += "\\x" + String(scalar.value, radix: 16)
            } else {
                text.unicodeScalars.append(scalar)
            }
        }
        return "\"" + UntrustedText.escaped(text, limit: quotedLimit) + "\""
    }

    /// The most scalars of a name a message shows: a whole DNS name (253), not a hostile megabyte.
    static let quotedLimit = 255
}
