import Testing
@testable import StrataStorage
import StrataTesting

/// The block cache's own hash index (linear probing, backward-shift deletion) against a model:
/// a cached block is always the one last inserted for its key, and evictions keep the index
/// and the entries in step.
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

    /// A block read between every two inserts keeps its place however many blocks pass through
    /// (the hand gives it a second chance each lap), while blocks never read again make way.
    @Test func aBlockInUseOutlivesAStreamOfBlocksReadOnce() throws {
        let cache = BlockCache(capacityBytes: 16 * 16 << 10)
        let hot = BlockCache.Key(segmentId: 1, offset: 0)
        let hotBlock = try Self.block(128)
        cache.insert(hot, hotBlock)
        var cold: [BlockCache.Key] = []
        for i in 1...20_000 {
            let key = BlockCache.Key(segmentId: 2 + UInt64(i % 7), offset: UInt64(i) * 4_096)
            cache.insert(key, try Self.block(128))
            cold.append(key)
            #expect(cache.get(hot) === hotBlock, "insert \(i)")
        }
        // About 1,600 blocks fit; the first cold ones are long gone.
        #expect(cold.prefix(1_000).allSatisfy { cache.get($0) == nil })
        #expect(cache.usageBytes <= 16 * 16 << 10)
        #expect(cache.isConsistent)
    }
}

/// `EngineOptions.cacheFillingKeySpaces`: a flush of a listed key space leaves the blocks it
/// wrote in the cache, so reading them back misses nothing and reads nothing from the file;
/// other key spaces, and compactions, do not fill it. (Restart-layout blocks: format 5 id
/// blocks are read an entry at a time, without the cache, and are not put there.)
@Suite struct FlushCacheFillTests {
    static func flushAndRead(filling: Bool) throws -> (misses: UInt64, hits: UInt64, matched: Bool) {
        let fs = InMemoryFileSystem()
        var options = EngineOptions.testing(fs, memtableBytes: 1 << 20, blockBytes: 512)
        options.keySpaces = ["objects"]
        if filling { options.cacheFillingKeySpaces = ["objects"] }
        let e = try Engine.open(directory: "/db", options: options)
        defer { e.close() }
        let ks = try e.keySpace(named: "objects")
        var batch = WriteBatch()
        for i in UInt64(1)...2_000 {
            batch.put([0, 0, 0, 1] + withUnsafeBytes(of: i.bigEndian) { Array($0) }, Array("object \(i)".utf8), in: ks)
        }
        try e.write(batch)
        try e.flush()
        let before = e.statistics()
        var matched = true
        for i in UInt64(1)...2_000 {
            let v = try e.get([0, 0, 0, 1] + withUnsafeBytes(of: i.bigEndian) { Array($0) }, in: ks)
            matched = matched && v == Array("object \(i)".utf8)
        }
        let after = e.statistics()
        return (after.blockCacheMisses - before.blockCacheMisses, after.blockCacheHits - before.blockCacheHits, matched)
    }

    @Test func aFlushOfAListedKeySpaceFillsTheCache() throws {
        let filled = try Self.flushAndRead(filling: true)
        #expect(filled.matched)
        #expect(filled.misses == 0)
        #expect(filled.hits >= 2_000)
        let cold = try Self.flushAndRead(filling: false)
        #expect(cold.matched)
        #expect(cold.misses > 10)
    }
}
