import Glibc

/// What /sys/class/net/NAME says about a device that netlink does not: its DEVTYPE and whether it has a
/// wireless PHY. Read in the mount namespace of the process.
struct SysfsNetDevice {
    let name: String

    var kindFacts: (deviceType: String?, hasWirelessPhy: Bool) {
        let directory = "/sys/class/net/\(name)"
        let deviceType = Self.read("\(directory)/uevent")?
            .split(separator: "\n")
            .first { $0.hasPrefix("DEVTYPE=") }
            .map { String($0.dropFirst("DEVTYPE=".count)) }
        return (deviceType, access("\(directory)/phy80211", F_OK) == 0)
    }

    private static func read(_ path: String) -> String? {
        guard let file = fopen(path, "r") else { return nil }
        defer { fclose(file) }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = fread(&buffer, 1, buffer.count, file)
        return String(decoding: buffer.prefix(count), as: UTF8.self)
    }
}
