/// The scratch memory of batched reads (``Engine/visitValues(forKeys:in:snapshot:_:)``): the
/// group's value buffers and pending reads, about 10 KiB, kept between reads instead of asked
/// of malloc on every one. Why: a batched read comes between the decoding of many objects,
/// whose freed memory fills malloc's fast bins, and a request of this size then makes glibc
/// consolidate them all first: 6,000 instructions per read, 3.7% of the graph benchmark's
/// backlink phase (callgrind). The pool keeps at most ``capacity`` regions, one per read that
/// runs at the same time as others.
final class BatchReadScratch: Sendable {
    static let capacity = 8

    /// Bytes of each region (each region starts on a 16-byte boundary).
    let bytes: Int
    /// The regions belong to no one while pooled. A pthread lock (``LockedValue``), so that
    /// ThreadSanitizer sees the hand-over between two readers' threads.
    private let free = LockedValue<[UnsafeMutableRawPointer]>([])

    init(bytes: Int) {
        self.bytes = bytes
    }

    deinit {
        free.withLock { regions in
            for r in regions { r.deallocate() }
            regions.removeAll()
        }
    }

    /// A region of ``bytes``, recycled or new; its contents are whatever the last read left.
    func take() -> UnsafeMutableRawPointer {
        free.withLock { $0.popLast() } ?? UnsafeMutableRawPointer.allocate(byteCount: bytes, alignment: 16)
    }

    /// Gives back a region ``take()`` returned: kept when the pool has room, deallocated otherwise.
    func recycle(_ region: UnsafeMutableRawPointer) {
        let kept = free.withLock { regions in
            guard regions.count < Self.capacity else { return false }
            regions.append(region)
            return true
        }
        if !kept { region.deallocate() }
    }
}
