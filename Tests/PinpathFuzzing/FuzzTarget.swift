/// The inputs pinpath is fuzzed on. The libFuzzer executables in fuzz/ and the property tests of the normal
/// suite run the same ``check(_:)``, so a crash file from one is a regression test in the other.
public enum FuzzTarget: String, CaseIterable, Sendable {
    /// The agent's YAML configuration, as the text of a file.
    case configuration
    /// Pin strings (`sha256/…`) and host patterns, as policies and the CLI read them.
    case pins
    /// PEM bundles and DER files: certificates, keys and CSRs.
    case certificates
    /// Parameters built from the bytes, through AFNetworking's query-string serializer.
    case queryString = "query-string"
    /// Server responses and `--json-body` through the strict JSON parser.
    case json

    /// Runs one input through the code under test and checks its promises.
    /// - Throws: ``InvariantViolation`` saying which promise the input broke. A crash is a crash.
    public func check(_ bytes: [UInt8]) throws(InvariantViolation) {
        switch self {
        case .configuration: try ConfigurationCheck.check(bytes)
        case .pins: try PinCheck.check(bytes)
        case .certificates: try CertificateCheck.check(bytes)
        case .queryString: try QueryStringCheck.check(bytes)
        case .json: try JSONCheck.check(bytes)
        }
    }

    /// The libFuzzer entry point's body: checks the input and traps on a broken promise, which libFuzzer
    /// records as a crash with the input.
    public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
        let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
        do {
            try check(bytes)
        } catch {
            fatalError("\(rawValue): \(error)")
        }
        return 0
    }
}
