// swift-tools-version:6.0
import PackageDescription

/// The Swift peers of the request core for benchmarks/request-core.sh: AsyncHTTPClient and URLSession
/// (FoundationNetworking), driven the way `pinpath-bench get` drives pinpath's `Session`. A package of its own,
/// so that neither pinpath's build nor CI builds AsyncHTTPClient; request-core.sh builds it in release.
let package = Package(
    name: "swift-peers",
    dependencies: [
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0")
    ],
    targets: [
        .executableTarget(
            name: "SwiftPeers",
            dependencies: [.product(name: "AsyncHTTPClient", package: "async-http-client")],
            path: "Sources/SwiftPeers")
    ]
)
