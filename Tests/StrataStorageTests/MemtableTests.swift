import Testing
@testable import StrataStorage

/// The skip list against a sorted model, with insert orders that take the ascending fast path
/// (an insert after the previous one, found by a finger search from it), miss it, and alternate
/// between the two.
@Suite struct MemtableTests {
    enum Pattern: CaseIterable { case ascending, descending, random, ascendingRuns, interleaved, sortedBatches }

    static func keys(_ pattern: Pattern, count: Int, seed: UInt64) -> [UInt32] {
        var rng = SplitMix64(state: seed)
        switch pattern {
        case .ascending: return (0..<UInt32(count)).map { $0 * 3 }
        case .descending: return (0..<UInt32(count)).reversed().map { $0 * 3 }
        case .random: return (0..<count).map { _ in UInt32(rng.next() % UInt64(count * 4)) }
        case .ascendingRuns:
            // Runs of ascending keys starting at random places: each run's first insert misses.
            var out: [UInt32] = []
            while out.count < count {
                var k = UInt32(rng.next() % UInt64(count * 4))
                for _ in 0..<(1 + rng.next() % 40) where out.count < count {
                    out.append(k)
                    k += 1 + UInt32(rng.next() % 3)
                }
            }
            return out
        case .sortedBatches:
            // What a commit inserts: batches of random keys, each in key order, spread among
            // the keys of earlier batches (the finger search walks right from the last insert).
            var out: [UInt32] = []
            while out.count < count {
                out += (0..<min(100, count - out.count)).map { _ in UInt32(rng.next() % UInt64(count * 4)) }.sorted()
            }
            return out
        case .interleaved:
            // Two ascending streams, alternating: never right after the previous insert.
            return (0..<UInt32(count)).map { $0 % 2 == 0 ? $0 : UInt32(count * 4) + $0 }
        }
    }

    @Test(arguments: Pattern.allCases)
    func iterationAndLookupsMatchASortedModel(_ pattern: Pattern) {
        let table = Memtable(keySpaceId: 0, expectedBytes: 1 << 20)
        let keys = Self.keys(pattern, count: 5_000, seed: 11)
        // Internal-key order: user key ascending, then sequence descending.
        var model: [(key: [UInt8], sequence: UInt64, value: [UInt8])] = []
        for (i, k) in keys.enumerated() {
            let key = Array("k\(String(k, radix: 16))".utf8)   // variable length, so prefixes tie
            let value = Array("v\(i)".utf8)
            let sequence = UInt64(i + 1)
            key.withUnsafeBytes { kb in value.withUnsafeBytes { vb in table.insert(key: kb, value: vb, sequence: sequence, kind: .value) } }
            model.append((key, sequence, value))
        }
        model.sort { a, b in a.key != b.key ? a.key.lexicographicallyPrecedes(b.key) : a.sequence > b.sequence }
        let it = MemtableIterator(table)
        it.seekToFirst()
        var seen = 0
        while it.isValid, seen < model.count {
            #expect(Array(InternalKey.userKey(it.key)) == model[seen].key, "entry \(seen)")
            #expect(InternalKey.trailer(it.key) >> 8 == model[seen].sequence, "entry \(seen)")
            #expect(Array(it.value) == model[seen].value, "entry \(seen)")
            seen += 1
            it.next()
        }
        #expect(seen == model.count)
        #expect(!it.isValid)
        // A point read finds the newest version of each key.
        var newest: [[UInt8]: [UInt8]] = [:]
        for entry in model.reversed() { newest[entry.key] = entry.value }
        for (key, value) in newest {
            let found = key.withUnsafeBytes { table.get($0, hash: BloomFilter.hash($0), sequence: UInt64(keys.count)) }
            guard case let .found(bytes)? = found else {
                Issue.record("missing \(key)")
                continue
            }
            #expect(Array(bytes) == value)
        }
    }
}
