import CStrataSupport
import Synchronization

/// The bytes of id blocks an engine's encrypted segments keep opened (``IdBlockReads``), and
/// their limit: a quarter of the block cache's capacity, besides it.
final class OpenedBlockBudget: Sendable {
    let limit: Int
    private let used = Atomic<Int>(0)

    init(limit: Int) { self.limit = max(0, limit) }

    var usedBytes: Int { used.load(ordering: .relaxed) }

    /// Takes `bytes` when they fit under the limit.
    func take(_ bytes: Int) -> Bool {
        var current = used.load(ordering: .relaxed)
        while current <= limit - bytes {
            let (exchanged, original) = used.compareExchange(expected: current, desired: current + bytes, ordering: .relaxed)
            if exchanged { return true }
            current = original
        }
        return false
    }

    func give(_ bytes: Int) { used.subtract(bytes, ordering: .relaxed) }
}

/// How an encrypted segment's point reads reach each of its id blocks of sealed values (segment
/// format 6, SPEC.md §14.3): one value at a time, copied out of the file and opened with its own
/// tag, until the block has been read ``threshold`` times; then it is read whole, checked by its
/// block tag, decrypted value by value in counter mode
/// (``SealedIdValues/openAll(_:contents:context:payloadOffset:checkEach:)``) and kept, and later
/// reads copy their entry and value out of the opened contents exactly as a plaintext segment's
/// reads copy them out of its mapping (``SegmentReader/readIdEntry(at:lookupKey:into:)``), with
/// no cipher work.
///
/// Why: a single open of a small value costs ~150–180 ns of AES-GCM (its counter block, its
/// hash of the key and lengths, its tag), paid on every read of it, so a workload that reads the
/// same objects again (the graph benchmark's many-to-many reads each student about five times)
/// pays it again and again, while reading every block whole (0372041's layout) made cold reads
/// pay for all of a block's values.
///
/// Why not the block cache (tried first, b7ca04e): a cache hit takes a shard's lock, a full
/// barrier, then reads the slot, the block's object and its entry one after the other, four
/// memory misses no batched read can overlap; the many-to-many phase read at scale 1 took 958 ms
/// that way against 404 ms opening each value. Here the opened contents are found by the
/// block's position in the segment's id block table, without a lock, and a batched read
/// prefetches their entries and values as it does a mapping's.
///
/// Why a budget and no eviction: contents read without a lock cannot be freed while a read may
/// hold them, and a read holds them as long as its view keeps the segment; so they stay until
/// their segment goes (a compaction), and the engine's opened blocks take at most
/// ``OpenedBlockBudget/limit`` bytes. Since nothing gives them back before that, only blocks
/// read often earn them: 32 reads, about four times what opening a 2 KiB block costs in single
/// opens. A block read fewer times, or when the budget is spent, keeps its single reads.
final class IdBlockReads: @unchecked Sendable {
    // @unchecked Sendable: every element of its arrays is read and written atomically; it owns
    // its memory and the blocks it holds.

    /// Single reads of a block after which it is opened whole.
    static let threshold: UInt8 = 32
    /// A block that failed its block tag read whole, or whose layout does not agree with its
    /// index entry: its reads stay single ones, each decided by its value's own tag, as before
    /// it was counted.
    static let refused: UInt8 = 255

    private let count: Int
    /// Per block: single reads so far (up to `threshold`), or `refused`.
    private let reads: UnsafeMutablePointer<UInt8>
    /// Per block: the opened contents' first byte, nil until opened; set once, by the thread
    /// whose compare-and-swap wins.
    private let contents: UnsafeMutablePointer<UnsafeMutableRawPointer?>
    /// Per block: the retained ``Block`` that owns the opened contents.
    private let owners: UnsafeMutablePointer<UnsafeMutableRawPointer?>
    private let budget: OpenedBlockBudget
    /// Bytes taken from `budget`, given back when the segment goes.
    private let charged = Atomic<Int>(0)

    init(count: Int, budget: OpenedBlockBudget) {
        self.count = max(count, 1)
        self.budget = budget
        reads = .allocate(capacity: self.count)
        reads.initialize(repeating: 0, count: self.count)
        contents = .allocate(capacity: self.count)
        contents.initialize(repeating: nil, count: self.count)
        owners = .allocate(capacity: self.count)
        owners.initialize(repeating: nil, count: self.count)
    }

    deinit {
        for i in 0..<count {
            if let owner = strata_load_acquire_ptr(owners + i) { Unmanaged<Block>.fromOpaque(owner).release() }
        }
        budget.give(charged.load(ordering: .relaxed))
        reads.deallocate()
        contents.deallocate()
        owners.deallocate()
    }

    /// Block `i`'s opened contents, or nil.
    @inline(__always) func opened(_ i: Int) -> UnsafeRawPointer? {
        strata_load_acquire_ptr(contents + i).map { UnsafeRawPointer($0) }
    }

    /// Counts a single read of block `i`: true when it is the read that should open the block.
    @inline(__always) func countRead(_ i: Int) -> Bool {
        let n = strata_load_relaxed_u8(reads + i)
        if n == Self.refused { return false }
        if n + 1 >= Self.threshold { return true }
        strata_store_relaxed_u8(reads + i, n + 1)
        return false
    }

    func refuse(_ i: Int) { strata_store_relaxed_u8(reads + i, Self.refused) }

    /// Keeps `block`, read whole, as block `i`'s opened contents, if the budget allows and no
    /// other read kept one first; returns the contents kept (this one's or the other's), or nil.
    func keep(_ block: Block, at i: Int) -> UnsafeRawPointer? {
        let bytes = block.charge
        guard budget.take(bytes) else { return nil }
        let base = UnsafeMutableRawPointer(mutating: block.contents.baseAddress!)
        guard strata_cas_ptr(contents + i, nil, base) != 0 else {
            budget.give(bytes)
            return opened(i)
        }
        charged.add(bytes, ordering: .relaxed)
        strata_store_release_ptr(owners + i, Unmanaged.passRetained(block).toOpaque())
        return UnsafeRawPointer(base)
    }
}

extension SegmentReader {
    /// Block `index` of the id block table (`entry`), read whole and opened, kept in `reads` for
    /// the reads after this one; nil when it cannot be (the budget is spent, or the block read
    /// whole is damaged: its reads then stay single ones, each deciding by its own tag).
    @inline(never)
    func openIdBlock(_ entry: IdBlockTable.Entry, index: Int, reads: IdBlockReads) throws -> UnsafeRawPointer? {
        let handle = BlockHandle(offset: entry.offset, size: UInt64(entry.size))
        let block: Block
        do {
            block = try Self.readBlock(file: file, path: path, handle: handle, sealer: sealer, idFormat: idFormat, sealedValues: true)
        } catch let error as StorageError {
            guard case .corruption = error else { throw error }
            reads.refuse(index)
            return nil
        }
        stats.bytesRead.add(handle.size + UInt64(trailerBytes), ordering: .relaxed)
        // Reads find entries where the index entry's span puts them: the block must agree.
        guard let layout = block.idLayout, layout.contents.count == Int(entry.size), layout.count == Int(entry.count),
              layout.firstId == entry.firstId, layout.isSparse == entry.isSparse, layout.entryStride == Int(entry.entryBytes) else {
            reads.refuse(index)
            return nil
        }
        return reads.keep(block, at: index)
    }
}
