/// Serial numbers are positive integers of at most 20 octets (RFC 5280 4.1.2.2), for every certificate but a
/// trust anchor that is not the leaf (a store's old roots are the operator's choice). The 20 octets are the
/// value's: a 20-octet value with its high bit set, encoded in 21 octets with a sign octet, passes, as in most
/// verifiers. OpenSSL alone accepts zero, negative and longer serial numbers.
struct SerialNumber: ProfileRule {
    let name = "rfc5280.serial_number"
    let profiles: Set<VerificationProfile> = [.webpki, .rfc5280]

    func evaluate(_ path: inout VerifiedPath) -> RuleResult<ProfileViolation> {
        for (depth, certificate) in path.chain.enumerated() where depth == 0 || !path.isAnchor(depth) {
            let serial = certificate.serialNumber
            if serial.isNegative { return fails(path, depth: depth, "negative serial number") }
            if serial.octets == 0 { return fails(path, depth: depth, "serial number zero") }
            if serial.octets > 20 {
                return fails(path, depth: depth, "serial number of \(serial.octets) octets (at most 20)")
            }
        }
        return .meetsRule
    }
}
