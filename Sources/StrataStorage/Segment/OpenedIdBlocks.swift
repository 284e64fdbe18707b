import CStrataSupport

/// How an encrypted segment's point reads reach each of its id blocks of sealed values (segment
/// format 6, SPEC.md §14.3): one value at a time, copied out of the file and opened with its own
/// tag, until the block has been read about as many times as opening it whole costs in single
/// opens; then it is read whole, checked by its block tag, decrypted value by value in counter
/// mode (``SealedIdValues/openAll(_:contents:context:payloadOffset:checkEach:)``) and kept in the
/// block cache, where later reads find plaintext and do no cipher work.
///
/// Why not always one or the other: a single open of a small value costs ~150–180 ns of
/// AES-GCM (its counter block, its hash of the key and lengths, its tag), paid on every read of
/// it, so a workload that reads the same objects again (the graph benchmark's many-to-many
/// reads each student about five times) pays it again and again; reading every block whole
/// (0372041's layout) made cold reads, which touch a block once, pay for all its values. Counting
/// a block's reads up to the price of opening it is the rent-or-buy rule: at worst about twice
/// the cost of the better choice made in hindsight, and the better choice when a block is read
/// either once or often.
///
/// One byte per block: a count of single reads, or one of two marks. Accessed without a lock by
/// every reading thread (relaxed loads and stores): a lost count only delays an open, a lost
/// mark repeats one; both answers read the same bytes.
final class IdBlockReads: @unchecked Sendable {
    // @unchecked Sendable: its bytes are only accessed atomically; it owns its memory.

    /// The block was opened whole into the block cache (it may have been evicted since).
    static let opened: UInt8 = 255
    /// The block failed its block tag when read whole: its reads stay single ones, each of which
    /// opens (or refuses) its value by its own tag, as before it was counted.
    static let refused: UInt8 = 254

    private let states: UnsafeMutablePointer<UInt8>
    private let count: Int

    init(count: Int) {
        self.count = max(count, 1)
        states = .allocate(capacity: self.count)
        states.initialize(repeating: 0, count: self.count)
    }

    deinit { states.deallocate() }

    @inline(__always) func state(_ i: Int) -> UInt8 { strata_load_relaxed_u8(states + i) }
    @inline(__always) func set(_ i: Int, _ state: UInt8) { strata_store_relaxed_u8(states + i, state) }

    /// Single reads of a block after which it is opened whole: about what opening it costs, in
    /// single opens. Opening a block authenticates its bytes (~0.15 ns a byte) and decrypts each
    /// value (~35 ns, a counter block and a few AES blocks); a single open costs ~180 ns. For a
    /// 2 KiB block of 30 small objects: 2 + 6 = 8 reads. Never fewer than 2: a block read once
    /// is never opened whole.
    @inline(__always) static func threshold(_ block: IdBlockTable.Entry) -> UInt8 {
        UInt8(min(64, max(2, Int(block.size) / 1024 + Int(block.count) / 5)))
    }
}

/// A point read's answer from an id block opened whole (``SegmentReader/readIdEntry(in:lookupKey:)``).
enum OpenedIdEntry {
    /// The value, in the block's contents (valid while the block is held).
    case found(UnsafeRawBufferPointer)
    case deleted
    /// Not decided here: the block path decides (a version newer than the read, an id the
    /// block does not hold).
    case undecided
}

extension SegmentReader {
    /// Counts a point read of an encrypted segment's id block `block` (at `index` in the id
    /// block table whose counts are `reads`) and returns the block opened whole when it is in
    /// the cache, or when this read is the one that opens it; nil when the read stays a single
    /// one (``IdBlockReads``).
    @inline(__always)
    func openedIdBlock(_ block: IdBlockTable.Entry, index: Int, reads: IdBlockReads) throws -> Block? {
        let state = reads.state(index)
        if state == IdBlockReads.opened {
            if let b = cache.get(BlockCache.Key(segmentId: fileNumber, offset: block.offset)) {
                stats.blockCacheHits.add(1, ordering: .relaxed)
                return b
            }
            // Evicted: counted again before it is opened again, so that a working set larger
            // than the cache does not open a block on every read.
            reads.set(index, 1)
            return nil
        }
        if state == IdBlockReads.refused { return nil }
        guard state + 1 >= IdBlockReads.threshold(block) else {
            reads.set(index, state + 1)
            return nil
        }
        return try openIdBlock(block, index: index, reads: reads)
    }

    /// Reads `block` whole, opens it and puts it in the cache.
    @inline(never)
    private func openIdBlock(_ block: IdBlockTable.Entry, index: Int, reads: IdBlockReads) throws -> Block? {
        let handle = BlockHandle(offset: block.offset, size: UInt64(block.size))
        stats.blockCacheMisses.add(1, ordering: .relaxed)
        let opened: Block
        do {
            opened = try Self.readBlock(file: file, path: path, handle: handle, sealer: sealer, idFormat: idFormat, sealedValues: true)
        } catch let error as StorageError {
            // A block that fails whole may still hold values that open by their own tags: its
            // reads stay single ones and each decides for itself, as before this read.
            guard case .corruption = error else { throw error }
            reads.set(index, IdBlockReads.refused)
            return nil
        }
        stats.bytesRead.add(handle.size + UInt64(trailerBytes), ordering: .relaxed)
        cache.insert(BlockCache.Key(segmentId: fileNumber, offset: block.offset), opened)
        reads.set(index, IdBlockReads.opened)
        return opened
    }

    /// A point read of `lookupKey` in an id block opened whole: the same answer a single read of
    /// its entry gives (``readIdEntry(lookupKey:into:)``), without a copy or a cipher.
    @inline(__always)
    func readIdEntry(in block: Block, lookupKey: UnsafeRawBufferPointer) -> OpenedIdEntry {
        guard let layout = block.idLayout, let id = layout.idOf(userKey: InternalKey.userKey(lookupKey)) else { return .undecided }
        let i = layout.lowerBound(id: id)
        guard i < layout.count, layout.id(i) == id else { return .undecided }
        let trailer = layout.trailer(i)
        // Only a version newer than the read: an older one may follow in the next block.
        guard trailer <= InternalKey.trailer(lookupKey) else { return .undecided }
        if trailer & 0xFF == UInt64(EntryKind.deletion.rawValue) { return .deleted }
        let v = layout.value(i)
        return .found(UnsafeRawBufferPointer(rebasing: block.contents[v.offset..<(v.offset + v.count)]))
    }
}
