/// What a format 5 segment's index says of its id blocks (SPEC.md §6.2), laid out for the point
/// read that copies one entry (``SegmentReader/readIdEntry(lookupKey:into:)``): per index entry,
/// the block's handle, first and last id and entry count (no count: a restart-layout block, or
/// a span left out), and the entries grouped in runs by head. Built once with the segment's
/// ``IndexSummary``; read without locks, closures or reference counting: the lookup runs once
/// per segment a read consults, and the summary it replaced as the first step of an object read
/// cost a retain and a release of each of its arrays.
final class IdBlockTable: @unchecked Sendable {
    // @unchecked Sendable: immutable after init but for each entry's `reads` and `opened`,
    // which are only accessed atomically (``IdBlockReads``); it owns its memory.
    struct Entry {
        var firstId: UInt64
        var lastId: UInt64
        var offset: UInt64
        var size: UInt32
        /// Entries in the block; 0 when the block is not an id block (or its span is unusable).
        var count: UInt32
        var isSparse: Bool
        /// Bytes of each entry (``IdBlockLayout/EntryShape``).
        var entryBytes: UInt8
        /// An encrypted segment's: single reads of the block so far, and its opened contents
        /// (``IdBlockReads``). Beside the fields a lookup reads, so that counting a read or
        /// finding an opened block costs no memory miss of its own; only ever accessed
        /// atomically, through ``IdBlockTable/entryAddress(_:)``, never copied with the entry.
        var reads: UInt8 = 0
        var opened: UnsafeMutableRawPointer? = nil

        static let readsOffset = MemoryLayout<Entry>.offset(of: \Entry.reads)!
        static let openedOffset = MemoryLayout<Entry>.offset(of: \Entry.opened)!
    }

    /// Entry `i`'s address, for ``IdBlockReads``' atomic accesses to its mutable fields.
    @inline(__always) func entryAddress(_ i: Int) -> UnsafeMutablePointer<Entry> { entries.baseAddress! + i }

    /// Entry `i`'s fixed fields, read one by one: a copy of the whole entry would read its
    /// mutable ones without atomicity.
    @inline(__always) private func fixedFields(_ i: Int) -> Entry {
        let e = entries.baseAddress! + i
        return Entry(firstId: e.pointee.firstId, lastId: e.pointee.lastId, offset: e.pointee.offset, size: e.pointee.size,
                     count: e.pointee.count, isSparse: e.pointee.isSparse, entryBytes: e.pointee.entryBytes)
    }

    /// One per index entry. Their fixed fields never change after init; `reads` and `opened`
    /// change atomically (``IdBlockReads``), so an entry is read field by field, never copied whole.
    private let entries: UnsafeMutableBufferPointer<Entry>
    /// Per run of entries with one head: where it ends (exclusive); runs follow each other.
    private let runEnds: UnsafeMutableBufferPointer<Int>
    /// When heads have at most 8 bytes: each run's head as a big-endian word, zero-padded (for
    /// heads of one length, ordered as the heads), searched instead of the byte arrays.
    private let headWords: UnsafeMutableBufferPointer<UInt64>?
    /// Each run's head, for heads longer than 8 bytes.
    private let heads: [[UInt8]]
    let headCount: Int
    /// An encrypted segment's: per entry, how its block is read (``IdBlockReads``).
    let reads: IdBlockReads?

    /// Nil when no index entry has a span. A span that does not agree with its index key (a
    /// dense block whose last id is not the key's, a sparse one whose ids cannot fit between
    /// its first and last) or whose entries could not fit in its block is left out: reads of
    /// that block take the block path, which checks the block whole and reports its damage.
    ///
    /// - Parameters: per index entry, its span, its key's user key (a head and an id) and its
    ///   block's handle; and the runs of entries by head (at least one).
    init?(spans: [IdBlockSpan?], lastKeys: [UnsafeRawBufferPointer], handles: [BlockHandle],
          runs: [(head: [UInt8], range: Range<Int>)], openedBudget: OpenedBlockBudget? = nil) {
        guard spans.contains(where: { $0 != nil }), let first = runs.first else { return nil }
        let headCount = first.head.count
        self.headCount = headCount
        entries = .allocate(capacity: spans.count)
        reads = openedBudget.map { IdBlockReads(count: spans.count, budget: $0) }
        for (i, span) in spans.enumerated() {
            let last = UInt64(bigEndian: lastKeys[i].loadUnaligned(fromByteOffset: headCount, as: UInt64.self))
            var e = Entry(firstId: 0, lastId: last, offset: handles[i].offset, size: 0, count: 0, isSparse: false, entryBytes: 0)
            if let span, span.firstId <= last, handles[i].size <= UInt64(Int32.max) {
                let m = UInt64(span.count)
                let spread = last - span.firstId
                let agrees = span.isSparse ? m - 1 <= spread : m - 1 == spread
                // The entries (and a sparse block's ids), the head and the footer inside the block.
                let perEntry = UInt64(span.entryBytes + (span.isSparse ? 8 : 0))
                let fits = m <= handles[i].size / perEntry
                    && m * perEntry + UInt64(headCount + IdBlockLayout.footerBytes) <= handles[i].size
                if agrees && fits {
                    e.firstId = span.firstId
                    e.size = UInt32(handles[i].size)
                    e.count = span.count
                    e.isSparse = span.isSparse
                    e.entryBytes = UInt8(span.entryBytes)
                }
            }
            entries.initializeElement(at: i, to: e)
        }
        runEnds = .allocate(capacity: runs.count)
        for (i, run) in runs.enumerated() { runEnds.initializeElement(at: i, to: run.range.upperBound) }
        if headCount <= 8 {
            let words = UnsafeMutableBufferPointer<UInt64>.allocate(capacity: runs.count)
            for (i, run) in runs.enumerated() {
                let word = run.head.reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
                words.initializeElement(at: i, to: headCount == 0 ? 0 : word << UInt64(8 * (8 - headCount)))
            }
            headWords = words
            heads = []
        } else {
            headWords = nil
            heads = runs.map(\.head)
        }
    }

    deinit {
        entries.deallocate()
        runEnds.deallocate()
        headWords?.deallocate()
    }

    enum Lookup {
        /// No block of the segment holds the key: no filter probe needed.
        case absent
        /// An id block with the key's head whose ids span the key's, and its position (its
        /// index entry's).
        case block(Entry, index: Int)
        /// Not decided here (a key of another shape, a restart-layout block).
        case undecided
    }

    /// Where the segment holds `userKey` in an id block: the lower bound of the key among the
    /// blocks' last keys, by head (a binary search of the few runs) then by id (interpolation
    /// within the run). The block there holds every key of the segment between the previous
    /// block's last key and its own, so when it is an id block, its head and id range say
    /// whether the key is in it, and where.
    @inline(__always)
    func lookup(_ userKey: UnsafeRawBufferPointer) -> Lookup {
        guard userKey.count == headCount + 8 else { return .undecided }
        let runCount = runEnds.count
        // The first run whose head is >= the key's, and whether it is the key's.
        var lo = 0
        let sameHead: Bool
        if let words = headWords {
            // The key's head made as the runs' words are: big-endian, zero-padded.
            let key = headCount == 0 ? 0 : UInt64(bigEndian: userKey.loadUnaligned(as: UInt64.self))
                & (headCount == 8 ? .max : ~(UInt64.max >> UInt64(8 * headCount)))
            var hi = runCount
            while lo < hi {
                let mid = (lo + hi) >> 1
                if words[mid] < key { lo = mid + 1 } else { hi = mid }
            }
            guard lo < runCount else { return .absent }
            sameHead = words[lo] == key
        } else {
            let head = UnsafeRawBufferPointer(rebasing: userKey[0..<headCount])
            var hi = runCount
            while lo < hi {
                let mid = (lo + hi) >> 1
                if heads[mid].withUnsafeBytes({ InternalKey.compareUserKeys($0, head) }) < 0 { lo = mid + 1 } else { hi = mid }
            }
            guard lo < runCount else { return .absent }
            sameHead = heads[lo].withUnsafeBytes { $0.bytesEqual(head) }
        }
        let id = UInt64(bigEndian: userKey.loadUnaligned(fromByteOffset: headCount, as: UInt64.self))
        let runStart = lo == 0 ? 0 : runEnds[lo - 1], runEnd = runEnds[lo]
        var position = runStart
        if sameHead {
            position = runStart + Self.firstLastIdNotBelow(id, in: UnsafeBufferPointer(rebasing: entries[runStart..<runEnd]))
        }
        guard position < entries.count else { return .absent }
        let block = fixedFields(position)
        guard block.count > 0 else { return .undecided }
        // An id block holds one head: its last key's. The key's head or id outside it: the key
        // sorts between the previous block's last key and this block's first.
        guard sameHead, position < runEnd, block.firstId <= id else { return .absent }
        return .block(block, index: position)
    }

    /// The first position whose last id is >= `id` (`e.count` when none is).
    ///
    /// Reads each probed entry's `lastId` alone, through its address: `e[i].lastId` copies the
    /// whole entry first (it does in debug builds), and with it the `reads` byte that other
    /// readers change atomically, a data race ThreadSanitizer reported in
    /// `concurrentReadsKeepEachOpenedBlockOnce`.
    @inline(__always)
    private static func firstLastIdNotBelow(_ id: UInt64, in e: UnsafeBufferPointer<Entry>) -> Int {
        InterpolationSearch.firstNotBelow(id, count: e.count) { (e.baseAddress! + $0).pointee.lastId }
    }
}
