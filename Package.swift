// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "pinpath",
    platforms: [.macOS(.v15)],  // Linux is the target; this only keeps SwiftPM's availability checks quiet.
    products: [
        .library(name: "PinpathReachability", targets: ["PinpathReachability"]),
        .library(name: "PinpathSecurity", targets: ["PinpathSecurity"]),
        .library(name: "PinpathAgent", targets: ["PinpathAgent"]),
        .executable(name: "pinpath", targets: ["pinpath"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
    ],
    targets: [
        // C libraries from Debian's -dev packages, found with pkg-config.
        .systemLibrary(
            name: "CNetlink", pkgConfig: "libnl-route-3.0",
            providers: [.apt(["libnl-3-dev", "libnl-route-3-dev"])]),
        .systemLibrary(name: "COpenSSL", pkgConfig: "openssl", providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        // Pass-throughs for what Swift cannot import (variadics, function-like macros, _GNU_SOURCE-only symbols).
        .target(name: "CShims", dependencies: ["COpenSSL"]),

        .target(name: "PinpathReachability", dependencies: ["CNetlink", "CShims"]),
        .target(name: "PinpathSecurity", dependencies: ["COpenSSL", "CShims"]),
        .target(name: "PinpathAgent", dependencies: ["PinpathReachability"]),
        .executableTarget(
            name: "pinpath",
            dependencies: [
                "PinpathReachability", "PinpathSecurity", "PinpathAgent",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]),

        .testTarget(name: "PinpathReachabilityTests", dependencies: ["PinpathReachability"]),
        // Runs programs (ip, openssl, pinpath) for the test targets.
        .target(name: "PinpathTestSupport", path: "Tests/PinpathTestSupport"),
        .testTarget(name: "PinpathSecurityTests", dependencies: ["PinpathSecurity", "PinpathTestSupport"]),
        .testTarget(name: "PinpathAgentTests", dependencies: ["PinpathAgent"]),
        // Real kernel: network namespaces, veth pairs and the built `pinpath` binary. Needs CAP_NET_ADMIN.
        .testTarget(
            name: "PinpathIntegrationTests",
            dependencies: ["PinpathReachability", "PinpathAgent", "PinpathTestSupport"]),
    ],
    swiftLanguageModes: [.v6]
)
