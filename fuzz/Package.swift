// swift-tools-version:6.0
import Foundation
import PackageDescription

// The libFuzzer targets, one executable per input kind. A package of its own because an executable whose
// `main` comes from libFuzzer does not link in a normal build. Build and run them with fuzz/run.sh.
let targets = ["FuzzConfiguration", "FuzzPins", "FuzzCertificates", "FuzzQueryString", "FuzzJSON"]

// The checks use pinpath's `package` declarations (the JSON parser, the configuration parser, query pairs),
// which only modules of pinpath's own package see: SwiftPM compiles pinpath's modules with its identity (the
// checkout's folder name, as a C identifier) as the package name, so the checks are compiled with the same one.
// unsafeFlags are allowed here because fuzz/ is always the root package.
let pinpathPackageName = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .lastPathComponent.lowercased().map { $0.isLetter || $0.isNumber ? String($0) : "_" }.joined()

let package = Package(
    name: "pinpath-fuzz",
    // Linux only, as the package it fuzzes.
    dependencies: [.package(name: "pinpath", path: "..")],
    targets: [
        // Declares libFuzzer's LLVMFuzzerRunDriver, which Swift cannot see otherwise (libFuzzer has no header).
        .target(name: "CLibFuzzer"),
        // The checks shared with the property tests: Sources/PinpathFuzzing is a link to ../Tests/PinpathFuzzing
        // (SwiftPM refuses a target path outside the package), because pinpath does not export them as a product,
        // which would offer them to every user of the package.
        .target(
            name: "PinpathFuzzing",
            dependencies: [
                .product(name: "PinpathSecurity", package: "pinpath"), .product(name: "PinpathHTTP", package: "pinpath"),
                .product(name: "PinpathSerialization", package: "pinpath"), .product(name: "PinpathAgent", package: "pinpath"),
            ],
            packageAccess: false, swiftSettings: [.unsafeFlags(["-package-name", pinpathPackageName])]),
        .target(name: "FuzzDriver", dependencies: ["CLibFuzzer", "PinpathFuzzing"]),
    ] + targets.map { .executableTarget(name: $0, dependencies: ["FuzzDriver"]) },
    swiftLanguageModes: [.v6]
)
