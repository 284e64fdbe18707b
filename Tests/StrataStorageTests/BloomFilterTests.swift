import StrataTestSupport
import Testing
@testable import StrataStorage
import StrataTesting

/// The segment bloom filter (SPEC §6.3) in both layouts, and segments of formats 1 (before
/// filter prefixes) and 2 (before cache-line filters).
@Suite struct BloomFilterTests {
    static func hashes(_ range: Range<Int>, tag: String) -> [UInt64] {
        range.map { i in bytes("\(tag)-\(i)").withUnsafeBytes { BloomFilter.hash($0) } }
    }

    @Test(arguments: [BloomFilter.Layout.spread, .cacheLine])
    func noFalseNegativesAndFewFalsePositives(layout: BloomFilter.Layout) {
        let present = Self.hashes(0..<50_000, tag: "key")
        let absent = Self.hashes(0..<50_000, tag: "other")
        BloomFilter.build(hashes: present, bitsPerKey: 10, layout: layout).withUnsafeBytes { f in
            #expect(present.allSatisfy { BloomFilter.mayContain(f, hash: $0, layout: layout) })
            let falsePositives = absent.filter { BloomFilter.mayContain(f, hash: $0, layout: layout) }.count
            // About 1% at 10 bits per key.
            #expect(falsePositives < absent.count * 2 / 100, "\(falsePositives) false positives")
        }
    }

    /// The bits are exactly those SPEC §6.3 defines, probe by probe with a division each (the
    /// filters on disk must not change with how the code computes them), for every k and for
    /// sizes that are not powers of two; and a probe answers as that definition does.
    @Test func theBitsAreTheSpecsForEveryProbeCount() {
        func reference(_ hashes: [UInt64], _ bitsPerKey: Int) -> [UInt8] {
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
        Self.checkBits(layout: .spread, seed: 7, reference: reference) { built, h in
            let k = UInt64(built[built.count - 1]), nbits = UInt64((built.count - 1) * 8)
            return (0..<k).allSatisfy { j in
                let bit = ((h & 0xFFFF_FFFF) &+ j &* ((h >> 32) | 1)) % nbits
                return built[Int(bit >> 3)] & UInt8(1 << (bit & 7)) != 0
            }
        }
    }

    /// For every k and for sizes that are not powers of two: the built filter equals
    /// `reference`, a probe answers as `expected` (the definition applied to the built bits)
    /// does, and every key put in is found.
    static func checkBits(layout: BloomFilter.Layout, seed: UInt64, reference: ([UInt64], Int) -> [UInt8],
                          expected: ([UInt8], UInt64) -> Bool) {
        var rng = SplitMix64(state: seed)
        for bitsPerKey in [1, 2, 5, 10, 13, 20, 44] {
            for count in [1, 7, 100, 1_001] {
                let hashes = (0..<count).map { _ in rng.next() }
                let built = BloomFilter.build(hashes: hashes, bitsPerKey: bitsPerKey, layout: layout)
                #expect(built == reference(hashes, bitsPerKey), "\(layout): \(bitsPerKey) bits a key, \(count) keys")
                built.withUnsafeBytes { f in
                    for _ in 0..<200 {
                        let h = rng.next()
                        #expect(BloomFilter.mayContain(f, hash: h, layout: layout) == expected(built, h))
                    }
                    #expect(hashes.allSatisfy { BloomFilter.mayContain(f, hash: $0, layout: layout) })
                }
            }
        }
    }

    /// The same for the cache-line layout (segment format 3): SPEC §6.3's line choice and
    /// probes, written out here with plain arithmetic, give the filter's bits; every probe of a
    /// key lands in its line; a probe answers as the definition does.
    @Test func theCacheLineBitsAreTheSpecs() {
        func line(_ h: UInt64, _ lines: Int) -> Int { Int(((h >> 32) * UInt64(lines)) >> 32) }
        func probes(_ h: UInt64, _ k: Int) -> [Int] {
            var p = UInt32(h & 0xFFFF_FFFF), out: [Int] = []
            for _ in 0..<k { out.append(Int(p >> 23)); p = p &* 0x9E37_79B9 }
            return out
        }
        func reference(_ hashes: [UInt64], _ bitsPerKey: Int) -> [UInt8] {
            let k = max(1, min(30, Int(Double(bitsPerKey) * 0.69)))
            let lines = max(1, (hashes.count * bitsPerKey + 511) / 512)
            var out = [UInt8](repeating: 0, count: lines * 64 + 1)
            for h in hashes {
                for bit in probes(h, k) { out[line(h, lines) * 64 + bit / 8] |= UInt8(1 << (bit % 8)) }
            }
            out[lines * 64] = UInt8(k)
            return out
        }
        Self.checkBits(layout: .cacheLine, seed: 11, reference: reference) { built, h in
            let lines = (built.count - 1) / 64, k = Int(built[built.count - 1])
            return probes(h, k).allSatisfy { bit in built[line(h, lines) * 64 + bit / 8] & UInt8(1 << (bit % 8)) != 0 }
        }
    }

    /// A reader holds a segment's filter 64-byte aligned, so each line is one cache line; the
    /// filter of a real segment answers for the segment's keys and rules out others.
    @Test func aSegmentsCacheLineFilterRulesOutAbsentKeys() throws {
        let fs = InMemoryFileSystem()
        let e = try Engine.open(directory: "/db", options: .testing(fs, blockBytes: 512))
        defer { e.close() }
        for i in 0..<5_000 { try e.put(string(key(i)), "value-\(i)", in: e.defaultKeySpace) }
        try e.flush()
        for i in 0..<5_000 { #expect(try e.getString(string(key(i)), in: e.defaultKeySpace) == "value-\(i)") }
        let before = e.statistics().bloomFilterNegatives
        for i in 0..<5_000 { #expect(try e.get(key(i) + bytes("-absent"), in: e.defaultKeySpace) == nil) }
        // About 1% false positives: nearly every absent key is ruled out without a block read.
        #expect(e.statistics().bloomFilterNegatives - before >= 4_850)
    }

    /// Too short, k out of 1...30, or (cache-line layout) not whole lines: all bits clear, so a
    /// real filter would answer "no".
    @Test func aMalformedFilterAnswersMaybe() {
        let zeros = [UInt8](repeating: 0, count: 64)
        for layout in [BloomFilter.Layout.spread, .cacheLine] {
            for filter in [[], [6], zeros + [0], zeros + [31]] {
                filter.withUnsafeBytes { f in #expect(BloomFilter.mayContain(f, hash: 12345, layout: layout), "\(filter.count) bytes") }
            }
            (zeros + [6]).withUnsafeBytes { #expect(!BloomFilter.mayContain($0, hash: 12345, layout: layout)) }
        }
        for filter in [zeros.dropLast() + [6], zeros + zeros.prefix(5) + [6]] {
            Array(filter).withUnsafeBytes { f in #expect(BloomFilter.mayContain(f, hash: 12345, layout: .cacheLine), "\(filter.count) bytes") }
        }
    }

    /// Segments an older Strata wrote are read with the filter layout of their format, and
    /// compaction rewrites them in the current format. Format 1 (no filter prefixes): never
    /// skipped by a prefix seek. Format 2 (filter probes spread over the whole array): skipped.
    @Test(arguments: [UInt32(1), 2])
    func olderSegmentsAreReadAndRewritten(format: UInt32) throws {
        let fs = InMemoryFileSystem()
        let dir = "/db"
        var old = EngineOptions.testing(fs, blockBytes: 512)
        old.segmentFormatVersion = format
        old.keySpaces = ["edges"]
        old.prefixFilters = ["edges": 8]
        do {
            let e = try Engine.open(directory: dir, options: old)
            for i in 0..<2_000 { try e.put(string(key(i)), "value-\(i)", in: e.defaultKeySpace) }
            let edges = try e.keySpace(named: "edges")
            var batch = WriteBatch()
            for g in 0..<20 { for id in 0..<5 { batch.put(PrefixFilterTests.groupKey(2 * g, id), [], in: edges) } }
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
        #expect(try footerVersions() == [UInt8(format), UInt8(format)])

        var current = EngineOptions.testing(fs, blockBytes: 512)
        current.keySpaces = ["edges"]
        current.prefixFilters = ["edges": 8]
        let e = try Engine.open(directory: dir, options: current)
        defer { e.close() }
        for i in 0..<2_000 { #expect(try e.getString(string(key(i)), in: e.defaultKeySpace) == "value-\(i)") }
        for i in 0..<2_000 { #expect(try e.get(key(i) + bytes("-absent"), in: e.defaultKeySpace) == nil) }
        #expect(e.statistics().bloomFilterNegatives >= 1_900)
        let edges = try e.keySpace(named: "edges")
        let negativesBeforeSeeks = e.statistics().bloomFilterNegatives
        for g in 0..<20 {
            let it = try e.makeIterator(in: edges, prefix: PrefixFilterTests.prefix(2 * g), suffixBytes: 8)
            #expect(try PrefixFilterTests.keys(it) == (0..<5).map { PrefixFilterTests.groupKey(2 * g, $0) })
        }
        // An absent group within the segment's key range: a format 2 segment's prefix filter rules it out, format 1 has none.
        #expect(try PrefixFilterTests.keys(e.makeIterator(in: edges, prefix: PrefixFilterTests.prefix(7), suffixBytes: 8)).isEmpty)
        #expect((e.statistics().bloomFilterNegatives > negativesBeforeSeeks) == (format >= 2))

        _ = try e.compact()
        #expect(try footerVersions().allSatisfy { $0 == UInt8(FormatConstants.segmentFormatVersion) })
        for i in 0..<2_000 { #expect(try e.getString(string(key(i)), in: e.defaultKeySpace) == "value-\(i)") }
    }
}
