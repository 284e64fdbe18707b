/// The decoded (uncompressed, checksum-verified) contents of one block, owned in its own memory so
/// the block cache can hand it to many readers at once. Immutable after init.
package final class Block: @unchecked Sendable {
    // @unchecked Sendable: immutable after init; it owns its memory and frees it in deinit.
    // The fields a lookup reads, packed to share the object's first cache line with its header,
    // which the block cache's retain has just touched: a point read of an id block then reads
    // that line, the entry's and the value's, and nothing else of the block (SPEC.md §6.1.1).
    // (Swift lays out a class's stored properties in declaration order.)
    /// The contents' first byte; the block owns the allocation that starts there.
    private let base: UnsafeRawPointer
    private let contentsCount: Int32
    /// Where the restart array starts; in an id block, where its entries start.
    private let restartsAt: Int32
    /// Restart points (0 in an id block).
    private let restarts: Int32
    /// Entries of an id block; 0 in a restart-layout block.
    private let idCount: Int32
    private let firstId: UInt64
    /// An id block's head, its first (up to) 8 bytes as a little-endian word.
    private let headWord: UInt64
    private let headCount: UInt16
    private let idSparse: Bool
    /// An id block's entry shape (format 4, or format 5 with or without trailers).
    private let idShape: IdBlockLayout.EntryShape
    /// Whether an id block's values were sealed one by one (each followed by its tag's 16 bytes,
    /// opened in place before the block was made).
    private let idSealed: Bool
    /// Bytes of the allocation, for the cache's charge.
    private let allocated: Int32

    /// Entries and restart array (or an id block's regions).
    var contents: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: base, count: Int(contentsCount)) }
    /// Where the restart array starts; in an id block, where its entries start (the end of its
    /// values and id array).
    var restartsOffset: Int { Int(restartsAt) }
    /// 0 in an id block.
    package var restartCount: Int { Int(restarts) }

    /// The id-addressed layout (SPEC.md §6.1.1), when the block is in it: a view built from the
    /// fields above, checked when the block was decoded.
    package var idLayout: IdBlockLayout? {
        guard idCount > 0 else { return nil }
        return IdBlockLayout(contents: contents, count: Int(idCount), firstId: firstId, isSparse: idSparse,
                             entriesOffset: Int(restartsAt), headCount: Int(headCount), headWord: headWord, shape: idShape,
                             valueTagBytes: idSealed ? AEADContext.tagBytes : 0)
    }

    /// Takes ownership of `storage`, whose first `contentsCount` bytes are the block.
    /// Throws corruption when the restart array does not fit; `storage` is freed then.
    /// - Parameter idFormat: which id layout the block may be in (data blocks of segment format
    ///   4 and later, ``IdBlockFormat``).
    /// - Parameter sealedValues: the block must be an id block whose values were sealed one by
    ///   one (an encrypted segment of format 6, SPEC.md §14.3), already opened in place.
    package init(taking storage: UnsafeMutableRawBufferPointer, contentsCount: Int, file: String, offset: UInt64,
         parseRestarts: Bool = true, idFormat: IdBlockFormat = .none, sealedValues: Bool = false) throws {
        let contents = UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(storage)[0..<contentsCount])
        // Everything is checked before any property is set: a class whose init throws after
        // full initialization runs its deinit, which would free `storage` a second time (found
        // by the block fuzzer).
        func fail(_ reason: String) -> StorageError {
            storage.deallocate()
            return StorageError.corruption(file: file, offset: offset, reason: reason)
        }
        // Block handles are below 2^31 and decompressed sizes below 2^28 (SegmentReader).
        guard storage.count <= Int(Int32.max), contentsCount <= storage.count else { throw fail("block too large") }
        var restartsAt = 0, restarts = 0, idCount = 0, firstId: UInt64 = 0, headWord: UInt64 = 0, headCount = 0
        var sparse = false, shape = IdBlockLayout.EntryShape.plain
        // A raw payload (filter, properties) has no entries to iterate: nothing to parse.
        if parseRestarts {
            guard contentsCount >= 4 else { throw fail("block too short") }
            if sealedValues && !(idFormat == .checked && IdBlockLayout.hasMarker(contents)) {
                throw fail("block of sealed values not in the id layout")
            }
            if idFormat != .none && IdBlockLayout.hasMarker(contents) {
                switch IdBlockLayout.decode(contents, checked: idFormat == .checked, sealedValues: sealedValues) {
                case let .success(layout):
                    restartsAt = layout.entriesOffset
                    idCount = layout.count
                    firstId = layout.firstId
                    headWord = layout.headWord
                    headCount = layout.headCount
                    sparse = layout.isSparse
                    shape = layout.shape
                case let .failure(damage):
                    throw fail(damage.reason)
                }
            } else {
                let n = Int(loadFixed32(contents, contentsCount - 4))
                guard n >= 1, n <= (contentsCount - 4) / 4 else { throw fail("bad restart count \(n)") }
                let at = contentsCount - 4 - n * 4
                for i in 0..<n {
                    let r = Int(loadFixed32(contents, at + i * 4))
                    if r >= at && !(r == 0 && at == 0) { throw fail("restart point out of range") }
                }
                restartsAt = at
                restarts = n
            }
        }
        base = UnsafeRawPointer(storage.baseAddress!)
        self.contentsCount = Int32(contentsCount)
        self.restartsAt = Int32(restartsAt)
        self.restarts = Int32(restarts)
        self.idCount = Int32(idCount)
        self.firstId = firstId
        self.headWord = headWord
        self.headCount = UInt16(headCount)
        idSparse = sparse
        idShape = shape
        idSealed = sealedValues
        allocated = Int32(storage.count)
    }

    deinit { UnsafeMutableRawPointer(mutating: base).deallocate() }

    /// What a lookup in the block reads first: the restart array, or an id block's entries.
    var lookupStart: UnsafeRawPointer { base + Int(restartsAt) }

    /// Bytes charged to the block cache.
    var charge: Int { Int(allocated) + Self.overheadCharge }
    /// What a block costs besides its contents: its object, its trailer's bytes.
    static let overheadCharge = 128

    @inline(__always) func restartPoint(_ i: Int) -> Int {
        Int(loadFixed32(contents, restartsOffset + i * 4))
    }

    package func makeIterator() -> BlockIterator { BlockIterator(block: self) }
}

/// Iterates a ``Block`` in both directions. Keys are rebuilt into an owned buffer; values point
/// into the block, which the iterator keeps alive. A malformed entry makes the iterator invalid
/// and sets `corrupted`, never traps.
package final class BlockIterator {
    let block: Block
    private let data: UnsafeRawBufferPointer
    private let limit: Int
    // Iterator and arena state belongs to one thread at a time: `@exclusivity(unchecked)` spares
    // the runtime checks on every step.
    @exclusivity(unchecked) private var keyBuffer: UnsafeMutableRawPointer
    @exclusivity(unchecked) private var keyCapacity: Int
    @exclusivity(unchecked) private(set) var keyCount = 0
    /// Offset of the current entry; `limit` when not valid.
    @exclusivity(unchecked) private var current: Int
    @exclusivity(unchecked) private var nextOffset: Int = 0
    @exclusivity(unchecked) private var valueOffset = 0
    @exclusivity(unchecked) private var valueCount = 0
    @exclusivity(unchecked) private var restartIndex = 0
    @exclusivity(unchecked) private(set) var corrupted = false

    /// The block's id layout: then `current` is an entry's position and `limit` the count.
    private let idLayout: IdBlockLayout?

    init(block: Block) {
        self.block = block
        data = block.contents
        idLayout = block.idLayout
        limit = block.idLayout?.count ?? block.restartsOffset
        current = limit
        keyCapacity = max(64, (block.idLayout?.userKeyCount ?? 0) + InternalKey.trailerBytes)
        keyBuffer = UnsafeMutableRawPointer.allocate(byteCount: keyCapacity, alignment: 8)
    }

    /// Id blocks: positions at entry `i`, or makes the iterator invalid when `i` is outside the block.
    private func position(_ layout: IdBlockLayout, _ i: Int) {
        guard i >= 0, i < limit else {
            current = limit
            keyCount = 0
            return
        }
        current = i
        layout.writeKey(i, to: keyBuffer)
        keyCount = layout.userKeyCount + InternalKey.trailerBytes
        (valueOffset, valueCount) = layout.value(i)
    }

    deinit { keyBuffer.deallocate() }

    @inline(__always) package var isValid: Bool { current < limit }

    @inline(__always) package var key: UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: keyBuffer, count: keyCount)
    }

    @inline(__always) package var value: UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: data[valueOffset..<(valueOffset + valueCount)])
    }

    private func markCorrupted() {
        corrupted = true
        current = limit
        keyCount = 0
    }

    @inline(__always) private func readVarint(_ p: inout Int) -> Int? {
        var result = 0
        var shift = 0
        while p < limit && shift <= 28 {
            let b = data[p]
            p += 1
            result |= Int(b & 0x7F) << shift
            if b < 0x80 { return result }
            shift += 7
        }
        return nil
    }

    /// Decodes the entry at `nextOffset` into the current position. Returns false at the end.
    @inline(__always) private func parseNext() -> Bool {
        current = nextOffset
        guard current < limit else {
            current = limit
            return false
        }
        var p = current
        guard let shared = readVarint(&p), let unshared = readVarint(&p), let vlen = readVarint(&p),
              shared <= keyCount, unshared <= limit - p, vlen <= limit - p - unshared,
              shared + unshared >= InternalKey.trailerBytes
        else {
            markCorrupted()
            return false
        }
        let newCount = shared + unshared
        if newCount > keyCapacity {
            let cap = max(newCount, keyCapacity * 2)
            let nb = UnsafeMutableRawPointer.allocate(byteCount: cap, alignment: 8)
            nb.copyMemory(from: keyBuffer, byteCount: shared)
            keyBuffer.deallocate()
            keyBuffer = nb
            keyCapacity = cap
        }
        if unshared > 0 { (keyBuffer + shared).copyMemory(from: data.baseAddress! + p, byteCount: unshared) }
        keyCount = newCount
        valueOffset = p + unshared
        valueCount = vlen
        nextOffset = valueOffset + vlen
        while restartIndex + 1 < block.restartCount && block.restartPoint(restartIndex + 1) <= current {
            restartIndex += 1
        }
        return true
    }

    private func seekToRestart(_ index: Int) {
        keyCount = 0
        restartIndex = index
        nextOffset = block.restartPoint(index)
    }

    package func seekToFirst() {
        if let idLayout { return position(idLayout, 0) }
        seekToRestart(0)
        _ = parseNext()
    }

    package func seekToLast() {
        if let idLayout { return position(idLayout, limit - 1) }
        seekToRestart(block.restartCount - 1)
        while parseNext() && nextOffset < limit {}
    }

    package func next() {
        guard isValid else { return }
        if let idLayout { return position(idLayout, current + 1) }
        _ = parseNext()
    }

    package func prev() {
        guard isValid else { return }
        if let idLayout { return position(idLayout, current - 1) }
        let original = current
        // Back to the restart point before the current entry, then forward to its predecessor.
        while block.restartPoint(restartIndex) >= original {
            if restartIndex == 0 {
                current = limit
                keyCount = 0
                return
            }
            restartIndex -= 1
        }
        seekToRestart(restartIndex)
        while parseNext() && nextOffset < original {}
    }

    /// Positions at the first entry with internal key >= `target`.
    package func seek(_ target: UnsafeRawBufferPointer) {
        if let idLayout { return position(idLayout, idLayout.firstAtOrAfter(target)) }
        var lo = 0, hi = block.restartCount - 1
        // Last restart whose key is < target.
        while lo < hi {
            let mid = (lo + hi + 1) / 2
            var p = block.restartPoint(mid)
            guard let shared = readVarint(&p), let unshared = readVarint(&p), readVarint(&p) != nil,
                  shared == 0, unshared <= limit - p, unshared >= InternalKey.trailerBytes
            else {
                markCorrupted()
                return
            }
            let k = UnsafeRawBufferPointer(rebasing: data[p..<(p + unshared)])
            if InternalKey.compare(k, target) < 0 { lo = mid } else { hi = mid - 1 }
        }
        seekToRestart(lo)
        while parseNext() {
            if InternalKey.compare(key, target) >= 0 { return }
        }
    }
}
