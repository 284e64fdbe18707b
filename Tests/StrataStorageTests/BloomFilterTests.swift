import Testing
@testable import StrataStorage

/// The two filter layouts (SPEC §6.3): the blocked one segment format 2 writes, and the classic
/// one of format 1, which stays readable.
@Suite struct BloomFilterTests {
    static func hashes(_ range: Range<Int>, tag: String) -> [UInt64] {
        range.map { i in bytes("\(tag)-\(i)").withUnsafeBytes { BloomFilter.hash($0) } }
    }

    @Test func bothLayoutsHaveNoFalseNegativesAndFewFalsePositives() {
        let present = Self.hashes(0..<50_000, tag: "key")
        let absent = Self.hashes(0..<50_000, tag: "other")
        for blocked in [true, false] {
            let filter = blocked ? BloomFilter.buildBlocked(hashes: present, bitsPerKey: 10)
                                 : BloomFilter.build(hashes: present, bitsPerKey: 10)
            filter.withUnsafeBytes { f in
                let probe = { (h: UInt64) in blocked ? BloomFilter.mayContainBlocked(f, hash: h) : BloomFilter.mayContain(f, hash: h) }
                #expect(present.allSatisfy(probe), "blocked: \(blocked)")
                let falsePositives = absent.filter(probe).count
                // About 1% (classic) and 1.2% (blocked) at 10 bits per key.
                #expect(falsePositives < absent.count * 2 / 100, "blocked: \(blocked), \(falsePositives) false positives")
            }
        }
        // A blocked filter is whole 64-byte blocks and k.
        #expect((BloomFilter.buildBlocked(hashes: present, bitsPerKey: 10).count - 1) % BloomFilter.blockBytes == 0)
    }

    /// Too short, not whole blocks, or k out of 1...30 (all bits clear, so a real filter would
    /// answer "no").
    @Test func aMalformedFilterAnswersMaybe() {
        let zeros = [UInt8](repeating: 0, count: 64)
        for filter in [[], [6], [0, 0, 0, 6], zeros + [0, 6], zeros + [0], zeros + [31]] {
            filter.withUnsafeBytes { f in #expect(BloomFilter.mayContainBlocked(f, hash: 12345), "\(filter.count) bytes") }
        }
        (zeros + [6]).withUnsafeBytes { #expect(!BloomFilter.mayContainBlocked($0, hash: 12345)) }
    }

    /// Segments an older Strata wrote (format 1: classic filter, no filter prefixes) are read
    /// with their own layout, and compaction rewrites them in the current format.
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
            try e.flush()
            e.close()
        }
        func footerVersions() throws -> [UInt8] {
            try fs.listDirectory(dir).filter { $0.hasSuffix(".seg") }.map { name in
                let b = fs.contents(of: dir + "/" + name)!
                return b[b.count - FormatConstants.segmentFooterBytes + 48]
            }
        }
        #expect(try footerVersions() == [1])

        var current = EngineOptions.testing(fs, blockBytes: 512)
        current.keySpaces = ["edges"]
        current.prefixFilters = ["edges": 8]
        let e = try Engine.open(directory: dir, options: current)
        defer { e.close() }
        // With the wrong layout a present key would be filtered out.
        for i in 0..<2_000 { #expect(try e.getString(string(key(i)), in: e.defaultKeySpace) == "value-\(i)") }
        for i in 0..<2_000 { #expect(try e.get(key(i) + bytes("-absent"), in: e.defaultKeySpace) == nil) }
        #expect(e.statistics().bloomFilterNegatives >= 1_900)

        _ = try e.compact()
        #expect(try footerVersions().allSatisfy { $0 == UInt8(FormatConstants.segmentFormatVersion) })
        for i in 0..<2_000 { #expect(try e.getString(string(key(i)), in: e.defaultKeySpace) == "value-\(i)") }
    }
}
