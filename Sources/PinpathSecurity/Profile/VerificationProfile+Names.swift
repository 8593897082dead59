extension VerificationProfile: RawRepresentable, CaseIterable {
    /// The profile named `rawValue` (`webpki`, `rfc5280`), or `nil`: the form configurations and options use.
    public init?(rawValue: String) { self.init(named: rawValue) }

    /// The name.
    public var rawValue: String { name }

    /// Every profile, in ``all``'s order.
    public static var allCases: [VerificationProfile] { all }
}
