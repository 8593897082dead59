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
    func subnetContains(_ other: IPAddress) -> Bool {
        guard other.family == address.family else { return false }
        var remaining = prefixLength
        for (mine, theirs) in zip(address.bytes, other.bytes) where remaining > 0 {
            let mask: UInt8 = remaining >= 8 ? 0xFF : ~(0xFF >> UInt8(remaining))
            guard mine & mask == theirs & mask else { return false }
            remaining -= 8
        }
        return true
    }
}
