import Foundation
import Strata
import StrataStorage

/// Which durability both systems run with, so that ratios compare equal guarantees.
///
/// - `matched` (default): the GRDB setup, WAL with `synchronous=NORMAL`, survives a
///   process crash but may lose the last commits on a power cut (SQLite does not sync the WAL
///   at commit). Strata runs with `.none`, the same guarantee.
/// - `sync`: every commit durable on both sides: GRDB `synchronous=FULL`, Strata `.sync`.
///
/// Set with `--durability matched|sync`; passed to the graph's child processes through the
/// environment variable `STRATA_BENCH_DURABILITY`.
enum BenchDurability: String {
    case matched
    case sync

    static let environmentKey = "STRATA_BENCH_DURABILITY"
    /// A benchmark key (64 hex digits) for the encrypted system's child processes.
    static let keyEnvironmentKey = "STRATA_BENCH_KEY"

    static var current: BenchDurability {
        ProcessInfo.processInfo.environment[environmentKey].flatMap(BenchDurability.init(rawValue:)) ?? .matched
    }

    var sqliteSynchronous: String { self == .sync ? "FULL" : "NORMAL" }

    var strataOptions: StoreOptions {
        var options = StoreOptions()
        options.durability = self == .sync ? .sync : .none
        // `graph --encrypted`: the encrypted run's children get a key (SPEC.md §14) here.
        if let hex = ProcessInfo.processInfo.environment[Self.keyEnvironmentKey], hex.utf8.count == 64 {
            let digits = Array(hex.utf8)
            options.engine.encryptionKey = stride(from: 0, to: 64, by: 2).compactMap {
                UInt8(String(decoding: digits[$0..<($0 + 2)], as: UTF8.self), radix: 16)
            }
        }
        // Experiments only: STRATA_CACHE_MB overrides the block cache size.
        if let mb = ProcessInfo.processInfo.environment["STRATA_CACHE_MB"].flatMap(Int.init) {
            options.engine.blockCacheBytes = mb << 20
        }
        // Experiments only: STRATA_COMPRESSION=0 stores every block uncompressed.
        if ProcessInfo.processInfo.environment["STRATA_COMPRESSION"] == "0" {
            options.engine.compression = false
        }
        // Experiments only: STRATA_MAP_SEGMENTS=0 or 1 reads segments with pread or mappings.
        if let map = ProcessInfo.processInfo.environment["STRATA_MAP_SEGMENTS"] {
            options.engine.fileSystem = PosixFileSystem(mapsSegments: map == "1")
        }
        // Experiments only: STRATA_BENCH_EVENTS=1 prints each flush and compaction with the
        // time it began or ended, to see what runs in the background during a phase.
        if ProcessInfo.processInfo.environment["STRATA_BENCH_EVENTS"] == "1" {
            options.engine.eventListener = { event in
                FileHandle.standardError.write(String(format: "%.3f event %@\n",
                    Double(DispatchTime.now().uptimeNanoseconds) / 1e9, "\(event)").data(using: .utf8)!)
            }
        }
        return options
    }
}
