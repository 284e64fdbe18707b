/// What a point read of one id block entry found (``SegmentReader/readIdEntry(lookupKey:into:)``).
enum IdEntryRead {
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
    func readIdEntry(lookupKey: UnsafeRawBufferPointer, into buffer: UnsafeMutableRawBufferPointer) throws -> IdEntryRead {
        guard idFormat == .checked else { return .undecided }
        let userKey = InternalKey.userKey(lookupKey)
        let found = try indexBlock()._withUnsafeGuaranteedRef { index in
            indexSummary.withSummary(of: index) { summary -> (IndexSummary.IdEntryLookup, BlockHandle)? in
                guard let summary else { return nil }
                let lookup = summary.idEntry(forUserKey: userKey)
                if case let .block(position, _, _, _) = lookup { return (lookup, summary.handle(position)) }
                return (lookup, BlockHandle(offset: 0, size: 0))
            }
        }
        guard let (lookup, handle) = found else { return .undecided }
        switch lookup {
        case .absent: return .absent
        case .undecided: return .undecided
        case let .block(_, firstId, count, isSparse):
            let headCount = userKey.count - 8
            let id = UInt64(bigEndian: userKey.loadUnaligned(fromByteOffset: headCount, as: UInt64.self))
            // The summary checked that these regions fit in the block.
            let m = Int(count)
            let entriesOffset = Int(handle.size) - IdBlockLayout.footerBytes - headCount - m * IdBlockLayout.checkedEntryBytes
            let valuesEnd = isSparse ? entriesOffset - m * 8 : entriesOffset
            var position: Int
            if isSparse {
                guard let p = try sparsePosition(of: id, handle: handle, idsOffset: valuesEnd, count: m, scratch: buffer) else {
                    return .undecided
                }
                position = p
            } else {
                position = Int(id - firstId)
            }
            return try withUnsafeTemporaryAllocation(byteCount: IdBlockLayout.checkedEntryBytes, alignment: 8) { entry in
                let entryAt = handle.offset + UInt64(entriesOffset + position * IdBlockLayout.checkedEntryBytes)
                try file.readExactly(at: entryAt, into: entry, path: path)
                let raw = UnsafeRawBufferPointer(entry)
                let trailer = loadFixed64(raw, 0)
                let valueOffset = Int(loadFixed32(raw, 8)), valueCount = Int(loadFixed32(raw, 12))
                guard valueOffset <= valuesEnd, valueCount <= valuesEnd - valueOffset else {
                    throw StorageError.corruption(file: path, offset: entryAt, reason: "id block entry's value out of range")
                }
                guard valueCount <= buffer.count else { return .undecided }
                let value = UnsafeMutableRawBufferPointer(rebasing: buffer[0..<valueCount])
                if valueCount > 0 { try file.readExactly(at: handle.offset + UInt64(valueOffset), into: value, path: path) }
                let expected = IdBlockLayout.entryChecksum(userKey: userKey, trailer: trailer, value: UnsafeRawBufferPointer(value))
                guard loadFixed32(raw, 16) == expected else {
                    throw StorageError.corruption(file: path, offset: entryAt, reason: "id block entry checksum mismatch")
                }
                stats.bytesRead.add(UInt64(IdBlockLayout.checkedEntryBytes + valueCount), ordering: .relaxed)
                // Only a version newer than the read: an older one may follow in the next block.
                guard trailer <= InternalKey.trailer(lookupKey) else { return .undecided }
                return trailer & 0xFF == UInt64(EntryKind.deletion.rawValue) ? .deleted : .found(count: valueCount)
            }
        }
    }

    /// A sparse id block's position of `id`, from its id array copied out of the file into
    /// `scratch` (which it may use whole); nil when the array does not hold the id or does not
    /// fit: the block path then decides, from a block whose checksum it verifies, because the
    /// array copied here is not verified (an entry found through it is, by its checksum).
    private func sparsePosition(of id: UInt64, handle: BlockHandle, idsOffset: Int, count: Int,
                                scratch: UnsafeMutableRawBufferPointer) throws -> Int? {
        guard count * 8 <= scratch.count else { return nil }
        let ids = UnsafeMutableRawBufferPointer(rebasing: scratch[0..<(count * 8)])
        try file.readExactly(at: handle.offset + UInt64(idsOffset), into: ids, path: path)
        var lo = 0, hi = count
        while lo < hi {
            let mid = (lo + hi) / 2
            if loadFixed64(UnsafeRawBufferPointer(ids), mid * 8) < id { lo = mid + 1 } else { hi = mid }
        }
        guard lo < count, loadFixed64(UnsafeRawBufferPointer(ids), lo * 8) == id else { return nil }
        return lo
    }
}
