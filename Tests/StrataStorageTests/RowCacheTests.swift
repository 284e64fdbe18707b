import Foundation
import Testing
@testable import StrataStorage

/// The row cache (SPEC.md §10): keys read more than once are answered from it, and every answer
/// is the one the segments give, for the latest state and for snapshots older than a segment,
/// across overwrites, deletions, flushes and compactions, one key at a time and in batches.
@Suite struct RowCacheTests {
    static func options(rowCacheBytes: Int = 1 << 20) -> EngineOptions {
        var o = CompactionTests.smallOptions()
        o.rowCacheBytes = rowCacheBytes
        return o
    }

    /// Puts keys 0..<n with values tagged `tag` (every seventh deleted instead when `deleting`),
    /// then flushes them into a segment.
    static func writeSegment(_ e: Engine, n: Int, tag: String, deleting: Bool = false) throws {
        var batch = WriteBatch()
        for i in 0..<n {
            if deleting && i % 7 == 0 { batch.delete(key(i), in: e.defaultKeySpace) } else {
                batch.put(key(i), bytes("\(tag)-\(i)"), in: e.defaultKeySpace)
            }
        }
        try e.write(batch)
        try e.flush()
        try e.waitForBackgroundWork()
    }

    @Test func keysReadTwiceAreCachedAndEveryAnswerIsTheSegments() throws {
        let dir = TemporaryDirectory()
        let e = try Engine.open(directory: dir.path, options: Self.options())
        defer { e.close() }
        let ks = e.defaultKeySpace
        let rows = try #require(e.rowCache)
        try Self.writeSegment(e, n: 500, tag: "a")

        // A first read of each key only notes it (but for the few whose doorkeeper bit another
        // key set); the second caches it.
        for i in 0..<500 { #expect(try e.get(key(i), in: ks) == bytes("a-\(i)")) }
        let afterOne = rows.usageBytes
        for i in 0..<500 { #expect(try e.get(key(i), in: ks) == bytes("a-\(i)")) }
        let cached = rows.usageBytes
        #expect(afterOne * 10 < cached, "a key read once is not cached: \(afterOne) bytes after one read, \(cached) after two")
        // Answered from the cache: the block cache is not asked again.
        let misses = e.statistics().blockCacheMisses, hits = e.statistics().blockCacheHits
        for i in 0..<500 { #expect(try e.get(key(i), in: ks) == bytes("a-\(i)")) }
        #expect(e.statistics().blockCacheHits + e.statistics().blockCacheMisses - hits - misses < 50)

        // Overwrites and deletions in a newer segment: the older segment's rows must not answer.
        let before = try e.snapshot()
        try Self.writeSegment(e, n: 500, tag: "b", deleting: true)
        for _ in 0..<2 {
            for i in 0..<500 {
                #expect(try e.get(key(i), in: ks) == (i % 7 == 0 ? nil : bytes("b-\(i)")))
                // The snapshot is older than the newer segment: it reads "a" through its own path.
                #expect(try e.get(key(i), in: ks, snapshot: before) == bytes("a-\(i)"))
            }
        }
        // A compaction merges both into new segments; their rows start afresh, old ones go.
        try e.compact()
        try e.waitForBackgroundWork()
        for _ in 0..<2 {
            for i in 0..<500 { #expect(try e.get(key(i), in: ks) == (i % 7 == 0 ? nil : bytes("b-\(i)"))) }
        }
        #expect(try e.get(key(3), in: ks, snapshot: before) == bytes("a-3"))
        #expect(rows.usageBytes <= rows.capacityBytes)
    }

    /// Batched reads take rows from the cache, and give the same answers as single reads and as
    /// an engine without a row cache.
    @Test func batchedReadsUseRowsAndAgreeWithAnEngineWithoutThem() throws {
        let withRows = TemporaryDirectory(), without = TemporaryDirectory()
        let a = try Engine.open(directory: withRows.path, options: Self.options())
        let b = try Engine.open(directory: without.path, options: Self.options(rowCacheBytes: 0))
        defer { a.close(); b.close() }
        #expect(b.rowCache == nil)
        var rng = SplitMix64(state: 5)
        for round in 0..<6 {
            for e in [a, b] { try Self.writeSegment(e, n: 300 + round * 50, tag: "r\(round)", deleting: round % 2 == 1) }
            let keys = (0..<400).map { _ in key(rng.below(700)) }
            for _ in 0..<3 {
                let fromA = try BatchReadTests.batched(a, keys, in: a.defaultKeySpace)
                #expect(fromA == (try BatchReadTests.batched(b, keys, in: b.defaultKeySpace)))
                #expect(fromA == (try BatchReadTests.oneByOne(a, keys, in: a.defaultKeySpace)))
            }
        }
        #expect(try #require(a.rowCache).usageBytes > 0)
    }

    /// A cache far smaller than what is read stays within its size, and still answers right.
    @Test func aSmallCacheEvictsAndStaysWithinItsSize() throws {
        let dir = TemporaryDirectory()
        let e = try Engine.open(directory: dir.path, options: Self.options(rowCacheBytes: 64 << 10))
        defer { e.close() }
        try Self.writeSegment(e, n: 5_000, tag: "v")
        let rows = try #require(e.rowCache)
        for _ in 0..<3 {
            for i in 0..<5_000 { #expect(try e.get(key(i), in: e.defaultKeySpace) == bytes("v-\(i)")) }
        }
        #expect(rows.usageBytes > 0 && rows.usageBytes <= 64 << 10)
    }

    /// Two keys whose hashes collide share a slot: a row answers only for its own key.
    @Test func aRowAnswersOnlyForItsOwnKey() {
        let rows = RowCache(capacityBytes: 1 << 20)
        let hash: UInt64 = 42
        for _ in 0..<2 {
            bytes("alpha").withUnsafeBytes { k in bytes("one").withUnsafeBytes { rows.offer(segmentId: 7, key: k, hash: hash, value: $0) } }
        }
        let hit = bytes("alpha").withUnsafeBytes { rows.get(segmentId: 7, key: $0, hash: hash) }
        #expect(hit.map { Array($0.value) } == bytes("one"))
        #expect(bytes("bravo").withUnsafeBytes { rows.get(segmentId: 7, key: $0, hash: hash) } == nil)
        #expect(bytes("alpha").withUnsafeBytes { rows.get(segmentId: 8, key: $0, hash: hash) } == nil)
        for _ in 0..<2 { bytes("gone").withUnsafeBytes { rows.offer(segmentId: 7, key: $0, hash: 9, value: nil) } }
        #expect(bytes("gone").withUnsafeBytes { rows.get(segmentId: 7, key: $0, hash: 9) }?.isDeletion == true)
    }
}
