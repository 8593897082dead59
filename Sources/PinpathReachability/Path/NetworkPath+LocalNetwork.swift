extension NetworkPath {
    /// Whether `address` is on the local network: loopback, link-local, or within the subnet of an address
    /// on a usable interface (a directly connected network, reached without a gateway).
    ///
    /// What a connectivity verdict (a captive portal, a dead upstream) cannot touch: such a host is reached
    /// without going through the upstream that the verdict is about.
    public func isOnLocalNetwork(_ address: IPAddress) -> Bool {
        if address.isLoopback || address.isLinkLocal { return true }
        return interfaces.contains { interface in
            interface.isUsable && interface.addresses.contains { $0.subnetContains(address) }
        }
    }
}

extension InterfaceAddress {
    /// Whether `other` shares this address's first `prefixLength` bits (same family only).
    func subnetContains(_ other: IPAddress) -> Bool { other.isWithin(address, prefixLength: prefixLength) }
}
