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

    typealias Entry = (key: [UInt8], sequence: UInt64, value: [UInt8])

    static func entries(_ keys: [UInt32]) -> [Entry] {
        keys.enumerated().map { i, k in
            (Array("k\(String(k, radix: 16))".utf8), UInt64(i + 1), Array("v\(i)".utf8))   // variable length, so prefixes tie
        }
    }

    @Test(arguments: Pattern.allCases)
    func iterationAndLookupsMatchASortedModel(_ pattern: Pattern) {
        let table = Memtable(keySpaceId: 0, expectedBytes: 1 << 20)
        let model = Self.entries(Self.keys(pattern, count: 5_000, seed: 11))
        for e in model {
            e.key.withUnsafeBytes { kb in e.value.withUnsafeBytes { vb in table.insert(key: kb, value: vb, sequence: e.sequence, kind: .value) } }
        }
        Self.expect(table, holds: model)
    }

    /// Recovery's loader: nodes written first, sorted and linked at the end, into an empty
    /// memtable (the search-free build) or one that is not (linked one by one); then inserts
    /// after it, which start from the finger the build leaves.
    @Test(arguments: Pattern.allCases, [false, true])
    func theLoaderBuildsWhatInsertsBuild(_ pattern: Pattern, intoATableNotEmpty: Bool) {
        let table = Memtable(keySpaceId: 0, expectedBytes: 1 << 20)
        let model = Self.entries(Self.keys(pattern, count: 5_000, seed: 12))
        let first = intoATableNotEmpty ? 500 : 0
        for e in model[..<first] {
            e.key.withUnsafeBytes { kb in e.value.withUnsafeBytes { vb in table.insert(key: kb, value: vb, sequence: e.sequence, kind: .value) } }
        }
        let loader = MemtableLoader(table)
        for e in model[first..<4_000] {
            e.key.withUnsafeBytes { kb in e.value.withUnsafeBytes { vb in loader.add(key: kb, value: vb, sequence: e.sequence, kind: .value) } }
        }
        loader.finish()
        #expect(loader.isEmpty)
        Self.expect(table, holds: Array(model[..<4_000]))
        for e in model[4_000...] {
            e.key.withUnsafeBytes { kb in e.value.withUnsafeBytes { vb in table.insert(key: kb, value: vb, sequence: e.sequence, kind: .value) } }
        }
        Self.expect(table, holds: model)
    }

    /// A crafted log may repeat a sequence number: entries equal in internal key keep their
    /// arrival order, and none is lost.
    @Test func theLoaderKeepsEntriesWithTheSameInternalKey() {
        let table = Memtable(keySpaceId: 0, expectedBytes: 1 << 20)
        let loader = MemtableLoader(table)
        let keys: [[UInt8]] = [[3], [1], [3], [2], [1], [3]]
        for (i, k) in keys.enumerated() {
            k.withUnsafeBytes { kb in [UInt8(i)].withUnsafeBytes { vb in loader.add(key: kb, value: vb, sequence: 7, kind: .value) } }
        }
        loader.finish()
        let it = MemtableIterator(table)
        it.seekToFirst()
        var seen: [[UInt8]] = []
        while it.isValid {
            seen.append(Array(InternalKey.userKey(it.key)) + Array(it.value))
            it.next()
        }
        #expect(seen == [[1, 1], [1, 4], [2, 3], [3, 0], [3, 2], [3, 5]])
    }

    /// Iteration gives the model in internal-key order (user key ascending, then sequence
    /// descending); a point read finds the newest version of each key.
    static func expect(_ table: Memtable, holds entries: [Entry], sourceLocation: SourceLocation = #_sourceLocation) {
        let model = entries.sorted { a, b in a.key != b.key ? a.key.lexicographicallyPrecedes(b.key) : a.sequence > b.sequence }
        let it = MemtableIterator(table)
        it.seekToFirst()
        var seen = 0
        var mismatches = 0
        while it.isValid, seen < model.count {
            if Array(InternalKey.userKey(it.key)) != model[seen].key || InternalKey.trailer(it.key) >> 8 != model[seen].sequence
                || Array(it.value) != model[seen].value {
                mismatches += 1
            }
            seen += 1
            it.next()
        }
        #expect(mismatches == 0, sourceLocation: sourceLocation)
        #expect(seen == model.count, sourceLocation: sourceLocation)
        #expect(!it.isValid, sourceLocation: sourceLocation)
        #expect(table.entryCount == model.count, sourceLocation: sourceLocation)
        let newestSequence = model.map(\.sequence).max() ?? 0
        var newest: [[UInt8]: [UInt8]] = [:]
        for entry in entries.sorted(by: { $0.sequence < $1.sequence }) { newest[entry.key] = entry.value }
        var wrong = 0
        for (key, value) in newest {
            let found = key.withUnsafeBytes { table.get($0, hash: BloomFilter.hash($0), sequence: newestSequence) }
            guard case let .found(bytes)? = found, Array(bytes) == value else {
                wrong += 1
                continue
            }
        }
        #expect(wrong == 0, sourceLocation: sourceLocation)
    }
}
