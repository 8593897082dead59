import PinpathReachability

extension EndpointConfiguration.IPFamily {
    /// The one IP family a probe is held to (`ip_family: ipv4` or `ipv6`), or `nil` for `any`: the type the
    /// request core and the monitor speak. The configuration's own enum only adds `any`, which is the absence
    /// of a restriction; when the configuration reads `ip_family` as `IPFamily?` this mapping goes.
    var only: PinpathReachability.IPFamily? {
        switch self {
        case .any: nil
        case .ipv4: .ipv4
        case .ipv6: .ipv6
        }
    }
}
