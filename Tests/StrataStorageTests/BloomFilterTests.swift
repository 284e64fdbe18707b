import StrataTestSupport
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

    /// The bits are exactly those SPEC §6.3 defines, probe by probe with a division each (the
    /// filters on disk must not change with how the code computes them), for every k and for
    /// sizes that are not powers of two; and a probe answers as that definition does.
    @Test func theBitsAreTheSpecsForEveryProbeCount() {
        func reference(_ hashes: [UInt64], bitsPerKey: Int) -> [UInt8] {
            let k = max(1, min(30, Int(Double(bitsPerKey) * 0.69)))
            let bytes = (max(64, hashes.count * bitsPerKey) + 7) / 8
            let nbits = UInt64(bytes * 8)
            var out = [UInt8](repeating: 0, count: bytes + 1)
            for h in hashes {
                for j in 0..<UInt64(k) {
                    let bit = ((h & 0xFFFF_FFFF) &+ j &* ((h >> 32) | 1)) % nbits
                    out[Int(bit >> 3)] |= UInt8(1 << (bit & 7))
                }
            }
            out[bytes] = UInt8(k)
            return out
        }
        var rng = SplitMix64(state: 7)
        for bitsPerKey in [1, 2, 5, 10, 13, 20, 44] {
            for count in [1, 7, 100, 1_001] {
                let hashes = (0..<count).map { _ in rng.next() }
                let built = BloomFilter.build(hashes: hashes, bitsPerKey: bitsPerKey)
                #expect(built == reference(hashes, bitsPerKey: bitsPerKey), "\(bitsPerKey) bits a key, \(count) keys")
                built.withUnsafeBytes { f in
                    for _ in 0..<200 {
                        let h = rng.next()
                        let k = UInt64(built[built.count - 1]), nbits = UInt64((built.count - 1) * 8)
                        let expected = (0..<k).allSatisfy { j in
                            let bit = ((h & 0xFFFF_FFFF) &+ j &* ((h >> 32) | 1)) % nbits
                            return built[Int(bit >> 3)] & UInt8(1 << (bit & 7)) != 0
                        }
                        #expect(BloomFilter.mayContain(f, hash: h) == expected)
                    }
                    #expect(hashes.allSatisfy { BloomFilter.mayContain(f, hash: $0) })
                }
            }
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
