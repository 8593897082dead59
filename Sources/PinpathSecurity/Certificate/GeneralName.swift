/// A name of a GeneralNames sequence (a subject alternative name, or the base of a name constraint) as
/// encoded, bytes untouched, so that the rules judge what the certificate says rather than a decoded guess.
enum GeneralName: Hashable {
    /// A dNSName's IA5String bytes (ASCII when well formed).
    case dns([UInt8])
    /// An iPAddress: 4 or 16 bytes in a SAN; address then mask (8 or 32 bytes) in a name constraint.
    case ipAddress([UInt8])
    /// An rfc822Name's bytes.
    case email([UInt8])
    /// A uniformResourceIdentifier's bytes.
    case uri([UInt8])
    /// Any other kind (directoryName, otherName, registeredID…), which these rules leave to OpenSSL.
    case other
}
