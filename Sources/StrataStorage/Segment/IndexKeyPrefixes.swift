/// An in-memory search aid for a segment's index block, built when the segment opens: for each
/// index entry, the eight user-key bytes that follow the prefix every entry shares, as a
/// big-endian integer. A point lookup narrows the binary search with integer comparisons and
/// decodes index entries only where those integers tie.
///
/// Order-preserving: for user keys `a < b`, `prefix(a) <= prefix(b)` (bytes past the shared
/// prefix, zero-padded, compared as one big-endian word), so entries whose integer is below the
/// target's hold smaller keys and entries whose integer is above it hold larger ones.
struct IndexKeyPrefixes {
    /// User-key bytes every index entry starts with.
    private let shared: [UInt8]
    /// Per index entry (restart point), the word after `shared`.
    private let words: [UInt64]

    /// Nil when the index block does not decode as whole entries; lookups then take the plain path.
    init?(index: Block) {
        var keys: [UnsafeRawBufferPointer] = []
        keys.reserveCapacity(index.restartCount)
        for i in 0..<index.restartCount {
            guard let key = index.indexEntryKey(i) else { return nil }
            keys.append(InternalKey.userKey(key))
        }
        guard let first = keys.first else { return nil }
        var common = first.count
        for k in keys.dropFirst() {
            var n = 0
            let limit = min(common, k.count)
            while n < limit && k[n] == first[n] { n += 1 }
            common = n
        }
        shared = Array(first[0..<common])
        words = keys.map { Self.word(of: $0, after: common) }
    }

    @inline(__always)
    private static func word(of key: UnsafeRawBufferPointer, after skip: Int) -> UInt64 {
        var w: UInt64 = 0
        var i = skip
        let end = min(key.count, skip + 8)
        while i < end {
            w |= UInt64(key[i]) << UInt64(56 - 8 * (i - skip))
            i += 1
        }
        return w
    }

    /// Where to look for the first index entry >= a lookup key with user key `userKey`.
    enum Candidates {
        /// Every entry is smaller.
        case afterAll
        /// The answer lies in `range`, or is `range.upperBound` when no entry in it is >= target.
        case within(Range<Int>)
    }

    func candidates(for userKey: UnsafeRawBufferPointer) -> Candidates {
        let n = min(shared.count, userKey.count)
        for i in 0..<n where userKey[i] != shared[i] {
            return userKey[i] < shared[i] ? .within(0..<0) : .afterAll
        }
        // A target shorter than the shared prefix sorts before every entry.
        if userKey.count < shared.count { return .within(0..<0) }
        let target = Self.word(of: userKey, after: shared.count)
        return words.withUnsafeBufferPointer { w in
            var lo = 0, hi = w.count
            while lo < hi {
                let mid = (lo &+ hi) >> 1
                if w[mid] < target { lo = mid + 1 } else { hi = mid }
            }
            var end = lo
            hi = w.count
            while end < hi {
                let mid = (end &+ hi) >> 1
                if w[mid] <= target { end = mid + 1 } else { hi = mid }
            }
            return .within(lo..<end)
        }
    }
}
