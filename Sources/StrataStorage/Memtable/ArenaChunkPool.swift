/// Chunks of memtables that were flushed, kept for the next memtables of the process. A fresh
/// chunk costs a page fault every 4 KiB on first touch (14% of a batched write's time); a
/// recycled one is already mapped. The pool holds at most ``capacity`` chunks (16 MiB), about
/// what the memtables of a busy store release between two flushes.
final class ArenaChunkPool: Sendable {
    static let shared = ArenaChunkPool()
    static let capacity = 16

    /// The chunks belong to no one while pooled. A pthread lock (``LockedValue``), so that
    /// ThreadSanitizer sees the hand-over between the flush thread and a writer.
    private let free = LockedValue<[UnsafeMutableRawPointer]>([])

    /// A recycled chunk of ``Arena/chunkBytes``, or nil when the pool is empty.
    func take() -> UnsafeMutableRawPointer? {
        free.withLock { $0.popLast() }
    }

    /// Keeps what fits under the capacity and deallocates the rest.
    func recycle(_ chunks: [UnsafeMutableRawPointer]) {
        guard !chunks.isEmpty else { return }
        let room = free.withLock { pool in
            let room = min(chunks.count, max(0, Self.capacity - pool.count))
            pool.append(contentsOf: chunks.prefix(room))
            return room
        }
        for c in chunks.dropFirst(room) { c.deallocate() }
    }
}
