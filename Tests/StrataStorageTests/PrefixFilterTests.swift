import Testing
@testable import StrataStorage
import StrataTesting
import StrataTestSupport

/// Prefix filters (`EngineOptions.prefixFilters`, SPEC §6.3): a prefix seek gives what a plain
/// prefix scan gives, while skipping the segments that hold no key with the prefix, and never
/// skipping segments whose filter holds whole keys only.
@Suite struct PrefixFilterTests {
    static let dir = "/db"
    static let suffixBytes = 8

    /// A 4-byte group number followed by an 8-byte id: the keys of one group share a prefix.
    static func groupKey(_ group: Int, _ id: Int) -> [UInt8] {
        withUnsafeBytes(of: UInt32(group).bigEndian, Array.init) + withUnsafeBytes(of: UInt64(id).bigEndian, Array.init)
    }

    static func prefix(_ group: Int) -> [UInt8] { Array(groupKey(group, 0).prefix(4)) }

    static func options(_ fs: InMemoryFileSystem, filtered: Bool) -> EngineOptions {
        var o = EngineOptions.testing(fs, memtableBytes: 16 << 10, blockBytes: 512, targetSegmentBytes: 64 << 10)
        o.keySpaces = ["edges"]
        if filtered { o.prefixFilters = ["edges": suffixBytes] }
        return o
    }

    static func keys(_ it: EngineIterator) throws -> [[UInt8]] {
        var out: [[UInt8]] = []
        try it.seekToFirst()
        while it.isValid {
            out.append(Array(it.key))
            try it.next()
        }
        return out
    }

    /// Writes groups `groups` (even ones only, so odd groups are absent) with a few ids each,
    /// deleting some, flushing and compacting on the way; returns the live keys.
    static func fill(_ e: Engine, groups: Range<Int>, seed: UInt64, model: inout Set<[UInt8]>) throws {
        let ks = try e.keySpace(named: "edges")
        var rng = SplitMix64(state: seed)
        for round in 0..<6 {
            var batch = WriteBatch()
            for g in groups where g % 2 == 0 {
                for _ in 0..<3 {
                    let k = groupKey(g, Int(rng.next() % 50))
                    if rng.next() % 4 == 0 {
                        batch.delete(k, in: ks)
                        model.remove(k)
                    } else {
                        batch.put(k, bytes("v\(round)"), in: ks)
                        model.insert(k)
                    }
                }
            }
            try e.write(batch)
            try e.flush()
            if round == 3 { _ = try e.compact(keySpace: ks) }
        }
    }

    static func check(_ e: Engine, groups: Range<Int>, model: Set<[UInt8]>) throws {
        let ks = try e.keySpace(named: "edges")
        for g in groups {
            let plain = try keys(try e.makeIterator(in: ks, prefix: prefix(g)))
            let filtered = try keys(try e.makeIterator(in: ks, prefix: prefix(g), suffixBytes: suffixBytes))
            #expect(filtered == plain, "group \(g)")
            var viaKeys: [[UInt8]] = []
            try e.forEachKey(in: ks, prefix: prefix(g), suffixBytes: suffixBytes) { viaKeys.append(Array($0)) }
            #expect(viaKeys == plain.filter { $0.count == prefix(g).count + suffixBytes }, "group \(g), keys only")
            #expect(Set(plain) == Set(model.filter { Array($0.prefix(4)) == prefix(g) }), "group \(g)")
        }
    }

    @Test func prefixSeeksMatchPlainScansAndSkipSegments() throws {
        let fs = InMemoryFileSystem()
        let e = try Engine.open(directory: Self.dir, options: Self.options(fs, filtered: true))
        defer { e.close() }
        var model = Set<[UInt8]>()
        try Self.fill(e, groups: 0..<200, seed: 5, model: &model)
        let shape = e.statistics().keySpaces.first { $0.name == "edges" }!.segmentsPerLevel
        #expect(shape.reduce(0, +) >= 3, "several segments: \(shape)")
        try Self.check(e, groups: 0..<200, model: model)

        // Absent prefixes (odd groups) are ruled out by the filters: no block is read.
        let ks = try e.keySpace(named: "edges")
        let before = e.statistics()
        for g in stride(from: 1, to: 200, by: 2) {
            #expect(try Self.keys(try e.makeIterator(in: ks, prefix: Self.prefix(g), suffixBytes: Self.suffixBytes)).isEmpty)
        }
        let after = e.statistics()
        #expect(after.bloomFilterNegatives - before.bloomFilterNegatives >= 80)
        #expect(after.blockCacheHits + after.blockCacheMisses - before.blockCacheHits - before.blockCacheMisses < 20)
    }

    /// Segments written without the option hold whole keys only in their filters: a prefix
    /// seek must still read them after the option is turned on, and the other way round.
    @Test func segmentsWrittenWithoutTheOptionAreNeverSkipped() throws {
        let fs = InMemoryFileSystem()
        var model = Set<[UInt8]>()
        do {
            let e = try Engine.open(directory: Self.dir, options: Self.options(fs, filtered: false))
            try Self.fill(e, groups: 0..<100, seed: 7, model: &model)
            e.close()
        }
        do {
            let e = try Engine.open(directory: Self.dir, options: Self.options(fs, filtered: true))
            try Self.check(e, groups: 0..<100, model: model)
            try Self.fill(e, groups: 50..<150, seed: 8, model: &model)
            try Self.check(e, groups: 0..<150, model: model)
            e.close()
        }
        let e = try Engine.open(directory: Self.dir, options: Self.options(fs, filtered: false))
        defer { e.close() }
        try Self.check(e, groups: 0..<150, model: model)
    }

    /// A prefix read collects every version of every key under the prefix: up to 128 on the
    /// stack, the rest on the heap. Around that number, with versions in the memtable and in
    /// several segments, deletions, and a snapshot that still sees older versions, it gives
    /// what a plain prefix scan gives.
    @Test(arguments: [100, 128, 129, 400])
    func prefixReadsOfMoreVersionsThanTheStackHoldsMatchScans(versions: Int) throws {
        let fs = InMemoryFileSystem()
        let e = try Engine.open(directory: Self.dir, options: Self.options(fs, filtered: true))
        defer { e.close() }
        let ks = try e.keySpace(named: "edges")
        var rng = SplitMix64(state: UInt64(versions))
        var snapshot: Snapshot?
        for written in 0..<versions {
            var batch = WriteBatch()
            let k = Self.groupKey(7, Int(rng.next() % UInt64(max(1, versions / 3))))
            if rng.next() % 5 == 0 { batch.delete(k, in: ks) } else { batch.put(k, bytes("v\(written)"), in: ks) }
            batch.put(Self.groupKey(8, written), bytes("other"), in: ks)
            try e.write(batch)
            if written % 37 == 36 { try e.flush() }
            if written == versions / 2 { snapshot = try e.snapshot() }
        }
        for s in [nil, snapshot] {
            var viaKeys: [[UInt8]] = []
            try e.forEachKey(in: ks, prefix: Self.prefix(7), suffixBytes: Self.suffixBytes, snapshot: s) { viaKeys.append(Array($0)) }
            #expect(viaKeys == (try Self.keys(try e.makeIterator(in: ks, prefix: Self.prefix(7), snapshot: s))))
        }
        snapshot?.release()
    }

    @Test func anOutOfRangeSuffixIsATypedError() throws {
        var o = Self.options(InMemoryFileSystem(), filtered: false)
        o.prefixFilters = ["edges": 0]
        #expect(throws: StorageError.self) { try Engine.open(directory: Self.dir, options: o) }
        // A prefix key read takes suffixes of 1 to 8 bytes.
        let e = try Engine.open(directory: Self.dir, options: Self.options(InMemoryFileSystem(), filtered: false))
        defer { e.close() }
        for bad in [0, 9, -1] {
            #expect(throws: StorageError.invalidOption(name: "suffixBytes", reason: "\(bad) is not between 1 and 8")) {
                try e.forEachKey(in: e.defaultKeySpace, prefix: [1], suffixBytes: bad) { _ in }
            }
        }
    }
}
