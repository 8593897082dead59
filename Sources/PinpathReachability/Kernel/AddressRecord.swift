/// An address as read from an RTM_NEWADDR message or dump.
struct AddressRecord: Hashable {
    struct Key: Hashable {
        var interfaceIndex: Int
        var address: IPAddress
        var prefixLength: Int
    }
    var key: Key
    var flags: UInt32

    /// IPv6 addresses still in duplicate address detection, or that failed it, cannot be used as a source.
    var isUsable: Bool {
        let tentative: UInt32 = 0x40
        let dadFailed: UInt32 = 0x08
        return flags & (tentative | dadFailed) == 0
    }
}
