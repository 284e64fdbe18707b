// swift-tools-version: 6.1
import CompilerPluginSupport
import PackageDescription

let package = Package(
    name: "Strata",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "Strata", targets: ["Strata"]),
        .library(name: "StrataStorage", targets: ["StrataStorage"]),
        // The continuous archive on S3 (AWS, Ceph RGW, MinIO, R2, B2…): URLSession and
        // swift-crypto (CryptoKit on Apple platforms) for the request signatures.
        .library(name: "StrataS3", targets: ["StrataS3"]),
        // For apps' own tests: the in-memory and fault-injecting file systems that simulate
        // crashes, power cuts and I/O errors, and the decoders' fuzz entry points.
        .library(name: "StrataTesting", targets: ["StrataTesting"]),
        .executable(name: "strata", targets: ["strata"]),
    ],
    dependencies: [
        .package(url: "https://github.com/swiftlang/swift-syntax", from: "602.0.0"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        // `swift package generate-documentation`: the DocC catalog in Sources/Strata/Strata.docc,
        // built by the test command with warnings as errors so that it cannot rot.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
        // SHA-256 and HMAC for S3's request signatures (SigV4); CryptoKit on Apple platforms.
        .package(url: "https://github.com/apple/swift-crypto", "3.12.3"..<"5.0.0"),
    ],
    targets: [
        // lz4 from the system (Debian: liblz4-dev). The shim header stops the build with an
        // install hint when the header is missing.
        .systemLibrary(
            name: "CLZ4",
            pkgConfig: "liblz4",
            providers: [.apt(["liblz4-dev"]), .brew(["lz4"])]
        ),
        // CRC32C (SSE4.2 with a portable fallback) and the acquire/release atomics the memtable's
        // lock-free readers need on arena memory.
        .target(name: "CStrataSupport"),
        .target(
            name: "StrataStorage",
            // swift-crypto (CryptoKit on Apple platforms) for encryption at rest: AES-256-GCM, HKDF.
            dependencies: ["CLZ4", "CStrataSupport", .product(name: "Crypto", package: "swift-crypto")]
        ),
        // An `ArchiveTarget` over the S3 API, outside the engine so that only apps that archive
        // to S3 link URLSession's networking and swift-crypto.
        .target(
            name: "StrataS3",
            dependencies: ["StrataStorage", .product(name: "Crypto", package: "swift-crypto")]
        ),
        // The @Entity macro's implementation: runs inside the compiler, never linked into apps.
        .macro(
            name: "StrataMacros",
            dependencies: [
                .product(name: "SwiftSyntax", package: "swift-syntax"),
                .product(name: "SwiftSyntaxMacros", package: "swift-syntax"),
                .product(name: "SwiftCompilerPlugin", package: "swift-syntax"),
                .product(name: "SwiftDiagnostics", package: "swift-syntax"),
            ]
        ),
        // The object layer: entities, Store, Box, transactions, schema, codec.
        .target(
            name: "Strata",
            dependencies: ["StrataStorage", "StrataMacros"]
        ),
        // The decoders' fuzz probes (what `_FuzzTarget` and the corpus replay test run), outside
        // the libraries apps link: they reach the package-visible decoders. Not a product.
        .target(
            name: "StrataProbes",
            dependencies: ["Strata", "StrataStorage"]
        ),
        // Test support that ships as its own product, outside the libraries apps link.
        .target(
            name: "StrataTesting",
            dependencies: ["Strata", "StrataStorage", "StrataProbes"]
        ),
        .executableTarget(
            name: "strata",
            dependencies: [
                "Strata", "StrataStorage", "StrataS3",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Tools/strata"
        ),
        // Helper process the reliability tests drive (locking, kill -9); not a product.
        .executableTarget(
            name: "strata-torture",
            dependencies: ["Strata", "StrataStorage", "StrataTortureModel"],
            path: "Tests/strata-torture"
        ),
        // The graph workload of the crash and model tests: its entities, a model of what the
        // store must hold, and the kill-test driver. Shared by strata-torture and the tests.
        .target(
            name: "StrataTortureModel",
            dependencies: ["Strata", "StrataStorage", "StrataTestSupport"],
            path: "Tests/StrataTortureModel"
        ),
        // Helpers every test target shares (seeded generator, temporary directories).
        .target(
            name: "StrataTestSupport",
            path: "Tests/StrataTestSupport"
        ),
        .testTarget(
            name: "StrataStorageTests",
            dependencies: ["StrataStorage", "StrataS3", "StrataTesting", "StrataTestSupport", "StrataProbes"]
        ),
        .testTarget(
            name: "StrataTests",
            dependencies: ["Strata", "StrataTesting", "StrataTestSupport", "StrataTortureModel"]
        ),
        // Runs the built `strata` executable as a subprocess against stores it prepares.
        .testTarget(
            name: "StrataToolTests",
            dependencies: ["Strata", "StrataStorage", "StrataS3", "StrataTestSupport"]
        ),
        .testTarget(
            name: "StrataMacrosTests",
            dependencies: [
                "StrataMacros",
                .product(name: "SwiftSyntaxMacrosGenericTestSupport", package: "swift-syntax"),
            ]
        ),
    ]
)
