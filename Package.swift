// swift-tools-version:6.0
import PackageDescription

/// The release link of `pinpath`, for a shorter start-up of every command (docs/performance.md, issue 17 goal 5).
/// lld from the Swift toolchain, because Debian's gold cannot pack relative relocations: the PIE's 56,000 of
/// them become a 11 KB table (DT_RELR, read by glibc 2.36) instead of 1.3 MB.
/// The executable exports none of its own symbols: the static Swift runtime's `-export-dynamic` put 13,900 in its dynamic
/// table, which every library's symbol look-up and the runtime's `dladdr` at start-up searched, and nothing
/// dlopen'ed by pinpath (libcurl, libpsl, OpenSSL's providers) resolves symbols against it.
/// libstdc++ (which the Swift runtime's C++ needs) is linked statically: as a shared library its 1,700 symbol
/// relocations are resolved by name at every start (2.0 M of `pinpath --version`'s 13.3 M instructions). The static Swift
/// runtime's link arguments name `-lstdc++`, so a directory holding only Debian 12's `libstdc++.a` (GCC 12,
/// libstdc++-12-dev) is searched first; without that file the link falls back to the shared library.
let startupLinkerFlags = [
    "-use-ld=lld", "-Xlinker", "-z", "-Xlinker", "pack-relative-relocs", "-Xlinker", "--no-export-dynamic",
    "-L\(Context.packageDirectory)/scripts/static-libstdcxx",
]

let package = Package(
    name: "pinpath",
    // Linux only (glibc, rtnetlink, OpenSSL and libcurl from the system): SwiftPM has no platform entry for Linux
    // versions, so none is declared, and no Apple platform is claimed.
    products: [
        .library(name: "PinpathSupport", targets: ["PinpathSupport"]),
        .library(name: "PinpathReachability", targets: ["PinpathReachability"]),
        .library(name: "PinpathSecurity", targets: ["PinpathSecurity"]),
        .library(name: "PinpathHTTP", targets: ["PinpathHTTP"]),
        .library(name: "PinpathSerialization", targets: ["PinpathSerialization"]),
        .library(name: "PinpathAgent", targets: ["PinpathAgent"]),
        .executable(name: "pinpath", targets: ["pinpath"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        // The agent's /metrics endpoint: NIO's HTTP/1 server (its parser is llhttp's) rather than one written here.
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
    ],
    targets: [
        // C libraries from Debian's -dev packages, found with pkg-config.
        .systemLibrary(
            name: "CNetlink", pkgConfig: "libnl-route-3.0",
            providers: [.apt(["libnl-3-dev", "libnl-route-3-dev"])]),
        .systemLibrary(name: "COpenSSL", pkgConfig: "openssl", providers: [.apt(["libssl-dev"])]),
        // libcurl's headers only (libcurl4-openssl-dev): the library is opened at run time (CCurlShims), so that
        // commands making no request start without it; pkg-config would add -lcurl.
        .systemLibrary(name: "CCurl"),
        .systemLibrary(name: "CYAML", pkgConfig: "yaml-0.1", providers: [.apt(["libyaml-dev"])]),
        // PCRE2 for `body_matches` and `/regex/` header checks: a backtracking engine with limits a match cannot
        // pass (Swift's Regex has none, and cannot be stopped once started).
        .systemLibrary(name: "CPCRE2", pkgConfig: "libpcre2-8", providers: [.apt(["libpcre2-dev"])]),
        // Pass-throughs for what Swift cannot import (variadics, function-like macros, _GNU_SOURCE-only symbols),
        // one target per C library so that each layer needs only its own library's headers.
        // glibc: setns, eventfd, recvmmsg, thread names, mallopt; sock_diag's structures; libcrypt's crypt_rn (bcrypt
        // for metrics.basic_auth: libcrypt1 is part of every Debian system, libcrypt-dev comes with libc6-dev).
        .target(name: "CLinuxShims", linkerSettings: [.linkedLibrary("crypt")]),
        .target(name: "COpenSSLShims", dependencies: ["COpenSSL"]),
        .target(name: "CCurlShims", dependencies: ["CCurl"]),

        // What every layer shares: threads, whole-file reads, line output, times and durations, JSON values,
        // the version. Depends on no C library but glibc.
        // PinpathBuildCommit is linked, not imported: see PinpathVersion.commit.
        .target(name: "PinpathSupport", dependencies: ["CLinuxShims", "PinpathBuildCommit"]),
        // The git commit of the checkout (`PinpathVersion.commit`, `pinpath --version`), written by the plugin.
        .target(name: "PinpathBuildCommit", plugins: ["GitCommit"]),
        .plugin(name: "GitCommit", capability: .buildTool()),
        .target(name: "PinpathReachability", dependencies: ["PinpathSupport", "CNetlink", "CLinuxShims"]),
        // libpsl (wildcards never span a public suffix) is loaded at run time: libpsl5 is wherever libcurl is.
        .target(name: "PinpathSecurity", dependencies: ["PinpathSupport", "COpenSSL", "COpenSSLShims"]),
        // libcurl gated by the two above: reachability before connecting, the security policy in the handshake.
        .target(
            name: "PinpathHTTP",
            dependencies: [
                "PinpathSupport", "CCurl", "CCurlShims", "COpenSSL", "PinpathReachability", "PinpathSecurity",
                // CLinuxShims: sync_file_range(2), which starts a download's writeback while it is written.
                "CLinuxShims",
            ]),
        // AFNetworking's serializers and session manager over the request core (form, JSON, multipart requests;
        // response validation and JSON decoding): a library use of its own, which the agent does not need.
        .target(name: "PinpathSerialization", dependencies: ["PinpathSupport", "PinpathHTTP"]),
        // The agent's configuration: YAML composed by libyaml with the line and column of every node, for
        // precise errors (a thin wrapper: Yams imports Foundation, which links ICU's 35 MiB of data).
        .target(name: "PinpathYAML", dependencies: ["CYAML"]),
        .target(
            name: "PinpathAgent",
            dependencies: [
                "PinpathSupport", "PinpathReachability", "PinpathSecurity", "PinpathHTTP", "PinpathYAML", "CPCRE2",
                // COpenSSL: the credential cache's SHA-256 and constant-time comparison (metrics.basic_auth).
                "CLinuxShims", "COpenSSL",
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            // The status page (`GET /`): compiled into the binary as byte arrays (`PackageResources`), so the static
            // binary of the .deb serves it with no file to install and no Foundation `Bundle` to find one.
            resources: [
                .embedInCode("StatusPage/Assets/index.html"), .embedInCode("StatusPage/Assets/status.css"),
                .embedInCode("StatusPage/Assets/status.js"),
            ]),
        .executableTarget(
            name: "pinpath",
            dependencies: [
                "PinpathSupport", "PinpathReachability", "PinpathSecurity", "PinpathHTTP", "PinpathSerialization",
                "PinpathAgent", "CLinuxShims", .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            linkerSettings: [.unsafeFlags(startupLinkerFlags, .when(configuration: .release))]),

        // Drives the request core for benchmarks/request-core.sh; measures and prints, never asserts.
        .executableTarget(
            name: "pinpath-bench", dependencies: ["PinpathHTTP", "PinpathReachability", "PinpathSecurity"],
            path: "benchmarks/PinpathBench"),

        .testTarget(name: "PinpathReachabilityTests", dependencies: ["PinpathReachability"]),
        .testTarget(name: "PinpathYAMLTests", dependencies: ["PinpathYAML"]),
        // Runs programs (ip, openssl, pinpath) for the test targets; the test PKI and `openssl s_server`.
        .target(name: "PinpathTestSupport", dependencies: ["PinpathSecurity"], path: "Tests/PinpathTestSupport"),
        // The fuzz checks: what each input must satisfy, shared by fuzz/ (libFuzzer) and the property tests.
        .target(
            name: "PinpathFuzzing", dependencies: ["PinpathSecurity", "PinpathHTTP", "PinpathSerialization", "PinpathAgent"],
            path: "Tests/PinpathFuzzing"),
        .testTarget(name: "PinpathSecurityTests", dependencies: ["PinpathSecurity", "PinpathTestSupport", "PinpathFuzzing"]),
        // The in-process timings of benchmarks/audit.sh (pin computation, chain evaluation): not shipped.
        .executableTarget(name: "pinpath-measure", dependencies: ["PinpathSecurity"], path: "Tests/PinpathMeasure"),
        // The soak: `pinpath run` for N minutes against healthy and hostile servers, sampled from /proc (issue 6).
        .executableTarget(
            name: "pinpath-soak",
            dependencies: ["PinpathTestSupport", .product(name: "ArgumentParser", package: "swift-argument-parser")],
            path: "Tests/PinpathSoak"),
        .testTarget(name: "PinpathHTTPTests", dependencies: ["PinpathHTTP", "PinpathTestSupport", "PinpathFuzzing"]),
        .testTarget(
            name: "PinpathSerializationTests", dependencies: ["PinpathSerialization", "PinpathTestSupport", "PinpathFuzzing"]),
        .testTarget(name: "PinpathAgentTests", dependencies: ["PinpathAgent", "PinpathTestSupport", "PinpathFuzzing"]),
        .testTarget(name: "PinpathSupportTests", dependencies: ["PinpathSupport", "CLinuxShims"]),
        // The built `pinpath` binary run as a user runs it, against real servers on loopback (ephemeral ports, so
        // these run in parallel).
        .testTarget(
            name: "PinpathEndToEndTests",
            dependencies: [
                "PinpathSupport", "PinpathSecurity", "PinpathHTTP", "PinpathAgent", "PinpathTestSupport", "PinpathFuzzing",
            ]),
        // Real kernel and the whole machine: network namespaces and veth pairs with fixed names, the soak, memory
        // figures, the release build of packaging. Needs CAP_NET_ADMIN; run serially (scripts/test).
        .testTarget(
            name: "PinpathIntegrationTests",
            dependencies: [
                "PinpathReachability", "PinpathHTTP", "PinpathSerialization", "PinpathAgent", "PinpathTestSupport",
            ]),
    ],
    swiftLanguageModes: [.v6]
)
