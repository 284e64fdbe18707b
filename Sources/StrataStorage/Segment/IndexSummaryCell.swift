import Synchronization

/// A segment's ``IndexSummary``, built by the first read that needs it instead of when the
/// segment opens. An open finds every segment of the store (91 in the object-graph benchmark's)
/// and building all their summaries was a seventh of a reopen's instructions, for segments the
/// first reads mostly never touch. Without a lock: two readers may build it at the same time;
/// one publishes its summary, the other frees its own and takes the published one.
final class IndexSummaryCell: @unchecked Sendable {
    // @unchecked Sendable: the summary is published by one atomic compare-and-exchange (above).
    /// The summary once built; nil inside when the index does not decode (see
    /// ``IndexSummary/init(index:)``), so a damaged index is not summarised again on every read.
    private final class Built {
        let summary: IndexSummary?
        /// The summary's id block table (format 5), reached without copying the summary.
        let idBlocks: IdBlockTable?
        init(_ summary: IndexSummary?) {
            self.summary = summary
            idBlocks = summary?.idBlocks
        }
    }

    /// A retained `Built`, or nil before the first read.
    private let published = Atomic<UnsafeMutableRawPointer?>(nil)

    /// Whether the index values carry id block spans (segment format 5).
    private let idSpans: Bool
    /// An encrypted segment's: the budget its id blocks opened whole take from (``IdBlockReads``).
    private let openedBudget: OpenedBlockBudget?

    init(idSpans: Bool = false, openedBudget: OpenedBlockBudget? = nil) {
        self.idSpans = idSpans
        self.openedBudget = openedBudget
    }

    deinit {
        if let p = published.load(ordering: .acquiring) { Unmanaged<Built>.fromOpaque(p).release() }
    }

    /// Calls `body` with the summary of `index` (the segment's index block, the same on every
    /// call), building it first if no read has yet. Reference counting stays off the read path:
    /// the cell holds the summary as long as the segment lives.
    @inline(__always)
    func withSummary<R>(of index: Block, _ body: (IndexSummary?) throws -> R) rethrows -> R {
        let p = published.load(ordering: .acquiring) ?? build(index)
        return try Unmanaged<Built>.fromOpaque(p)._withUnsafeGuaranteedRef { try body($0.summary) }
    }

    /// The id block table of `index`'s summary (format 5), unretained: the cell holds it as long
    /// as the segment lives. Builds the summary first if no read has yet.
    @inline(__always)
    func idBlocks(of index: Block) -> Unmanaged<IdBlockTable>? {
        let p = published.load(ordering: .acquiring) ?? build(index)
        return Unmanaged<Built>.fromOpaque(p)._withUnsafeGuaranteedRef { built in
            built.idBlocks.map { Unmanaged.passUnretained($0) }
        }
    }

    @inline(never)
    private func build(_ index: Block) -> UnsafeMutableRawPointer {
        let mine = Unmanaged.passRetained(Built(IndexSummary(index: index, idSpans: idSpans, openedBudget: openedBudget))).toOpaque()
        let (exchanged, current) = published.compareExchange(expected: nil, desired: mine, ordering: .acquiringAndReleasing)
        if exchanged { return mine }
        Unmanaged<Built>.fromOpaque(mine).release()
        return current!
    }
}
