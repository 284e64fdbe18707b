import Synchronization

/// Bump allocator for memtable nodes. Memory is freed all at once when the memtable goes away,
/// and never moves, so skip-list links can be raw pointers that readers follow without locks.
/// Only the single writer allocates.
final class Arena: @unchecked Sendable {
    // @unchecked Sendable: only the one writer allocates; readers reach memory through links
    // published with release stores (CStrataSupport), and the memory never moves or is freed early.
    static let chunkBytes = 1 << 20

    // Iterator and arena state belongs to one thread at a time: `@exclusivity(unchecked)` spares
    // the runtime checks on every step.
    @exclusivity(unchecked) private var chunks: [UnsafeMutableRawPointer] = []
    /// Allocations too large for a chunk: freed with the arena, never pooled.
    @exclusivity(unchecked) private var largeBlocks: [UnsafeMutableRawPointer] = []
    @exclusivity(unchecked) private var cursor: UnsafeMutableRawPointer?
    @exclusivity(unchecked) private var remaining = 0
    /// Bytes handed out (what the memtable size limit counts); read by other threads.
    let usage = Atomic<Int>(0)
    /// Bytes of memory held, including unused chunk tails.
    let reserved = Atomic<Int>(0)

    deinit {
        for c in largeBlocks { c.deallocate() }
        ArenaChunkPool.shared.recycle(chunks)
    }

    /// Returns `bytes` bytes aligned to 8.
    func allocate(_ bytes: Int) -> UnsafeMutableRawPointer {
        let size = (bytes + 7) & ~7
        if size > remaining {
            if size > Self.chunkBytes / 4 {
                // Large entries get a chunk of their own, so the current chunk's tail is kept.
                let p = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 8)
                largeBlocks.append(p)
                usage.store(usage.load(ordering: .relaxed) + size, ordering: .relaxed)
                reserved.add(size, ordering: .relaxed)
                return p
            }
            let p = ArenaChunkPool.shared.take() ?? UnsafeMutableRawPointer.allocate(byteCount: Self.chunkBytes, alignment: 8)
            chunks.append(p)
            cursor = p
            remaining = Self.chunkBytes
            reserved.add(Self.chunkBytes, ordering: .relaxed)
        }
        // The one writer's load and store, not a locked add: other threads only read it, and
        // the locked instruction on every node was a measurable part of a log's replay.
        usage.store(usage.load(ordering: .relaxed) + size, ordering: .relaxed)
        let p = cursor!
        cursor = p + size
        remaining -= size
        return p
    }
}
