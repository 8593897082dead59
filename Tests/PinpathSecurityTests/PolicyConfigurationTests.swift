import Foundation
import PinpathTestSupport
import Testing

@testable import PinpathSecurity

@Suite("Security policy configuration")
struct PolicyConfigurationTests {
    struct Configuration: Sendable, CustomTestStringConvertible {
        var mode: PinningMode
        var pins = 0
        var certificates = 0
        var allowInvalid = false
        var validatesDomainName = true
        var enforce = true
        var requiresBackupPin = true
        var refusal: String?
        /// The code of the refusal.
        var code = SecurityErrorCode.invalidPolicy
        var testDescription: String {
            """
            \(mode) pins:\(pins) certs:\(certificates) allowInvalid:\(allowInvalid) validatesDomainName:\(validatesDomainName) \
            enforce:\(enforce) backup:\(requiresBackupPin)
            """
        }
    }

    @Test(
        "AFNetworking's and TrustKit's refusals, and what they still accept",
        arguments: [
            Configuration(mode: .none),
            Configuration(mode: .none, allowInvalid: true, validatesDomainName: false),
            Configuration(mode: .none, allowInvalid: true, refusal: "would accept any certificate"),
            Configuration(mode: .publicKey, refusal: "needs at least one pin"),
            Configuration(mode: .certificate, refusal: "needs at least one pinned certificate"),
            Configuration(mode: .certificate, pins: 2, refusal: "needs at least one pinned certificate"),
            Configuration(mode: .publicKey, allowInvalid: true, refusal: "needs at least one pin"),
            Configuration(mode: .publicKey, pins: 2, allowInvalid: true),
            Configuration(mode: .certificate, certificates: 1, allowInvalid: true),
            Configuration(mode: .publicKey, pins: 1, refusal: "needs a backup pin (2 or more, it has 1)", code: .missingBackupPin),
            Configuration(mode: .publicKey, pins: 1, requiresBackupPin: false),
            Configuration(mode: .publicKey, pins: 1, enforce: false),
            Configuration(mode: .publicKey, certificates: 2),
            Configuration(mode: .certificate, certificates: 1),
        ])
    func configuration(_ configuration: Configuration) throws {
        let pki = TestPKI.shared
        let certificates = try pki.chain(["valid", "inter"].prefix(configuration.certificates).map { $0 })
        let pins = try ["root", "otherroot"].prefix(configuration.pins).map { try pki.certificate($0).spkiPin }
        let make = {
            try SecurityPolicy(
                mode: configuration.mode, pins: pins, pinnedCertificates: certificates,
                allowInvalidCertificates: configuration.allowInvalid, validatesDomainName: configuration.validatesDomainName,
                enforce: configuration.enforce, requiresBackupPin: configuration.requiresBackupPin)
        }
        if let refusal = configuration.refusal {
            #expect {
                try make()
            } throws: { error in
                let error = error as? SecurityError
                return error?.code == configuration.code && error?.message.contains(refusal) == true
            }
        } else {
            let policy = try make()
            #expect(policy.pins.count == configuration.pins + configuration.certificates)
        }
    }

    @Test("Defaults are AFNetworking's: invalid certificates refused, domain name validated")
    func defaults() throws {
        let policy = try SecurityPolicy(mode: .none)
        #expect(!policy.allowInvalidCertificates && policy.validatesDomainName && policy.enforce && policy.expires == nil)
    }
}
