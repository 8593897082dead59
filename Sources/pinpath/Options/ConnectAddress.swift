import ArgumentParser
import PinpathSecurity

/// `--connect ADDR[:PORT]`: where to connect instead of resolving each HOST; the port defaults to HOST's.
struct ConnectAddress: ExpressibleByArgument {
    let host: String
    let port: Int?

    init?(argument: String) {
        // Port 0 is refused when written, so it marks "no port given".
        let parsed = ArgumentRefusal.parse({ try TLSEndpoint(parsing: argument, defaultPort: 0) }, message: { "--connect: \($0)" })
        guard let parsed else { return nil }
        host = parsed.host
        port = parsed.port == 0 ? nil : parsed.port
    }

    func endpoint(defaultPort: Int) -> TLSEndpoint { TLSEndpoint(host: host, port: port ?? defaultPort) }
}
