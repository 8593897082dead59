/// The links and addresses the kernel has, kept current from netlink messages.
///
/// Links and addresses are announced reliably (lost only on an overrun, which triggers a full re-read), so
/// the messages themselves keep this current. Routes are not kept: IPv4 routes vanish on link-down without a
/// message, so routing questions always go to the kernel (`RouteLookup`).
struct KernelState: Equatable {
    private(set) var links: [Int: LinkRecord] = [:]
    private(set) var addresses: [AddressRecord.Key: AddressRecord] = [:]

    init(links: [LinkRecord] = [], addresses: [AddressRecord] = []) {
        for link in links { self.links[link.index] = link }
        for address in addresses { self.addresses[address.key] = address }
    }

    /// Applies a link message and says what a user would call the change, or `nil` if nothing that matters moved.
    mutating func apply(link: LinkRecord) -> ChangeReason? {
        let old = links.updateValue(link, forKey: link.index)
        guard let old else { return .linkAdded }
        if old.isAdminUp != link.isAdminUp { return link.isAdminUp ? .linkUp : .linkDown }
        if old.hasCarrier != link.hasCarrier { return link.hasCarrier ? .carrierGained : .carrierLost }
        if old.name != link.name || old.masterIndex != link.masterIndex { return .linkChanged }
        return nil
    }

    mutating func removeLink(index: Int) -> ChangeReason? {
        guard links.removeValue(forKey: index) != nil else { return nil }
        addresses = addresses.filter { $0.key.interfaceIndex != index }
        return .linkRemoved
    }

    mutating func apply(address: AddressRecord) -> ChangeReason? {
        let old = addresses.updateValue(address, forKey: address.key)
        guard let old else { return .addressAdded }
        return old.isUsable == address.isUsable ? nil : .addressChanged
    }

    mutating func removeAddress(_ key: AddressRecord.Key) -> ChangeReason? {
        addresses.removeValue(forKey: key) == nil ? nil : .addressRemoved
    }

    /// Usable addresses of one interface, in a stable order (IPv4 first, then by address).
    func usableAddresses(of index: Int) -> [InterfaceAddress] {
        // One array, sorted in place: this runs for every interface of every snapshot.
        var usable: [InterfaceAddress] = []
        for address in addresses.values where address.key.interfaceIndex == index && address.isUsable {
            usable.append(InterfaceAddress(address: address.key.address, prefixLength: address.key.prefixLength))
        }
        usable.sort { $0.address < $1.address }
        return usable
    }

    func isUsableAddress(_ address: IPAddress) -> Bool {
        addresses.values.contains { $0.key.address == address && $0.isUsable }
    }

    /// Interfaces with their kinds resolved (stacked devices take their lower device's kind).
    func interfaces() -> [NetworkInterface] {
        var interfaces: [NetworkInterface] = []
        interfaces.reserveCapacity(links.count)
        for link in links.values {
            interfaces.append(
                NetworkInterface(
                    index: link.index, name: link.name, kind: kind(of: link), isAdminUp: link.isAdminUp,
                    hasCarrier: link.hasCarrier, operationalState: link.operationalState, mtu: link.mtu,
                    addresses: usableAddresses(of: link.index)))
        }
        interfaces.sort { $0.index < $1.index }
        return interfaces
    }

    func kind(of link: LinkRecord, depth: Int = 0) -> InterfaceKind {
        // Depth bounds a loop the kernel should never produce (a VLAN on itself).
        guard depth < 8 else { return .other }
        let lower = link.lowerIndex.flatMap { links[$0] }.map { kind(of: $0, depth: depth + 1) }
        var ports: [InterfaceKind] = []  // empty, so not allocated, unless this link is an aggregate
        for port in links.values where port.masterIndex == link.index { ports.append(kind(of: port, depth: depth + 1)) }
        return InterfaceClassifier.kind(of: link.kindFacts, lowerKind: lower, portKinds: ports)
    }
}
