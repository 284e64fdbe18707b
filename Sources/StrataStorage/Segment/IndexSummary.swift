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
struct IndexSummary {
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
    /// entry says of its id block, and the entries grouped by head, for ``idEntry(forUserKey:)``.
    private let idBlocks: IdBlockTable?

    /// Per index entry of a format 5 segment: the id block's span and last id (the index key's
    /// id), or no span for a restart-layout block; and the runs of entries by head.
    struct IdBlockTable {
        struct Entry {
            var firstId: UInt64
            var lastId: UInt64
            /// Entries in the block; 0 when the block is not an id block (or its span is unusable).
            var count: UInt32
            var isSparse: Bool
        }
        var entries: [Entry]
        var runs: [Run]
        var headCount: Int
    }

    /// Nil when the index block does not decode as whole entries with handles; lookups then
    /// take the plain path, which reports the damage.
    ///
    /// Built once per segment, by the segment's first read (``IndexSummaryCell``), in one pass
    /// over the entries with word-wide comparisons; a run's head is copied only when the run
    /// ends (comparing each key with a copy of the last run cost a retain, a release and a byte
    /// loop per entry).
    /// - Parameter idSpans: whether index values may carry id block spans after their handles
    ///   (segment format 5, ``IdBlockSpan``).
    init?(index: Block, idSpans: Bool = false) {
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
        idBlocks = headRuns.isEmpty ? nil : Self.idBlockTable(spans: spans, keys: keys, entries: entries, runs: headRuns)
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

    /// The id block table of a format 5 segment, or nil when no index entry has a span. A span
    /// that does not agree with its index key (a dense block whose last id is not the key's, a
    /// sparse one whose ids cannot fit between its first and last) or whose entries could not
    /// fit in its block is left out: reads of that block take the block path, which checks the
    /// block whole and reports its damage.
    private static func idBlockTable(spans: [IdBlockSpan?], keys: [UnsafeRawBufferPointer], entries: [Entry],
                                     runs: [Run]) -> IdBlockTable? {
        guard spans.contains(where: { $0 != nil }) else { return nil }
        let headCount = runs[0].head.count
        var table: [IdBlockTable.Entry] = []
        table.reserveCapacity(spans.count)
        for (i, span) in spans.enumerated() {
            let last = UInt64(bigEndian: keys[i].loadUnaligned(fromByteOffset: headCount, as: UInt64.self))
            var e = IdBlockTable.Entry(firstId: 0, lastId: last, count: 0, isSparse: false)
            if let span, span.firstId <= last {
                let m = UInt64(span.count)
                let spread = last - span.firstId
                let agrees = span.isSparse ? m - 1 <= spread : m - 1 == spread
                // The entries (and a sparse block's ids), the head and the footer inside the block.
                let perEntry = UInt64(IdBlockLayout.checkedEntryBytes + (span.isSparse ? 8 : 0))
                let fits = m <= entries[i].size / perEntry
                    && m * perEntry + UInt64(headCount + IdBlockLayout.footerBytes) <= entries[i].size
                if agrees && fits {
                    e = IdBlockTable.Entry(firstId: span.firstId, lastId: last, count: span.count, isSparse: span.isSparse)
                }
            }
            table.append(e)
        }
        return IdBlockTable(entries: table, runs: runs, headCount: headCount)
    }

    /// Where a format 5 segment holds a key in an id block, found from the index entries' spans
    /// alone: the lower bound of the key among the blocks' last keys, by head (a binary search
    /// of the few runs) then by id (interpolation within the run). The block there holds every
    /// key of the segment between the previous block's last key and its own, so when it is an
    /// id block its head and id range say whether the key is in it, and where.
    enum IdEntryLookup {
        /// No block of the segment holds the key: no filter probe needed.
        case absent
        /// Index entry `position` is an id block with the key's head whose ids span the key's.
        case block(position: Int, firstId: UInt64, count: UInt32, isSparse: Bool)
        /// Not decided here (no spans, a key of another shape, a restart-layout block).
        case undecided
    }

    @inline(__always)
    func idEntry(forUserKey userKey: UnsafeRawBufferPointer) -> IdEntryLookup {
        guard let idBlocks else { return .undecided }
        let headCount = idBlocks.headCount
        guard userKey.count == headCount + 8 else { return .undecided }
        let runs = idBlocks.runs
        let head = UnsafeRawBufferPointer(rebasing: userKey[0..<headCount])
        var lo = 0
        if runs.count > 1 {
            var hi = runs.count
            while lo < hi {
                let mid = (lo + hi) / 2
                if runs[mid].head.withUnsafeBytes({ InternalKey.compareUserKeys($0, head) }) < 0 { lo = mid + 1 } else { hi = mid }
            }
            guard lo < runs.count else { return .absent }
        }
        let id = UInt64(bigEndian: userKey.loadUnaligned(fromByteOffset: headCount, as: UInt64.self))
        let run = runs[lo].range
        let sameHead = runs[lo].head.withUnsafeBytes { $0.bytesEqual(head) }
        if runs.count == 1, !sameHead {
            // The one run's head against the key's: below it, the key sorts before every block.
            if runs[0].head.withUnsafeBytes({ InternalKey.compareUserKeys($0, head) }) < 0 { return .absent }
        }
        return idBlocks.entries.withUnsafeBufferPointer { all -> IdEntryLookup in
            var position = run.lowerBound
            if sameHead {
                let e = UnsafeBufferPointer(rebasing: all[run])
                position = run.lowerBound + Self.firstLastIdNotBelow(id, in: e)
            }
            guard position < all.count else { return .absent }
            let block = all[position]
            guard block.count > 0 else { return .undecided }
            // An id block holds one head: its last key's. The key's head or id outside it: the
            // key sorts between the previous block's last key and this block's first.
            guard sameHead, position < run.upperBound, block.firstId <= id else { return .absent }
            return .block(position: position, firstId: block.firstId, count: block.count, isSparse: block.isSparse)
        }
    }

    /// The first position whose last id is >= `id` (`e.count` when none is): from an
    /// interpolated guess, as ``firstNotBelow(_:in:)``.
    @inline(__always)
    private static func firstLastIdNotBelow(_ id: UInt64, in e: UnsafeBufferPointer<IdBlockTable.Entry>) -> Int {
        let n = e.count
        guard n > 0, e[0].lastId < id else { return 0 }
        guard e[n - 1].lastId >= id else { return n }
        let span = e[n - 1].lastId - e[0].lastId
        let guess = Int(span.dividingFullWidth((id - e[0].lastId).multipliedFullWidth(by: UInt64(n - 1))).quotient)
        var lo: Int, hi: Int
        if e[guess].lastId >= id {
            // e[lo] < id <= e[hi]: gallop left from the guess.
            hi = guess
            lo = 0
            var step = 1
            while step <= hi {
                if e[hi - step].lastId < id {
                    lo = hi - step
                    break
                }
                hi -= step
                step &<<= 1
            }
        } else {
            lo = guess
            hi = n - 1
            var step = 1
            while lo + step < hi {
                if e[lo + step].lastId >= id {
                    hi = lo + step
                    break
                }
                lo += step
                step &<<= 1
            }
        }
        while hi - lo > 1 {
            let mid = (lo &+ hi) >> 1
            if e[mid].lastId < id { lo = mid } else { hi = mid }
        }
        return hi
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

    /// The first position whose word is >= `t` (`e.count` when none is), searched from an
    /// interpolated guess.
    private static func firstNotBelow(_ t: UInt64, in e: UnsafeBufferPointer<Entry>) -> Int {
        let n = e.count
        guard n > 0, e[0].word < t else { return 0 }
        guard e[n - 1].word >= t else { return n }
        // e[0] < t <= e[n - 1]: the span is positive, and the guess at most n - 1.
        let span = e[n - 1].word - e[0].word
        let guess = Int(span.dividingFullWidth((t - e[0].word).multipliedFullWidth(by: UInt64(n - 1))).quotient)
        // Bracket the answer: e[lo] < t <= e[hi], galloping away from the guess.
        guard e[guess].word >= t else { return firstFailing(after: guess, before: n - 1, in: e) { $0 < t } }
        var lo = 0, hi = guess
        var step = 1
        while step <= hi {
            if e[hi - step].word < t {
                lo = hi - step
                break
            }
            hi -= step
            step &<<= 1
        }
        while hi - lo > 1 {
            let mid = (lo &+ hi) >> 1
            if e[mid].word < t { lo = mid } else { hi = mid }
        }
        return hi
    }

    /// The first position at or after `from` whose word is > `t`, where `e[from]`, if any, is
    /// >= `t`: `from` itself unless words tie with the target.
    private static func firstAbove(_ t: UInt64, in e: UnsafeBufferPointer<Entry>, from: Int) -> Int {
        guard from < e.count, e[from].word == t else { return from }
        return firstFailing(after: from, before: e.count, in: e) { $0 <= t }
    }

    /// The first position in `lo + 1 ... hi` whose word fails `holds`, where `e[lo]`'s holds and
    /// `e[hi]`'s fails (or `hi` is `e.count`): galloping right from `lo`, then a binary search.
    @inline(__always)
    private static func firstFailing(after lo: Int, before hi: Int, in e: UnsafeBufferPointer<Entry>,
                                     _ holds: (UInt64) -> Bool) -> Int {
        var lo = lo, hi = hi
        var step = 1
        while lo + step < hi {
            if !holds(e[lo + step].word) {
                hi = lo + step
                break
            }
            lo += step
            step &<<= 1
        }
        while hi - lo > 1 {
            let mid = (lo &+ hi) >> 1
            if holds(e[mid].word) { lo = mid } else { hi = mid }
        }
        return hi
    }
}
