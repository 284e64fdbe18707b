import Testing
@testable import StrataStorage

/// The key comparisons that read words instead of bytes.
@Suite struct InternalKeyTests {
    /// User-key order is bytewise, whatever the keys' lengths and wherever they first differ:
    /// the comparison reads words, and the last one overlaps the words before it.
    @Test func userKeyOrderIsBytewiseOrder() {
        var rng = SplitMix64(state: 5)
        var mismatches = 0
        for _ in 0..<20_000 {
            let length = Int(rng.next() % 25)
            // Keys sharing most of their bytes, so that they differ anywhere, the tail included.
            let a = (0..<length).map { _ in UInt8(rng.next() % 3) }
            var b = a
            switch rng.next() % 4 {
            case 0 where !b.isEmpty: b[Int(rng.next() % UInt64(b.count))] = UInt8(rng.next() % 3)
            case 1: b.append(UInt8(rng.next() % 3))
            case 2 where !b.isEmpty: b.removeLast(Int(rng.next() % UInt64(b.count)) + 1)
            default: b = (0..<Int(rng.next() % 25)).map { _ in UInt8(rng.next() % 3) }
            }
            let expected = a == b ? 0 : (a.lexicographicallyPrecedes(b) ? -1 : 1)
            let got = a.withUnsafeBytes { x in b.withUnsafeBytes { y in InternalKey.compareUserKeys(x, y) } }
            if got.signum() != expected { mismatches += 1 }
        }
        #expect(mismatches == 0)
    }

    /// The shared prefix that blocks compress away and index summaries skip: the word loop,
    /// the first difference found from two words' XOR, the overlapping last word and the byte
    /// tail of short keys agree with a byte-by-byte count, at every length and limit.
    @Test func sharedPrefixCountIsTheBytewiseCount() {
        var rng = SplitMix64(state: 6)
        var mismatches = 0
        for _ in 0..<20_000 {
            let a = (0..<Int(rng.next() % 30)).map { _ in UInt8(rng.next() % 2) }
            var b = a
            if !b.isEmpty, rng.next() % 4 != 0 { b[Int(rng.next() % UInt64(b.count))] ^= 1 }
            if rng.next() % 3 == 0 { b.append(contentsOf: (0..<Int(rng.next() % 9)).map { _ in UInt8(rng.next() % 2) }) }
            let limit = Int(rng.next() % UInt64(min(a.count, b.count) + 1))
            var expected = 0
            while expected < limit && a[expected] == b[expected] { expected += 1 }
            let got = a.withUnsafeBytes { x in b.withUnsafeBytes { y in x.sharedPrefixCount(with: y, limit: limit) } }
            if got != expected { mismatches += 1 }
        }
        #expect(mismatches == 0)
    }
}
