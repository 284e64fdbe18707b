import Testing
@testable import StrataStorage

/// User-key order is bytewise, whatever the keys' lengths and wherever they first differ: the
/// comparison reads words, and the last one overlaps the words before it.
@Suite struct InternalKeyTests {
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
}
