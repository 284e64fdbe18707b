import CStrataSupport
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What a point read of one id block entry found (``SegmentReader/readIdEntry(lookupKey:into:)``).
package enum IdEntryRead {
    /// The value, `count` bytes copied to the start of the caller's buffer.
    case found(count: Int)
    /// A deletion: the key is absent, and older segments must not be asked.
    case deleted
    /// This segment does not hold the key: ask the next one.
    case absent
    /// Not decided without the block: a restart-layout block, a sparse block whose id array has
    /// no such id, a version newer than the read, a value larger than the buffer. The caller
    /// takes the block path (``SegmentReader/get(lookupKey:hash:)``), which decides.
    case undecided
}

/// Where a key's format 5 id block entry lies in its segment file (``SegmentReader/findIdEntry(_:)``).
struct IdEntryLocation {
    /// The block's offset in the file and its size (without the trailer).
    var blockOffset: UInt64
    var blockSize: Int
    /// The entry's offset in the block; values lie below `valuesEnd` (block-relative).
    var entryOffset: Int
    var valuesEnd: Int
    /// Bytes of each entry: 16, or 8 when every trailer is 1 (``IdBlockLayout/EntryShape``).
    var entryBytes: Int
    /// The block's last entry, whose value ends at `valuesEnd` rather than at the next entry's.
    var isLast: Bool
    /// An encrypted segment's block read often: its opened contents, where the entry and its
    /// value (in the clear) are read instead of the file (``IdBlockReads``).
    var opened: UnsafeRawPointer? = nil

    /// The trailer of an entry whose bytes start at `entry`.
    @inline(__always) func trailer(_ entry: UnsafeRawPointer) -> UInt64 {
        entryBytes == 8 ? InternalKey.trailer(sequence: 0, kind: .value) : UInt64(littleEndian: entry.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
    }
}

/// Whether a segment holds a key in a format 5 id block, and where.
enum IdEntryFind {
    case absent
    case undecided
    case entry(IdEntryLocation)
}

extension SegmentReader {
    /// A point read that copies one object, not its block (segment format 5, SPEC.md §6.1.1):
    /// the index entries' spans say which id block holds the key and where its entry lies, and
    /// two guarded copies out of the file bring the entry (20 bytes) and its value into
    /// `buffer`, where the entry's own checksum verifies both. No bloom filter probe (the spans
    /// answer for the keys they cover), no block cache lookup or insert, no decompression: the
    /// OS page cache is the cache.
    ///
    /// - Parameter lookupKey: the internal key (user key, seek trailer) of the read.
    /// - Parameter buffer: where the value goes; a value that does not fit is left to the block
    ///   path (``IdEntryRead/undecided``).
    package func readIdEntry(lookupKey: UnsafeRawBufferPointer, into buffer: UnsafeMutableRawBufferPointer) throws -> IdEntryRead {
        switch try findIdEntry(InternalKey.userKey(lookupKey), scratch: buffer) {
        case .absent: return .absent
        case .undecided: return .undecided
        case let .entry(location): return try readIdEntry(at: location, lookupKey: lookupKey, into: buffer)
        }
    }

    /// The first half of ``readIdEntry(lookupKey:into:)``: where the entry of `userKey` lies,
    /// from the index summary's id block table alone, except in a sparse block, whose id array
    /// is copied (into `scratch`) and searched. In an encrypted segment, a block read often is
    /// opened whole and kept, and read there (``IdBlockReads``).
    @inline(__always)
    func findIdEntry(_ userKey: UnsafeRawBufferPointer, scratch: UnsafeMutableRawBufferPointer) throws -> IdEntryFind {
        guard idFormat == .checked,
              let table = try indexBlock()._withUnsafeGuaranteedRef({ indexSummary.idBlocks(of: $0) }) else { return .undecided }
        let block: IdBlockTable.Entry
        var opened: UnsafeRawPointer?
        switch table._withUnsafeGuaranteedRef({ $0.lookup(userKey) }) {
        case .absent: return .absent
        case .undecided: return .undecided
        case let .block(b, index):
            block = b
            if sealedValues {
                opened = try table._withUnsafeGuaranteedRef { t -> UnsafeRawPointer? in
                    guard let reads = t.reads else { return nil }
                    let address = t.entryAddress(index)
                    if let contents = IdBlockReads.opened(address) { return contents }
                    return IdBlockReads.countRead(address) ? try openIdBlock(b, index: index, at: address, reads: reads) : nil
                }
            }
        }
        // An encrypted segment's block starts with its nonce; the contents follow.
        let blockOffset = block.offset + payloadShift
        let headCount = userKey.count - 8
        let id = UInt64(bigEndian: userKey.loadUnaligned(fromByteOffset: headCount, as: UInt64.self))
        // The table checked that these regions fit in the block.
        let m = Int(block.count), entryBytes = Int(block.entryBytes)
        let entriesOffset = Int(block.size) - IdBlockLayout.footerBytes - headCount - m * entryBytes
        let valuesEnd = block.isSparse ? entriesOffset - m * 8 : entriesOffset
        let position: Int
        if block.isSparse {
            guard let p = try sparsePosition(of: id, blockOffset: blockOffset, idsOffset: valuesEnd, count: m, scratch: scratch) else {
                return .undecided
            }
            position = p
        } else {
            position = Int(id - block.firstId)
        }
        return .entry(IdEntryLocation(blockOffset: blockOffset, blockSize: Int(block.size),
                                      entryOffset: entriesOffset + position * entryBytes, valuesEnd: valuesEnd,
                                      entryBytes: entryBytes, isLast: position == m - 1, opened: opened))
    }

    /// The block's first byte in the mapping, when the file is mapped and the block lies in it;
    /// an opened block's in its contents.
    @inline(__always)
    private func mappedBlock(_ location: IdEntryLocation) -> UnsafePointer<UInt8>? {
        if let opened = location.opened { return opened.assumingMemoryBound(to: UInt8.self) }
        guard let mapped, location.blockOffset <= UInt64(mapped.count),
              UInt64(location.blockSize) <= UInt64(mapped.count) - location.blockOffset else { return nil }
        return mapped.baseAddress!.assumingMemoryBound(to: UInt8.self) + Int(location.blockOffset)
    }

    /// The second half of ``readIdEntry(lookupKey:into:)``: the entry at `location` and its value.
    func readIdEntry(at location: IdEntryLocation, lookupKey: UnsafeRawBufferPointer,
                     into buffer: UnsafeMutableRawBufferPointer) throws -> IdEntryRead {
        let userKey = InternalKey.userKey(lookupKey)
        if let block = mappedBlock(location) {
            // The mapping: both copies and the checksum in one call.
            var trailer: UInt64 = 0
            let r = strata_read_checked_entry(block, UInt64(location.entryOffset), UInt32(location.entryBytes),
                                              location.isLast ? 1 : 0, UInt64(location.valuesEnd),
                                              userKey.baseAddress!.assumingMemoryBound(to: UInt8.self), userKey.count,
                                              buffer.baseAddress!.assumingMemoryBound(to: UInt8.self), buffer.count, &trailer,
                                              valueContext == nil ? 0 : 1)
            return try outcome(r, trailer: trailer, location: location, lookupKey: lookupKey, buffer: buffer)
        }
        let entryAt = location.blockOffset + UInt64(location.entryOffset)
        // The entry and the next one's value offset (the head and footer follow the last entry).
        return try withUnsafeTemporaryAllocation(byteCount: location.entryBytes + 4, alignment: 8) { entry in
            try file.readExactly(at: entryAt, into: entry, path: path)
            let raw = UnsafeRawBufferPointer(entry)
            let trailer = location.trailer(raw.baseAddress!)
            let valueOffset = Int(loadFixed32(raw, 0))
            let valueEnd = location.isLast ? location.valuesEnd : Int(loadFixed32(raw, location.entryBytes))
            guard valueOffset <= valueEnd, valueEnd <= location.valuesEnd else {
                throw StorageError.corruption(file: path, offset: entryAt, reason: "id block entry's value out of range")
            }
            let valueCount = valueEnd - valueOffset
            guard valueCount <= buffer.count else { return .undecided }
            let value = UnsafeMutableRawBufferPointer(rebasing: buffer[0..<valueCount])
            if valueCount > 0 { try file.readExactly(at: location.blockOffset + UInt64(valueOffset), into: value, path: path) }
            // A sealed value's tag, checked when it is opened, stands for the checksum.
            guard valueContext != nil
                    || loadFixed32(raw, 4) == IdBlockLayout.entryChecksum(userKey: userKey, trailer: trailer, value: UnsafeRawBufferPointer(value)) else {
                throw StorageError.corruption(file: path, offset: entryAt, reason: "id block entry checksum mismatch")
            }
            return try outcome(Int64(valueCount), trailer: trailer, location: location, lookupKey: lookupKey, buffer: buffer)
        }
    }

    /// For batched reads, which overlap the memory misses of many keys: starts loading the
    /// entry's cache line (a prefetch never faults, so it needs no guard).
    @inline(__always)
    func prefetchIdEntry(_ location: IdEntryLocation) {
        if let block = mappedBlock(location) { strata_prefetch(block + location.entryOffset) }
    }

    /// For batched reads: copies the entry and the next one's value offset (at most 20 bytes) to `entry` and
    /// starts loading its value's cache line; false when the file is not mapped (the read then
    /// takes ``readIdEntry(at:lookupKey:into:)``).
    @inline(__always)
    func copyIdEntry(_ location: IdEntryLocation, to entry: UnsafeMutableRawPointer) throws -> Bool {
        guard let block = mappedBlock(location) else { return false }
        if strata_guarded_copy(entry, block + location.entryOffset, location.entryBytes + 4) != 0 {
            throw StorageError.io(operation: "read (mapped; the file shrank or the disk failed)", path: path, errno: EIO)
        }
        let valueOffset = Int(entry.loadUnaligned(as: UInt32.self).littleEndian)
        if valueOffset < location.valuesEnd {
            strata_prefetch(block + valueOffset)
            // A value that reaches into the next cache line (most objects of 50 bytes or more,
            // and every sealed one, 16 bytes longer) has that line loaded too; an end read
            // from a damaged entry only misdirects a prefetch, which never faults.
            let next = location.isLast ? location.valuesEnd : Int(entry.loadUnaligned(fromByteOffset: location.entryBytes, as: UInt32.self).littleEndian)
            if next > valueOffset, next <= location.valuesEnd, (valueOffset & ~63) != ((next - 1) & ~63) {
                strata_prefetch(block + (next - 1))
            }
        }
        return true
    }

    /// For batched reads: the value of the entry ``copyIdEntry(_:to:)`` copied, and its checksum.
    @inline(__always)
    func readIdValue(_ location: IdEntryLocation, entry: UnsafeRawPointer, lookupKey: UnsafeRawBufferPointer,
                     into buffer: UnsafeMutableRawBufferPointer) throws -> IdEntryRead {
        guard let block = mappedBlock(location) else { return try readIdEntry(at: location, lookupKey: lookupKey, into: buffer) }
        let userKey = InternalKey.userKey(lookupKey)
        var trailer: UInt64 = 0
        let r = strata_read_checked_value(block, entry.assumingMemoryBound(to: UInt8.self), UInt32(location.entryBytes),
                                          location.isLast ? 1 : 0, UInt64(location.valuesEnd),
                                          userKey.baseAddress!.assumingMemoryBound(to: UInt8.self), userKey.count,
                                          buffer.baseAddress!.assumingMemoryBound(to: UInt8.self), buffer.count, &trailer,
                                          valueContext == nil ? 0 : 1)
        return try outcome(r, trailer: trailer, location: location, lookupKey: lookupKey, buffer: buffer)
    }

    /// What a read of an entry (a value's size, or a `STRATA_ENTRY_` failure) means. In an
    /// encrypted segment the `r` bytes copied to `buffer` are the sealed value, opened here in
    /// place (SPEC.md §14.3): its tag, not the entry's checksum, is what verifies it. Read from
    /// an opened block, they are the value in the clear and its tag's bytes: the block's tag
    /// verified them all when it was opened.
    @inline(__always)
    private func outcome(_ r: Int64, trailer: UInt64, location: IdEntryLocation, lookupKey: UnsafeRawBufferPointer,
                         buffer: UnsafeMutableRawBufferPointer) throws -> IdEntryRead {
        var r = r
        if r >= 0, location.opened != nil {
            // The block's decoding checked every stored value for a tag's length.
            r = r >= Int64(SealedIdValues.tagBytes) ? r - Int64(SealedIdValues.tagBytes) : Int64(STRATA_ENTRY_OUT_OF_RANGE)
        } else if r >= 0, let valueContext {
            let value = UnsafeMutableRawBufferPointer(rebasing: buffer[0..<Int(r)])
            let entryAt = location.blockOffset + UInt64(location.entryOffset)
            let opened = valueContext._withUnsafeGuaranteedRef {
                SealedIdValues.open(value, userKey: InternalKey.userKey(lookupKey), trailer: trailer, entryAt: entryAt, context: $0)
            }
            guard opened else {
                throw StorageError.corruption(file: path, offset: entryAt, reason: "id block entry fails its authentication tag")
            }
            r -= Int64(SealedIdValues.tagBytes)
        }
        guard r >= 0 else {
            let at = location.blockOffset + UInt64(location.entryOffset)
            switch r {
            case Int64(STRATA_ENTRY_TOO_LARGE): return .undecided
            case Int64(STRATA_ENTRY_FAULT):
                throw StorageError.io(operation: "read (mapped; the file shrank or the disk failed)", path: path, errno: EIO)
            case Int64(STRATA_ENTRY_OUT_OF_RANGE):
                throw StorageError.corruption(file: path, offset: at, reason: "id block entry's value out of range")
            default:
                throw StorageError.corruption(file: path, offset: at, reason: "id block entry checksum mismatch")
            }
        }
        stats.bytesRead.add(UInt64(location.entryBytes) + UInt64(r), ordering: .relaxed)
        // Only a version newer than the read: an older one may follow in the next block.
        guard trailer <= InternalKey.trailer(lookupKey) else { return .undecided }
        return trailer & 0xFF == UInt64(EntryKind.deletion.rawValue) ? .deleted : .found(count: Int(r))
    }

    /// A sparse id block's position of `id`, from its id array copied out of the file into
    /// `scratch` (which it may use whole); nil when the array does not hold the id or does not
    /// fit: the block path then decides, from a block whose checksum it verifies, because the
    /// array copied here is not verified (an entry found through it is, by its checksum).
    private func sparsePosition(of id: UInt64, blockOffset: UInt64, idsOffset: Int, count: Int,
                                scratch: UnsafeMutableRawBufferPointer) throws -> Int? {
        guard count * 8 <= scratch.count else { return nil }
        let ids = UnsafeMutableRawBufferPointer(rebasing: scratch[0..<(count * 8)])
        try file.readExactly(at: blockOffset + UInt64(idsOffset), into: ids, path: path)
        var lo = 0, hi = count
        while lo < hi {
            let mid = (lo + hi) / 2
            if loadFixed64(UnsafeRawBufferPointer(ids), mid * 8) < id { lo = mid + 1 } else { hi = mid }
        }
        guard lo < count, loadFixed64(UnsafeRawBufferPointer(ids), lo * 8) == id else { return nil }
        return lo
    }
}
