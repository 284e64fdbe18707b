import Testing
@testable import StrataStorage

/// The block cache's own hash index (linear probing, backward-shift deletion) against a model:
/// a cached block is always the one last inserted for its key, and evictions keep the index
/// and the LRU entries in step.
@Suite struct BlockCacheTests {
    static func block(_ bytes: Int) throws -> Block {
        let storage = UnsafeMutableRawBufferPointer.allocate(byteCount: bytes, alignment: 8)
        storage.initializeMemory(as: UInt8.self, repeating: 0)
        return try Block(taking: storage, contentsCount: bytes, file: "test", offset: 0, parseRestarts: false)
    }

    @Test func lookupsInsertsEvictionsAndSegmentDropsAgreeWithAModel() throws {
        // 16 shards of 16 KiB: about 100 blocks of 128 + 128 bytes fit in each.
        let cache = BlockCache(capacityBytes: 16 * 16 << 10)
        var rng = SplitMix64(state: 3)
        var latest: [BlockCache.Key: Block] = [:]
        var recent: [BlockCache.Key] = []
        for step in 0..<60_000 {
            let key = BlockCache.Key(segmentId: rng.next() % 12, offset: (rng.next() % 2_000) * 4_096)
            switch rng.next() % 10 {
            case 0..<5:
                let b = try Self.block(128)
                cache.insert(key, b)
                latest[key] = b
                recent.append(key)
            case 5..<9:
                if let got = cache.get(key) { #expect(got === latest[key], "step \(step)") }
            default:
                let segment = rng.next() % 12
                cache.evict(segmentId: segment)
                for k in latest.keys where k.segmentId == segment { #expect(cache.get(k) == nil) }
                latest = latest.filter { $0.key.segmentId != segment }
                recent.removeAll { $0.segmentId == segment }
            }
            if step % 5_000 == 0 { #expect(cache.isConsistent, "step \(step)") }
        }
        #expect(cache.isConsistent)
        // The last few inserts still there (well within one shard's capacity).
        for key in recent.suffix(20) { #expect(cache.get(key) === latest[key]) }
        #expect(cache.usageBytes <= 16 * 16 << 10)
    }
}
