/// What a file of pins holds: pin lines in any spelling ``SPKIPin`` reads (the pins deployed clients hold, as `pinpath pins` prints
/// them), or certificates and keys whose public keys are pinned.
package struct PinFile: Sendable {
    /// The pins: each line's, or the public key of each certificate, key or CSR found.
    package private(set) var pins: [SPKIPin] = []
    /// The certificates found, the anchors of a `certificate` policy; none in a file of pin lines.
    package private(set) var certificates: [Certificate] = []

    /// Reads `path`. A file with no PEM block and a line that starts like a pin (`sha256/`, `sha256//`,
    /// `pin-sha256="`) is a file of pin lines:
    /// `#` starts a comment, blank lines are skipped, and each line's first word must be a pin (`pinpath pins`
    /// prints `sha256/… SUBJECT`). Any other file is read as certificates and keys (PEM or DER).
    /// - Throws: ``SecurityError`` naming `path` (and the line, for a bad pin line): `unreadableFile`,
    ///   `invalidPin`, or `invalidInput` for a file with nothing usable.
    package init(contentsOf path: String) throws {
        let bytes = try readInputFile(path)
        let text = String(decoding: bytes, as: UTF8.self)
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
            .map { line in String(line.prefix { $0 != "#" }.drop { $0.isWhitespace }.reversed().drop { $0.isWhitespace }.reversed()) }
        guard !text.contains("-----BEGIN "), lines.contains(where: SPKIPin.looksLikePin) else {
            let found = try KeyMaterial.load(bytes: bytes, source: path)
            pins = found.map(\.spkiPin)
            certificates = found.compactMap(\.certificate)
            return
        }
        for (index, line) in lines.enumerated() where !line.isEmpty {
            let pin = line.prefix { !$0.isWhitespace }
            do {
                pins.append(try SPKIPin(parsing: String(pin)))
            } catch let error as SecurityError {
                throw SecurityError(error.code, "\(path):\(index + 1): \(error.message)")
            }
        }
    }
}
