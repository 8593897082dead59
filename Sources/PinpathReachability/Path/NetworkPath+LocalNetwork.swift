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

extension NetworkPath {
    /// Whether a usable interface holds an address of `family` that is neither loopback nor link-local: the
    /// machine is on a network of that family, default route or not.
    public func hasNetworkAddress(_ family: IPFamily) -> Bool {
        interfaces.contains { interface in
            interface.isUsable
                && interface.addresses.contains { $0.address.family == family && !$0.address.isLoopback && !$0.address.isLinkLocal }
        }
    }
}

extension InterfaceAddress {
    /// Whether `other` shares this address's first `prefixLength` bits (same family only).
    func subnetContains(_ other: IPAddress) -> Bool { other.isWithin(address, prefixLength: prefixLength) }
}
