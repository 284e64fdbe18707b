import Synchronization

/// A segment's bloom filter block, read by the first lookup that probes it instead of when the
/// segment opens. An open finds every segment of the store, and reading, checksumming and
/// copying all their filters (most of what a segment's open reads: about 50 KiB each in the
/// object-graph benchmark's store, against 12 KiB of index) was a fifth of a reopen's time,
/// for segments whose first reads mostly never come. Without a lock, as ``IndexSummaryCell``:
/// two readers may read it at the same time; one publishes its block, the other frees its own.
///
/// A filter that cannot be read (an I/O error, a checksum mismatch) is not kept: the probe
/// throws, and the next one reads again, as a data block's read does.
final class FilterCell: @unchecked Sendable {
    /// A retained ``Block`` (raw contents: the filter's bytes), or nil before the first probe.
    private let published = Atomic<UnsafeMutableRawPointer?>(nil)

    init() {}

    deinit {
        if let p = published.load(ordering: .acquiring) { Unmanaged<Block>.fromOpaque(p).release() }
    }

    /// The filter's bytes, read with `read` by the first call. They stay valid while the cell
    /// lives (the segment's reader holds it).
    @inline(__always)
    func bytes(_ read: () throws -> Block) rethrows -> UnsafeRawBufferPointer {
        let p = try published.load(ordering: .acquiring) ?? publish(read())
        return Unmanaged<Block>.fromOpaque(p)._withUnsafeGuaranteedRef { $0.contents }
    }

    /// Whether a probe has read the filter (what tests and statistics see).
    var isLoaded: Bool { published.load(ordering: .acquiring) != nil }

    @inline(never)
    private func publish(_ block: Block) -> UnsafeMutableRawPointer {
        let mine = Unmanaged.passRetained(block).toOpaque()
        let (exchanged, current) = published.compareExchange(expected: nil, desired: mine, ordering: .acquiringAndReleasing)
        if exchanged { return mine }
        Unmanaged<Block>.fromOpaque(mine).release()
        return current!
    }
}
