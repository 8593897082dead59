// swift-tools-version:6.0
import PackageDescription

// The libFuzzer targets, one executable per input kind. A package of its own because an executable whose
// `main` comes from libFuzzer does not link in a normal build. Build and run them with fuzz/run.sh.
let targets = ["FuzzConfiguration", "FuzzPins", "FuzzCertificates", "FuzzQueryString", "FuzzJSON"]

let package = Package(
    name: "pinpath-fuzz",
    platforms: [.macOS(.v15)],
    dependencies: [.package(name: "pinpath", path: "..")],
    targets: [
        // Declares libFuzzer's LLVMFuzzerRunDriver, which Swift cannot see otherwise (libFuzzer has no header).
        .target(name: "CLibFuzzer"),
        .target(
            name: "FuzzDriver",
            dependencies: ["CLibFuzzer", .product(name: "PinpathFuzzing", package: "pinpath")]),
    ] + targets.map { .executableTarget(name: $0, dependencies: ["FuzzDriver"]) },
    swiftLanguageModes: [.v6]
)
