import Testing
@testable import StrataStorage

@Suite struct EngineBasicsTests {
    @Test func putGetFlushReopen() throws {
        let dir = TemporaryDirectory()
        do {
            let e = try Engine.open(directory: dir.path)
            let ks = e.defaultKeySpace
            try e.put("a", "1", in: ks)
            try e.put("b", "2", in: ks)
            try e.flush()
            #expect(e.statistics().keySpaces[0].segmentsPerLevel[0] == 1)
            #expect(try e.getString("a", in: ks) == "1")
            try e.put("c", "3", in: ks)
            e.close()
        }
        let e = try Engine.open(directory: dir.path)
        defer { e.close() }
        let ks = e.defaultKeySpace
        #expect(try e.keys(ks) == ["a", "b", "c"])
        #expect(try e.getString("b", in: ks) == "2")
    }

    @Test func closeEmptiesTheBlockCache() throws {
        let dir = TemporaryDirectory()
        let e = try Engine.open(directory: dir.path)
        let ks = e.defaultKeySpace
        for i in 0..<2_000 { try e.put("k\(i)", String(repeating: "v", count: 100), in: ks) }
        try e.flush()
        for i in stride(from: 0, to: 2_000, by: 7) { #expect(try e.getString("k\(i)", in: ks) != nil) }
        #expect(e.statistics().blockCacheBytes > 0)
        e.close()
        // Emptied before close returns; only the freeing of the blocks is left to a background thread.
        #expect(e.statistics().blockCacheBytes == 0)
        #expect(throws: StorageError.self) { try e.getString("k1", in: ks) }
        let reopened = try Engine.open(directory: dir.path)
        defer { reopened.close() }
        #expect(try reopened.getString("k1999", in: reopened.defaultKeySpace) == String(repeating: "v", count: 100))
    }
}

@Suite struct LongKeyTests {
    @Test func longKeysAndValuesRoundTripThroughSegments() throws {
        let dir = TemporaryDirectory()
        let e = try Engine.open(directory: dir.path)
        defer { e.close() }
        let ks = e.defaultKeySpace
        // Keys long enough to take the lookup's fallback path; a value over a block's size.
        let keys = (0..<50).map { i in [UInt8](repeating: UInt8(65 + i % 26), count: 700 + i * 97) + key(i) }
        for (i, k) in keys.enumerated() {
            var b = WriteBatch()
            b.put(k, [UInt8](repeating: UInt8(i), count: i == 7 ? 100_000 : 10), in: ks)
            try e.write(b)
        }
        try e.flush()
        for (i, k) in keys.enumerated() {
            #expect(try e.get(k, in: ks) == [UInt8](repeating: UInt8(i), count: i == 7 ? 100_000 : 10))
            #expect(try e.get(k + [0], in: ks) == nil)
        }
        #expect(try e.scan(ks).count == 50)
    }
}
