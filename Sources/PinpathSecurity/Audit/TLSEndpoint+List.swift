extension TLSEndpoint {
    /// Reads a list of endpoints: one `HOST[:PORT]` a line, `#` comments and blank lines ignored.
    /// - Parameter defaultPort: the port of a line that gives none.
    /// - Throws: ``SecurityError`` naming `path`: `unreadableFile`, or `invalidInput` naming the line
    ///   (`hosts.txt:3: "https://a.test/" is not HOST[:PORT] …`).
    public static func list(contentsOf path: String, defaultPort: Int = 443) throws -> [TLSEndpoint] {
        let text = String(decoding: try readInputFile(path), as: UTF8.self)
        var endpoints: [TLSEndpoint] = []
        for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let entry = line.prefix { $0 != "#" }.trimmingPrefix { $0.isWhitespace }
            guard let last = entry.lastIndex(where: { !$0.isWhitespace }) else { continue }
            do {
                endpoints.append(try TLSEndpoint(parsing: String(entry[...last]), defaultPort: defaultPort))
            } catch let error as SecurityError {
                throw SecurityError(error.code, "\(path):\(index + 1): \(error.message)")
            }
        }
        return endpoints
    }
}
