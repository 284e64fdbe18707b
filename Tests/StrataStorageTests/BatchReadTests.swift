import Foundation
import Testing
@testable import StrataStorage

/// `visitValues(forKeys:)` against one `get` per key, over data spread across the memtable,
/// level 0 and deeper levels, with overwrites, deletions, absent keys and a snapshot.
@Suite struct BatchReadTests {
    /// Reads `keys` in one batch: index → value (nil when absent), checking the order of the calls.
    static func batched(_ e: Engine, _ keys: [[UInt8]], in ks: KeySpace, snapshot: Snapshot? = nil) throws -> [[UInt8]?] {
        var list = KeyList()
        for k in keys { list.append(k) }
        var out: [[UInt8]?] = []
        try e.visitValues(forKeys: list, in: ks, snapshot: snapshot) { i, value in
            #expect(i == out.count, "calls come in key order")
            out.append(value.map { Array($0) })
        }
        return out
    }

    static func oneByOne(_ e: Engine, _ keys: [[UInt8]], in ks: KeySpace, snapshot: Snapshot? = nil) throws -> [[UInt8]?] {
        try keys.map { try e.get($0, in: ks, snapshot: snapshot) }
    }

    @Test func batchedReadsMatchSingleReadsAcrossLevelsDeletionsAndSnapshots() throws {
        let dir = TemporaryDirectory()
        let e = try Engine.open(directory: dir.path, options: CompactionTests.smallOptions())
        defer { e.close() }
        let ks = e.defaultKeySpace
        var rng = SplitMix64(state: 77)
        var model: [Int: [UInt8]] = [:]
        for round in 0..<24 {
            var batch = WriteBatch()
            for _ in 0..<300 {
                let k = rng.below(4000)
                if rng.below(6) == 0 {
                    batch.delete(key(k), in: ks)
                    model[k] = nil
                } else {
                    let v = bytes("v\(round)-\(rng.next())")
                    batch.put(key(k), v, in: ks)
                    model[k] = v
                }
            }
            try e.write(batch)
            if round == 15 { _ = try e.compact() }
            if round == 20 { try e.flush() }
        }
        let levels = e.statistics().keySpaces.first { $0.name == ks.name }!.segmentsPerLevel
        try #require(levels.filter { $0 > 0 }.count >= 2, "data on several levels: \(levels)")
        // Keys present, deleted and never written; repeated; more than one lookup group.
        var keys: [[UInt8]] = (0..<500).map { _ in key(rng.below(4400)) }
        keys += keys.prefix(20)
        let expected = keys.map { k in model[Int(string(k))!] }
        #expect(try Self.batched(e, keys, in: ks) == expected)
        #expect(try Self.oneByOne(e, keys, in: ks) == expected)

        // A snapshot keeps its view while later writes and a flush change the store.
        let snap = try e.snapshot()
        defer { snap.release() }
        var batch = WriteBatch()
        for k in keys.prefix(100) { batch.delete(k, in: ks) }
        for k in keys.dropFirst(100).prefix(100) { batch.put(k, bytes("new"), in: ks) }
        try e.write(batch)
        try e.flush()
        #expect(try Self.batched(e, keys, in: ks, snapshot: snap) == expected)
        #expect(try Self.batched(e, keys, in: ks) == Self.oneByOne(e, keys, in: ks))
    }

    @Test func keysOfDifferentLengthsAndAnEmptyList() throws {
        let dir = TemporaryDirectory()
        let e = try Engine.open(directory: dir.path, options: CompactionTests.smallOptions())
        defer { e.close() }
        let ks = e.defaultKeySpace
        let keys = ["", "a", "ab", String(repeating: "x", count: 300), "b"].map(bytes)
        for (i, k) in keys.enumerated() where i % 2 == 0 {
            var b = WriteBatch()
            b.put(k, bytes("value \(i)"), in: ks)
            try e.write(b)
        }
        try e.flush()
        try e.put("a", "in the memtable", in: ks)
        #expect(try Self.batched(e, keys, in: ks) == Self.oneByOne(e, keys, in: ks))
        var calls = 0
        try e.visitValues(forKeys: KeyList(), in: ks) { _, _ in calls += 1 }
        #expect(calls == 0)
    }

    @Test func aTooLongKeyOrAFailingBodyIsATypedError() throws {
        let dir = TemporaryDirectory()
        let e = try Engine.open(directory: dir.path, options: CompactionTests.smallOptions())
        defer { e.close() }
        let ks = e.defaultKeySpace
        try e.put("k", "v", in: ks)
        var list = KeyList()
        list.append(bytes("k"))
        list.append([UInt8](repeating: 1, count: StorageLimits.maxKeyBytes + 1))
        #expect(throws: StorageError.keyTooLarge(size: StorageLimits.maxKeyBytes + 1, limit: StorageLimits.maxKeyBytes)) {
            try e.visitValues(forKeys: list, in: ks) { _, _ in }
        }
        struct Stop: Error {}
        var seen = 0
        list.removeAll()
        for _ in 0..<40 { list.append(bytes("k")) }
        #expect(throws: Stop.self) {
            try e.visitValues(forKeys: list, in: ks) { _, _ in
                seen += 1
                if seen == 3 { throw Stop() }
            }
        }
        #expect(seen == 3, "no call after the body throws")
        e.close()
        #expect(throws: StorageError.self) { try e.visitValues(forKeys: list, in: ks) { _, _ in } }
    }
}
