import Foundation
import StrataStorage

final class StrataEngine: BenchEngine {
    static let name = "Strata"
    let engine: Engine
    let keySpace: KeySpace
    var batch = WriteBatch()

    init(directory: String) throws {
        var options = EngineOptions()
        // Experiments only: STRATA_MEMTABLE_MB overrides the memtable size.
        if let mb = ProcessInfo.processInfo.environment["STRATA_MEMTABLE_MB"].flatMap(Int.init) {
            options.memtableBytes = mb << 20
        }
        // STRATA_BENCH_KEY (64 hex digits): an encrypted store (SPEC.md §14), for the figures
        // with and without encryption.
        if let hex = ProcessInfo.processInfo.environment["STRATA_BENCH_KEY"], hex.utf8.count == 64 {
            let digits = Array(hex.utf8)
            options.encryptionKey = stride(from: 0, to: 64, by: 2).compactMap {
                UInt8(String(decoding: digits[$0..<($0 + 2)], as: UTF8.self), radix: 16)
            }
        }
        // Experiments only: STRATA_MAP_SEGMENTS=0 or 1 reads segments with pread or mappings.
        if let map = ProcessInfo.processInfo.environment["STRATA_MAP_SEGMENTS"] {
            options.fileSystem = PosixFileSystem(mapsSegments: map == "1")
        }
        engine = try Engine.open(directory: directory, options: options)
        keySpace = engine.defaultKeySpace
    }

    func add(key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) {
        batch.put(key, value, in: keySpace)
    }

    func commit(sync: Bool) throws {
        try engine.write(batch, durability: sync ? .groupCommit : Durability.none)
        batch.removeAll()
    }

    func putConcurrently(key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer, sync: Bool) throws {
        var one = WriteBatch()
        one.put(key, value, in: keySpace)
        try engine.write(one, durability: sync ? .groupCommit : Durability.none)
    }

    func get(key: UnsafeRawBufferPointer) throws -> Bool {
        try engine.withValue(forKey: key, in: keySpace) { $0.count } != nil
    }

    func scanAll() throws -> (entries: Int, bytes: Int) {
        let it = try engine.makeIterator(in: keySpace)
        var n = 0, bytes = 0
        try it.seekToFirst()
        while it.isValid {
            n += 1
            bytes += it.key.count + it.value.count
            try it.next()
        }
        return (n, bytes)
    }

    func compactAll() throws {
        _ = try engine.compact()
    }

    func close() {
        if ProcessInfo.processInfo.environment["STRATA_BENCH_STATS"] != nil {
            let c = engine.statistics().sinceOpen
            FileHandle.standardError.write("stalls \(c.writeStalls) slowdowns \(c.writeSlowdowns) flushes \(c.flushes) compactions \(c.compactions) walSyncs \(c.walSyncs) compactionMB \(c.compactionBytesRead >> 20) compactionSec \(c.compactionSeconds) cacheHits \(c.blockCacheHits) cacheMisses \(c.blockCacheMisses) bloomNegatives \(c.bloomFilterNegatives)\n".data(using: .utf8)!)
        }
        engine.close()
    }
}
