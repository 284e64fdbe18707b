// swift-tools-version: 6.1
import PackageDescription

// The fuzzers: one executable, `strata-fuzz TARGET [libFuzzer options] [CORPUS…]`, over the
// decoders `_FuzzTarget` and `_ObjectFuzzTarget` expose. A package of its own so that the
// sanitizer flags never reach the library's own build. Build and run with ../scripts/fuzz.sh.
let package = Package(
    name: "StrataFuzz",
    platforms: [.macOS(.v15)],
    dependencies: [.package(name: "Strata", path: "..")],
    targets: [
        .executableTarget(
            name: "strata-fuzz",
            dependencies: [
                .product(name: "Strata", package: "Strata"),
                .product(name: "StrataStorage", package: "Strata"),
                .product(name: "StrataTesting", package: "Strata"),
            ]
        ),
    ]
)
