// swift-tools-version: 6.1
import PackageDescription

// The benchmarks are their own package so that building and testing Strata never needs a
// peer's library. Peers: LevelDB 1.23 (Debian libleveldb-dev) for the engine workloads, GRDB
// (SQLite, Debian libsqlite3-dev) for the object workloads.
let package = Package(
    name: "StrataBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "Strata", path: ".."),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        // Latency percentiles of the observation benchmark.
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift", from: "0.2.0"),
        // The ciphers benchmark: AES-256-GCM and ChaCha20-Poly1305 as Strata calls them.
        .package(url: "https://github.com/apple/swift-crypto", "3.12.3"..<"5.0.0"),
    ],
    targets: [
        .systemLibrary(
            name: "CLevelDB",
            providers: [.apt(["libleveldb-dev"]), .brew(["leveldb"])]
        ),
        // The seeded generator both benchmarks draw from.
        .target(name: "BenchSupport"),
        .executableTarget(
            name: "strata-bench",
            dependencies: [
                "BenchSupport",
                "CLevelDB",
                .product(name: "StrataStorage", package: "Strata"),
            ],
            path: "Sources/StrataBench"
        ),
        .executableTarget(
            name: "strata-objects-bench",
            dependencies: [
                "BenchSupport",
                .product(name: "Strata", package: "Strata"),
                // PosixFileSystem's options, for experiments (BenchDurability).
                .product(name: "StrataStorage", package: "Strata"),
                .product(name: "StrataS3", package: "Strata"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Histogram", package: "hdrhistogram-swift"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            path: "Sources/ObjectsBench"
        ),
    ],
    // The harness shares engines across its writer threads on purpose (fillsync-8threads).
    swiftLanguageModes: [.v5]
)
