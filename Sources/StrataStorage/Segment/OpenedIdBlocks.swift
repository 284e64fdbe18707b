import CStrataSupport
import Synchronization

/// The bytes of id blocks an engine's encrypted segments keep opened (``IdBlockReads``), and
/// their limit: half the block cache's capacity, which the cache's slots give up as these grow
/// (``BlockCache/insert(_:_:)``).
final class OpenedBlockBudget: Sendable {
    let limit: Int
    private let used = Atomic<Int>(0)
    private let blocks = Atomic<Int>(0)

    init(limit: Int) { self.limit = max(0, limit) }

    var usedBytes: Int { used.load(ordering: .relaxed) }
    /// Blocks kept opened (``EngineStatistics/openedIdBlocks``).
    var blockCount: Int { blocks.load(ordering: .relaxed) }

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

    /// Counts blocks kept (`delta` > 0) or freed (`delta` < 0).
    func count(_ delta: Int) { blocks.add(delta, ordering: .relaxed) }

    /// Whether `bytes` more would fit now (a hint: ``take(_:)`` decides).
    func hasRoom(for bytes: Int) -> Bool { used.load(ordering: .relaxed) <= limit - bytes }
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
/// ``OpenedBlockBudget/limit`` bytes, which the block cache gives up. Since nothing gives them
/// back before that, only blocks read often earn them: 32 reads, about four times what opening a
/// 2 KiB block costs in single opens. A block read fewer times, or when the budget is spent,
/// keeps its single reads. Measured (graph benchmark at scale 1, the many-to-many phase run 8
/// times, median of the last 7): 582 ms encrypted against 503 ms plaintext with this, against
/// 404 / 314 ms opening each value before it.
///
/// Why a block's count and opened contents live in its id block table entry: kept in arrays of
/// their own, they cost every read of an encrypted object a memory miss or two of its own (the
/// table of a segment of a million objects has 50,000 entries), and the backlink phase run 6
/// times read at 0.68–0.75× of plaintext that way, against 0.86–0.88× with nothing opened; beside
/// the fields the lookup has just read, at 0.96–1.10×.
final class IdBlockReads: @unchecked Sendable {
    // @unchecked Sendable: its array's elements are read and written atomically; it owns its
    // memory and the blocks it holds. Each block's count and opened contents live in its id
    // block table entry (``IdBlockTable/Entry``), accessed atomically here.

    /// Single reads of a block after which it is opened whole.
    static let threshold: UInt8 = 32
    /// A block that failed its block tag read whole, or whose layout does not agree with its
    /// index entry: its reads stay single ones, each decided by its value's own tag, as before
    /// it was counted.
    static let refused: UInt8 = 255

    private let count: Int
    /// Per block: the retained ``Block`` that owns the opened contents.
    private let owners: UnsafeMutablePointer<UnsafeMutableRawPointer?>
    private let budget: OpenedBlockBudget
    /// Bytes taken from `budget`, given back when the segment goes.
    private let charged = Atomic<Int>(0)

    init(count: Int, budget: OpenedBlockBudget) {
        self.count = max(count, 1)
        self.budget = budget
        owners = .allocate(capacity: self.count)
        owners.initialize(repeating: nil, count: self.count)
    }

    deinit {
        var released: [Block] = []
        for i in 0..<count {
            if let owner = strata_load_acquire_ptr(owners + i) { released.append(Unmanaged<Block>.fromOpaque(owner).takeRetainedValue()) }
        }
        budget.give(charged.load(ordering: .relaxed))
        budget.count(-released.count)
        owners.deallocate()
        // Freed on the release thread, a few hundred at a time (``BackgroundRelease``): a closing
        // engine's segments drop thousands of blocks long out of the CPU caches, and a closing
        // caller is often about to open the store again.
        BackgroundRelease.drop(released, chunk: 256)
    }

    @inline(__always) private static func readsByte(_ entry: UnsafeMutablePointer<IdBlockTable.Entry>) -> UnsafeMutablePointer<UInt8> {
        (UnsafeMutableRawPointer(entry) + IdBlockTable.Entry.readsOffset).assumingMemoryBound(to: UInt8.self)
    }

    @inline(__always) private static func openedSlot(_ entry: UnsafeMutablePointer<IdBlockTable.Entry>)
        -> UnsafeMutablePointer<UnsafeMutableRawPointer?> {
        (UnsafeMutableRawPointer(entry) + IdBlockTable.Entry.openedOffset).assumingMemoryBound(to: UnsafeMutableRawPointer?.self)
    }

    /// The block's opened contents, or nil.
    @inline(__always) static func opened(_ entry: UnsafeMutablePointer<IdBlockTable.Entry>) -> UnsafeRawPointer? {
        strata_load_acquire_ptr(openedSlot(entry)).map { UnsafeRawPointer($0) }
    }

    /// Counts a single read of the block: true when it is the read that should open it.
    @inline(__always) static func countRead(_ entry: UnsafeMutablePointer<IdBlockTable.Entry>) -> Bool {
        let byte = readsByte(entry)
        let n = strata_load_relaxed_u8(byte)
        if n == refused { return false }
        if n + 1 >= threshold { return true }
        strata_store_relaxed_u8(byte, n + 1)
        return false
    }

    static func refuse(_ entry: UnsafeMutablePointer<IdBlockTable.Entry>) { strata_store_relaxed_u8(readsByte(entry), refused) }

    /// Starts the block's count again: the budget had no room for it.
    static func recount(_ entry: UnsafeMutablePointer<IdBlockTable.Entry>) { strata_store_relaxed_u8(readsByte(entry), 0) }

    /// Whether a block of `size` bytes would fit in the budget now.
    func hasRoom(forBlockOf size: Int) -> Bool { budget.hasRoom(for: size + Block.overheadCharge) }

    /// Keeps `block`, read whole, as the opened contents of block `i` (whose table entry is
    /// `entry`), if the budget allows and no other read kept one first; returns the contents
    /// kept (this one's or the other's), or nil.
    func keep(_ block: Block, at i: Int, entry: UnsafeMutablePointer<IdBlockTable.Entry>) -> UnsafeRawPointer? {
        let bytes = block.charge
        guard budget.take(bytes) else {
            Self.recount(entry)
            return nil
        }
        let base = UnsafeMutableRawPointer(mutating: block.contents.baseAddress!)
        guard strata_cas_ptr(Self.openedSlot(entry), nil, base) != 0 else {
            budget.give(bytes)
            return Self.opened(entry)
        }
        charged.add(bytes, ordering: .relaxed)
        budget.count(1)
        strata_store_release_ptr(owners + i, Unmanaged.passRetained(block).toOpaque())
        return UnsafeRawPointer(base)
    }
}

extension SegmentReader {
    /// Block `index` of the id block table (`entry`, at `address`), read whole and opened, kept for
    /// the reads after this one; nil when it cannot be (the budget is spent, or the block read
    /// whole is damaged: its reads then stay single ones, each deciding by its own tag).
    @inline(never)
    func openIdBlock(_ entry: IdBlockTable.Entry, index: Int, at address: UnsafeMutablePointer<IdBlockTable.Entry>,
                     reads: IdBlockReads) throws -> UnsafeRawPointer? {
        // No room: counted again from 0 rather than read whole on every read from now on.
        guard reads.hasRoom(forBlockOf: Int(entry.size)) else {
            IdBlockReads.recount(address)
            return nil
        }
        let handle = BlockHandle(offset: entry.offset, size: UInt64(entry.size))
        let block: Block
        do {
            block = try Self.readBlock(file: file, path: path, handle: handle, sealer: sealer, idFormat: idFormat, sealedValues: true)
        } catch let error as StorageError {
            guard case .corruption = error else { throw error }
            IdBlockReads.refuse(address)
            return nil
        }
        stats.bytesRead.add(handle.size + UInt64(trailerBytes), ordering: .relaxed)
        // Reads find entries where the index entry's span puts them: the block must agree.
        guard let layout = block.idLayout, layout.contents.count == Int(entry.size), layout.count == Int(entry.count),
              layout.firstId == entry.firstId, layout.isSparse == entry.isSparse, layout.entryStride == Int(entry.entryBytes) else {
            IdBlockReads.refuse(address)
            return nil
        }
        return reads.keep(block, at: index, entry: address)
    }
}
