/// The ARPHRD_* values the classifier needs (linux/if_arp.h).
enum HardwareType {
    static let ether: UInt32 = 1
    static let ppp: UInt32 = 512
    static let tunnel: UInt32 = 768  // ipip
    static let tunnel6: UInt32 = 769
    static let loopback: UInt32 = 772
    static let ipGRE: UInt32 = 778
    static let ip6GRE: UInt32 = 823
    static let none: UInt32 = 0xFFFE  // tun, wireguard
    static let rawIP: UInt32 = 519  // wwan modems in raw-IP mode
}
