/// An in-memory summary of a segment's index block, built when the segment opens: for each
/// index entry, the eight user-key bytes that follow the prefix every entry shares, as a
/// big-endian integer, beside the entry's decoded block handle.
///
/// A point read or seek finds its index entry with integer comparisons and takes the handle
/// from the same array, touching the index block only where a target's integer ties with an
/// entry's. The search starts where the target's integer falls between the first and the last
/// entry's, then gallops: object keys are dense increasing ids, so the guess is usually the
/// entry itself or next to it, one or two cache lines where a binary search over a segment's
/// hundreds of entries touched ten (Bourbon's learned index, OSDI '20, in its simplest form:
/// one straight line per segment). Any other distribution costs at most twice a binary search.
///
/// Order-preserving: for user keys `a < b`, `word(a) <= word(b)` (bytes past the shared prefix,
/// zero-padded, compared as one big-endian word), so entries whose integer is below the
/// target's hold smaller keys and entries whose integer is above it hold larger ones.
package struct IndexSummary {
    struct Entry {
        var word: UInt64
        var offset: UInt64
        var size: UInt64
    }

    /// A run of index entries whose user keys share a head (fixed-width keys only).
    struct Run {
        var head: [UInt8]
        var range: Range<Int>
    }

    /// User-key bytes every index entry starts with.
    private let shared: [UInt8]
    /// Per index entry (restart point), its word and block handle.
    private let entries: [Entry]
    /// When every index key is a head of the same length and an 8-byte id (an id key space's
    /// segment, SPEC.md §6.1.1): the runs of entries by head, whose words are the ids. A segment
    /// holding several heads (entities) then finds its entry by arithmetic on the id within the
    /// run, where the shared-prefix word would cut the id's low bytes and leave ties to compare
    /// in the index block.
    private let runs: [Run]?
    /// Format 5 segments of an id key space (every index key a head and an id): what each index
    /// entry says of its id block, and the entries grouped by head (``IdBlockTable``).
    let idBlocks: IdBlockTable?

    /// - Parameter idSpans: whether index values may carry id block spans after their handles
    ///   (segment format 5, ``IdBlockSpan``).
    /// - Parameter openedBudget: an encrypted segment's, for its id blocks opened whole
    ///   (``IdBlockReads``).
    init?(index: Block, idSpans: Bool = false, openedBudget: OpenedBlockBudget? = nil) {
        let count = index.restartCount
        guard count > 0 else { return nil }
        var keys: [UnsafeRawBufferPointer] = []
        var entries: [Entry] = []
        var spans: [IdBlockSpan?] = []
        keys.reserveCapacity(count)
        entries.reserveCapacity(count)
        if idSpans { spans.reserveCapacity(count) }
        for i in 0..<count {
            guard let (key, value) = index.indexEntry(i) else { return nil }
            var r = ByteReader(value)
            guard let h = BlockHandle.decode(&r) else { return nil }
            if idSpans {
                guard let span = IdBlockSpan.decode(&r) else { return nil }
                spans.append(span)
            }
            keys.append(InternalKey.userKey(key))
            entries.append(Entry(word: 0, offset: h.offset, size: h.size))
        }
        let first = keys[0]
        var common = first.count
        var sameLength = true
        for k in keys.dropFirst() {
            common = first.sharedPrefixCount(with: k, limit: min(common, k.count))
            sameLength = sameLength && k.count == first.count
        }
        let headCount = first.count - 8
        var headRuns: [Run] = []
        if headCount >= 0, sameLength, common < headCount || spans.contains(where: { $0 != nil }) {
            var runStart = 0
            for i in 1...count where i == count || keys[runStart].sharedPrefixCount(with: keys[i], limit: headCount) < headCount {
                headRuns.append(Run(head: Array(UnsafeRawBufferPointer(rebasing: keys[runStart][0..<headCount])), range: runStart..<i))
                runStart = i
            }
        }
        idBlocks = headRuns.isEmpty ? nil
            : IdBlockTable(spans: spans, lastKeys: keys, handles: entries.map { BlockHandle(offset: $0.offset, size: $0.size) },
                           runs: headRuns.map { ($0.head, $0.range) }, openedBudget: openedBudget)
        // Runs only where the shared-prefix word would cut bytes off the keys' ends.
        if headCount >= 0, common < headCount, sameLength {
            for i in 0..<count {
                entries[i].word = UInt64(bigEndian: keys[i].loadUnaligned(fromByteOffset: headCount, as: UInt64.self))
            }
            self.runs = headRuns
            shared = []
            self.entries = entries
            return
        }
        for i in 0..<count { entries[i].word = Self.word(of: keys[i], after: common) }
        runs = nil
        shared = Array(first[0..<common])
        self.entries = entries
    }


    var count: Int { entries.count }

    /// The block handle of index entry `i`, as decoded at open. REQUIRES: `i < count`.
    @inline(__always) func handle(_ i: Int) -> BlockHandle {
        let e = entries[i]
        return BlockHandle(offset: e.offset, size: e.size)
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
        if let runs { return candidates(for: userKey, in: runs) }
        let n = min(shared.count, userKey.count)
        for i in 0..<n where userKey[i] != shared[i] {
            return userKey[i] < shared[i] ? .within(0..<0) : .afterAll
        }
        // A target shorter than the shared prefix sorts before every entry.
        if userKey.count < shared.count { return .within(0..<0) }
        let target = Self.word(of: userKey, after: shared.count)
        return entries.withUnsafeBufferPointer { e in
            let lo = Self.firstNotBelow(target, in: e)
            return .within(lo..<Self.firstAbove(target, in: e, from: lo))
        }
    }

    /// Fixed-width keys: the run of the target's head, then its id within the run. A key of
    /// another length is searched in the whole index block.
    private func candidates(for userKey: UnsafeRawBufferPointer, in runs: [Run]) -> Candidates {
        let headCount = runs[0].head.count
        guard userKey.count == headCount + 8 else { return .within(0..<entries.count) }
        let head = UnsafeRawBufferPointer(rebasing: userKey[0..<headCount])
        // Few runs (one per entity in the segment): a binary search for the first head >= the target's.
        var lo = 0, hi = runs.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if runs[mid].head.withUnsafeBytes({ InternalKey.compareUserKeys($0, head) }) < 0 { lo = mid + 1 } else { hi = mid }
        }
        guard lo < runs.count else { return .afterAll }
        let run = runs[lo].range
        guard runs[lo].head.withUnsafeBytes({ $0.bytesEqual(head) }) else { return .within(run.lowerBound..<run.lowerBound) }
        let target = UInt64(bigEndian: userKey.loadUnaligned(fromByteOffset: headCount, as: UInt64.self))
        return entries.withUnsafeBufferPointer { all in
            let e = UnsafeBufferPointer(rebasing: all[run])
            let first = Self.firstNotBelow(target, in: e)
            return .within((run.lowerBound + first)..<(run.lowerBound + Self.firstAbove(target, in: e, from: first)))
        }
    }

    /// The first position whose word is >= `t` (`e.count` when none is).
    @inline(__always)
    private static func firstNotBelow(_ t: UInt64, in e: UnsafeBufferPointer<Entry>) -> Int {
        InterpolationSearch.firstNotBelow(t, count: e.count) { e[$0].word }
    }

    /// The first position at or after `from` whose word is > `t`, where `e[from]`, if any, is
    /// >= `t`: `from` itself unless words tie with the target.
    private static func firstAbove(_ t: UInt64, in e: UnsafeBufferPointer<Entry>, from: Int) -> Int {
        guard from < e.count, e[from].word == t else { return from }
        return InterpolationSearch.firstFailing(after: from, before: e.count, key: { e[$0].word }) { $0 <= t }
    }
}
