import Synchronization

/// One of a segment's metadata blocks (its bloom filter, its index), read by the first read that
/// needs it instead of when the segment opens. An open finds every segment of the store, and
/// reading, checksumming and copying all their filters and indexes was most of what opening a
/// segment cost (about 50 KiB of filter and 12 KiB of index each in the object-graph
/// benchmark's store), for segments whose first reads mostly never come. Without a lock, as
/// ``IndexSummaryCell``: two readers may read the block at the same time; one publishes its
/// copy, the other frees its own.
///
/// Stored inline in its ``SegmentReader`` (a noncopyable value, not an object of its own), with
/// the block's bytes beside the pointer: a filter probe then loads no more cache lines than when
/// the reader held the filter itself.
///
/// A block that cannot be read (an I/O error, a checksum mismatch) is not kept: the read
/// throws, and the next one reads again, as a data block's read does.
struct BlockCell: ~Copyable {
    /// A retained ``Block``, or nil before the first read.
    private let published = Atomic<UnsafeMutableRawPointer?>(nil)
    /// The published block's contents (0: not yet), stored before `published` is set.
    private let contentsBase = Atomic<UInt>(0)
    private let contentsCount = Atomic<Int>(0)

    init() {}

    deinit {
        if let p = published.load(ordering: .acquiring) { Unmanaged<Block>.fromOpaque(p).release() }
    }

    /// The block, read with `read` by the first call, unretained: it lives as long as the cell
    /// (the segment's reader holds it), so reads count no references to it.
    @inline(__always)
    func block(_ read: () throws -> Block) rethrows -> Unmanaged<Block> {
        Unmanaged<Block>.fromOpaque(try published.load(ordering: .acquiring) ?? publish(read()))
    }

    /// The block's contents, read with `read` by the first call; valid as long as the cell.
    @inline(__always)
    func contents(_ read: () throws -> Block) rethrows -> UnsafeRawBufferPointer {
        let base = contentsBase.load(ordering: .acquiring)
        if base != 0 {
            return UnsafeRawBufferPointer(start: UnsafeRawPointer(bitPattern: base), count: contentsCount.load(ordering: .relaxed))
        }
        return try block(read)._withUnsafeGuaranteedRef { $0.contents }
    }

    /// Whether a read has loaded the block (what tests see).
    var isLoaded: Bool { published.load(ordering: .acquiring) != nil }

    @inline(never)
    private func publish(_ block: Block) -> UnsafeMutableRawPointer {
        let mine = Unmanaged.passRetained(block).toOpaque()
        let (exchanged, current) = published.compareExchange(expected: nil, desired: mine, ordering: .acquiringAndReleasing)
        if exchanged {
            // The count first: a reader that sees the base sees it too.
            contentsCount.store(block.contents.count, ordering: .relaxed)
            contentsBase.store(UInt(bitPattern: block.contents.baseAddress), ordering: .releasing)
            return mine
        }
        Unmanaged<Block>.fromOpaque(mine).release()
        return current!
    }
}
