import PinpathSupport

/// Reads a whole key, certificate, CA or CRL file; its failures are this module's `unreadableFile`.
func readInputFile(_ path: String) throws(SecurityError) -> [UInt8] {
    do {
        return try readWholeFile(path)
    } catch {
        throw SecurityError(.unreadableFile, error.description)
    }
}
