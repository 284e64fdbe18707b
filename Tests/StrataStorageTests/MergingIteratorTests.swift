import StrataTestSupport
import Testing
@testable import StrataStorage

/// The merge of many sources (the heap of `MergingIterator`): every entry of every child, in
/// internal-key order, forward, backward, from seeks and across direction changes, for child
/// counts from one to sixteen whose keys interleave (versions of one user key spread over
/// several children, children that are empty or run out early).
@Suite struct MergingIteratorTests {
    struct Entry: Comparable {
        var key: [UInt8]
        var sequence: UInt64
        var internalKey: [UInt8] { key + withUnsafeBytes(of: (sequence << 8 | 1).littleEndian, Array.init) }
        static func < (a: Entry, b: Entry) -> Bool {
            a.key == b.key ? a.sequence > b.sequence : a.key.lexicographicallyPrecedes(b.key)
        }
    }

    /// `count` memtables sharing out random entries (unique sequences), and the sorted model.
    static func children(_ count: Int, rng: inout SplitMix64) -> ([Memtable], [Entry]) {
        let tables = (0..<count).map { _ in Memtable(keySpaceId: 0, expectedBytes: 64 << 10) }
        var model: [Entry] = []
        let entries = rng.below(400)
        for sequence in stride(from: UInt64(1), through: UInt64(entries), by: 1) {
            // Few distinct keys: one user key's versions land in several children.
            let entry = Entry(key: bytes("k\(rng.below(120))"), sequence: sequence)
            // Some children get most entries, some none.
            let child = min(count - 1, rng.below(count) * rng.below(2) + rng.below(2))
            entry.key.withUnsafeBytes { k in
                bytes("v\(sequence)").withUnsafeBytes { v in tables[child].insert(key: k, value: v, sequence: sequence, kind: .value) }
            }
            model.append(entry)
        }
        return (tables, model.sorted())
    }

    /// `nested`: the children after the first are merged by a child merge, as a source of a
    /// kind the merge does not call directly.
    @Test(arguments: [1, 2, 3, 5, 8, 16], [false, true])
    func mergesInOrderBothWaysAndAcrossTurns(childCount: Int, nested: Bool) {
        var rng = SplitMix64(state: UInt64(childCount) * 7919)
        for round in 0..<20 {
            let (tables, model) = Self.children(childCount, rng: &rng)
            let sources = tables.map { MemtableIterator($0) as any InternalIterator }
            let merged = nested && sources.count > 1
                ? MergingIterator([sources[0], MergingIterator(Array(sources.dropFirst()))])
                : MergingIterator(sources)
            let expected = model.map(\.internalKey)

            var forward: [[UInt8]] = []
            merged.seekToFirst()
            while merged.isValid { forward.append(Array(merged.key)); merged.next() }
            #expect(forward.elementsEqual(expected), "round \(round): forward, \(forward.count) of \(expected.count) entries")

            var backward: [[UInt8]] = []
            merged.seekToLast()
            while merged.isValid { backward.append(Array(merged.key)); merged.prev() }
            #expect(backward.elementsEqual(expected.reversed()), "round \(round): backward, \(backward.count) of \(expected.count) entries")

            // A seek, then random steps either way, against positions in the model.
            for _ in 0..<10 {
                let target = Entry(key: bytes("k\(rng.below(130))"), sequence: UInt64(rng.below(500))).internalKey
                target.withUnsafeBytes { merged.seek($0) }
                var position = expected.firstIndex { key in
                    key.withUnsafeBytes { k in target.withUnsafeBytes { InternalKey.compare(k, $0) >= 0 } }
                } ?? expected.count
                for step in 0..<12 {
                    let atEnd = position < 0 || position >= expected.count
                    #expect(merged.isValid == !atEnd, "round \(round) step \(step)")
                    if atEnd { break }
                    #expect(Array(merged.key) == expected[position], "round \(round) step \(step)")
                    #expect(Array(merged.value) == bytes("v\(model[position].sequence)"))
                    if rng.below(2) == 0 { merged.next(); position += 1 } else { merged.prev(); position -= 1 }
                }
            }
        }
    }
}
