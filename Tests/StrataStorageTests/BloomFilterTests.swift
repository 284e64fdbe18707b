import Testing
@testable import StrataStorage

/// The segment bloom filter (SPEC §6.3), and segments of format 1 (before filter prefixes).
@Suite struct BloomFilterTests {
    static func hashes(_ range: Range<Int>, tag: String) -> [UInt64] {
        range.map { i in bytes("\(tag)-\(i)").withUnsafeBytes { BloomFilter.hash($0) } }
    }

    @Test func noFalseNegativesAndFewFalsePositives() {
        let present = Self.hashes(0..<50_000, tag: "key")
        let absent = Self.hashes(0..<50_000, tag: "other")
        BloomFilter.build(hashes: present, bitsPerKey: 10).withUnsafeBytes { f in
            #expect(present.allSatisfy { BloomFilter.mayContain(f, hash: $0) })
            let falsePositives = absent.filter { BloomFilter.mayContain(f, hash: $0) }.count
            // About 1% at 10 bits per key.
            #expect(falsePositives < absent.count * 2 / 100, "\(falsePositives) false positives")
        }
    }

    /// Too short, or k out of 1...30 (all bits clear, so a real filter would answer "no").
    @Test func aMalformedFilterAnswersMaybe() {
        let zeros = [UInt8](repeating: 0, count: 64)
        for filter in [[], [6], zeros + [0], zeros + [31]] {
            filter.withUnsafeBytes { f in #expect(BloomFilter.mayContain(f, hash: 12345), "\(filter.count) bytes") }
        }
        (zeros + [6]).withUnsafeBytes { #expect(!BloomFilter.mayContain($0, hash: 12345)) }
    }

    /// Segments an older Strata wrote (format 1: no filter prefixes) are read, never skipped
    /// by a prefix seek, and compaction rewrites them in the current format.
    @Test func formatOneSegmentsAreReadAndRewritten() throws {
        let fs = InMemoryFileSystem()
        let dir = "/db"
        var old = EngineOptions.testing(fs, blockBytes: 512)
        old.segmentFormatVersion = 1
        old.keySpaces = ["edges"]
        old.prefixFilters = ["edges": 8]
        do {
            let e = try Engine.open(directory: dir, options: old)
            for i in 0..<2_000 { try e.put(string(key(i)), "value-\(i)", in: e.defaultKeySpace) }
            let edges = try e.keySpace(named: "edges")
            var batch = WriteBatch()
            for g in 0..<20 { for id in 0..<5 { batch.put(PrefixFilterTests.groupKey(g, id), [], in: edges) } }
            try e.write(batch)
            try e.flush()
            e.close()
        }
        func footerVersions() throws -> [UInt8] {
            try fs.listDirectory(dir).filter { $0.hasSuffix(".seg") }.map { name in
                let b = fs.contents(of: dir + "/" + name)!
                return b[b.count - FormatConstants.segmentFooterBytes + 48]
            }
        }
        #expect(try footerVersions() == [1, 1])

        var current = EngineOptions.testing(fs, blockBytes: 512)
        current.keySpaces = ["edges"]
        current.prefixFilters = ["edges": 8]
        let e = try Engine.open(directory: dir, options: current)
        defer { e.close() }
        for i in 0..<2_000 { #expect(try e.getString(string(key(i)), in: e.defaultKeySpace) == "value-\(i)") }
        for i in 0..<2_000 { #expect(try e.get(key(i) + bytes("-absent"), in: e.defaultKeySpace) == nil) }
        #expect(e.statistics().bloomFilterNegatives >= 1_900)
        let edges = try e.keySpace(named: "edges")
        for g in 0..<20 {
            let it = try e.makeIterator(in: edges, prefix: PrefixFilterTests.prefix(g), suffixBytes: 8)
            #expect(try PrefixFilterTests.keys(it) == (0..<5).map { PrefixFilterTests.groupKey(g, $0) })
        }

        _ = try e.compact()
        #expect(try footerVersions().allSatisfy { $0 == UInt8(FormatConstants.segmentFormatVersion) })
        for i in 0..<2_000 { #expect(try e.getString(string(key(i)), in: e.defaultKeySpace) == "value-\(i)") }
    }
}
