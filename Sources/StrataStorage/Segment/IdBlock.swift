import CStrataSupport

/// Which id-block layout a segment's data blocks may use (SPEC.md §6.1.1), by segment format.
package enum IdBlockFormat: Sendable {
    /// Formats 1–3: no id blocks; a block ending in the id marker is damage.
    case none
    /// Format 4: 16-byte entries, no checksum of their own (the block's CRC covers them).
    case plain
    /// Format 5 and later: 20-byte entries ending in a checksum of the entry's key and value,
    /// so that one entry can be read and verified without its block (``IdEntryReader``).
    case checked

    init(segmentFormat version: UInt32) {
        self = version >= 5 ? .checked : version >= 4 ? .plain : .none
    }

}

/// The id-addressed layout of a data block (segment formats 4 and 5, SPEC.md §6.1.1): a block
/// whose user keys all share a head and end in an 8-byte big-endian id, one version each, with
/// ids increasing. An entry is found by position instead of by a restart search:
///
/// ```
/// id block = value bytes | ids (u64 × m, sparse only) | entry × m | head (h bytes) | footer
/// entry    = trailer (u64) | value offset (u32) | value size (u32)           16 bytes (format 4)
///          = value offset (u32) | checksum (u32) | trailer (u64)             16 bytes (format 5)
///          = value offset (u32) | checksum (u32)      8 bytes (format 5, every trailer 1)
/// checksum = masked CRC-32C of user key · trailer (u64 LE) · value
/// footer   = first id (u64) | m (u32) | h (u32) | flags (u32) | 0 (u32)          24 bytes
/// flags    = bit 0 sparse | bit 1 checked (set exactly in format 5) | bit 2 every trailer
///            is 1, sequence 0 (format 5 only)
/// ```
///
/// In format 5 a value's size is not stored: values lie in entry order, each up to the next
/// entry's offset (the last up to the end of the value bytes).
///
/// A dense block (ids `first … first + m - 1`, no gap) finds entry `id - first` by arithmetic:
/// with the footer's fields kept in the ``Block`` object, a lookup reads the entry's line and
/// the value. A sparse block (ids with gaps, after removals) searches its id array without
/// branches first. The last word, 0, is what tells the layout apart: a restart-layout block
/// ends in its restart count, never 0.
///
/// Every field is checked once, when the block is decoded (``decode(_:)``), so that the
/// lookups and the iterator index it without further checks.
package struct IdBlockLayout {
    static let footerBytes = 24
    static let sparseFlag: UInt32 = 1
    static let checkedFlag: UInt32 = 2
    static let sequenceZeroFlag: UInt32 = 4

    /// How an entry is laid out (see above).
    enum EntryShape: UInt8 {
        /// Format 4: trailer, value offset, value size.
        case plain
        /// Format 5: value offset, checksum, trailer.
        case checked
        /// Format 5 with every trailer 1 (sequence 0, a value: a bottom level's oldest versions):
        /// value offset, checksum.
        case checkedSequenceZero

        var bytes: Int { self == .checkedSequenceZero ? 8 : 16 }
        var isChecked: Bool { self != .plain }
    }

    /// The block's contents (owned by its ``Block``).
    let contents: UnsafeRawBufferPointer
    let count: Int
    let firstId: UInt64
    let isSparse: Bool
    let entriesOffset: Int
    let headCount: Int
    /// The head's first (up to) 8 bytes as a little-endian word, zero-padded: a key's head is
    /// compared with it, without reading the head at the end of the block (another cache line).
    let headWord: UInt64
    let shape: EntryShape
    /// Bytes after each value that are not its plaintext: 16 (its tag) in an id block of an
    /// encrypted segment of format 6, whose values are sealed one by one (SPEC.md §14.3); else 0.
    /// Once such a block is read whole its values are opened in place, each followed by the
    /// 16 bytes its tag took.
    var valueTagBytes: Int = 0

    @inline(__always) var isChecked: Bool { shape.isChecked }
    @inline(__always) var entryStride: Int { shape.bytes }
    /// Where the id array starts (sparse blocks only).
    var idsOffset: Int { isSparse ? entriesOffset - count * 8 : entriesOffset }
    var headOffset: Int { entriesOffset + count * entryStride }

    /// Whether segments of this format may hold id blocks (the format that added them, 4, and later).
    static func isAllowed(inSegmentFormat version: UInt32) -> Bool { version >= 4 }

    /// Whether contents of this length end in the id layout's marker (the caller checked that
    /// the block is at least 4 bytes long).
    static func hasMarker(_ contents: UnsafeRawBufferPointer) -> Bool {
        contents.count >= footerBytes && loadFixed32(contents, contents.count - 4) == 0
    }

    /// The layout, or why a field is out of range (the caller reports corruption).
    /// - Parameter checked: whether the block is of format 5 (entries with checksums; the
    ///   footer's checked flag must say the same). The entries' checksums are not computed
    ///   here: the block's own CRC has covered them; ``verifyEntries()`` does, for `verify`.
    /// - Parameter sealedValues: each value is sealed alone and ends in its 16-byte tag
    ///   (``valueTagBytes``): every value region must hold one.
    package static func decode(_ contents: UnsafeRawBufferPointer, checked: Bool, sealedValues: Bool = false) -> Result<IdBlockLayout, IdBlockDamage> {
        let n = contents.count
        guard n >= footerBytes, loadFixed32(contents, n - 4) == 0 else { return .failure(.init("id block footer")) }
        let footer = n - footerBytes
        let first = loadFixed64(contents, footer)
        let m = Int(loadFixed32(contents, footer + 8))
        let h = Int(loadFixed32(contents, footer + 12))
        let flags = loadFixed32(contents, footer + 16)
        guard flags & ~(sparseFlag | checkedFlag | sequenceZeroFlag) == 0, (flags & checkedFlag != 0) == checked,
              checked || flags & sequenceZeroFlag == 0 else {
            return .failure(.init("id block flags \(flags)"))
        }
        let sparse = flags & sparseFlag != 0
        let shape: EntryShape = !checked ? .plain : flags & sequenceZeroFlag != 0 ? .checkedSequenceZero : .checked
        let entryBytes = shape.bytes
        // Each bound is checked before it is used in a product or a sum.
        guard m >= 1, m <= footer / entryBytes else { return .failure(.init("id block count \(m)")) }
        guard h <= StorageLimits.maxKeyBytes - 8, h <= footer - m * entryBytes else {
            return .failure(.init("id block head of \(h) bytes"))
        }
        let headOffset = footer - h
        let entriesOffset = headOffset - m * entryBytes
        var idsOffset = entriesOffset
        if sparse {
            guard m <= entriesOffset / 8 else { return .failure(.init("id block id array")) }
            idsOffset = entriesOffset - m * 8
            guard loadFixed64(contents, idsOffset) == first else { return .failure(.init("id block first id")) }
            var previous = first
            for i in 1..<m {
                let id = loadFixed64(contents, idsOffset + i * 8)
                guard id > previous else { return .failure(.init("id block ids not increasing")) }
                previous = id
            }
        } else {
            guard first <= UInt64.max - UInt64(m - 1) else { return .failure(.init("id block id range")) }
        }
        let valuesEnd = idsOffset
        if checked {
            // Values in entry order, each up to the next one's offset.
            var previous = 0
            for i in 0..<m {
                let offset = Int(loadFixed32(contents, entriesOffset + i * entryBytes))
                guard offset >= previous, offset <= valuesEnd else { return .failure(.init("id block value out of range")) }
                // A sealed value ends in its tag: the previous one is at least that long.
                guard !sealedValues || i == 0 || offset - previous >= AEADContext.tagBytes else {
                    return .failure(.init("id block sealed value shorter than its tag"))
                }
                previous = offset
            }
            guard !sealedValues || valuesEnd - previous >= AEADContext.tagBytes else {
                return .failure(.init("id block sealed value shorter than its tag"))
            }
        } else {
            for i in 0..<m {
                let e = entriesOffset + i * entryBytes
                let offset = Int(loadFixed32(contents, e + 8)), size = Int(loadFixed32(contents, e + 12))
                guard offset <= valuesEnd, size <= valuesEnd - offset else { return .failure(.init("id block value out of range")) }
            }
        }
        var word: UInt64 = 0
        for i in 0..<min(h, 8) { word |= UInt64(contents[headOffset + i]) << UInt64(8 * i) }
        return .success(IdBlockLayout(contents: contents, count: m, firstId: first, isSparse: sparse,
                                      entriesOffset: entriesOffset, headCount: h, headWord: word, shape: shape,
                                      valueTagBytes: sealedValues ? AEADContext.tagBytes : 0))
    }

    /// Format 5: the index of the first entry whose checksum does not match its key and value,
    /// or nil when every one does (or the block is of format 4, whose entries carry none). A
    /// block of sealed values had each checksum checked over its sealed bytes before they were
    /// opened (``SealedIdValues/openAll(_:contents:context:payloadOffset:)``): nil.
    package func firstDamagedEntry() -> Int? {
        guard isChecked, valueTagBytes == 0 else { return nil }
        return withUnsafeTemporaryAllocation(byteCount: userKeyCount + 8, alignment: 8) { key in
            for i in 0..<count {
                writeKey(i, to: key.baseAddress!)
                let v = value(i)
                let e = entriesOffset + i &* entryStride
                let user = UnsafeRawBufferPointer(start: key.baseAddress, count: userKeyCount)
                let expected = Self.entryChecksum(userKey: user, trailer: trailer(i),
                                                  value: UnsafeRawBufferPointer(rebasing: contents[v.offset..<(v.offset + v.count)]))
                if loadFixed32(contents, e + 4) != expected { return i }
            }
            return nil
        }
    }

    /// A format 5 entry's checksum: the masked CRC-32C of the user key, the trailer (u64 LE)
    /// and the value, so that an entry read alone is verified whole, and an entry read for
    /// another key (a damaged offset, a wrong position) fails the check.
    @inline(__always)
    static func entryChecksum(userKey: UnsafeRawBufferPointer, trailer: UInt64, value: UnsafeRawBufferPointer) -> UInt32 {
        var crc = Checksum.crc32c(userKey)
        crc = withUnsafeBytes(of: trailer.littleEndian) { Checksum.crc32c($0, extending: crc) }
        if value.count > 0 { crc = Checksum.crc32c(value, extending: crc) }
        return Checksum.mask(crc)
    }

    /// Bytes of each user key: the head and the id.
    var userKeyCount: Int { headCount + 8 }

    @inline(__always) func id(_ i: Int) -> UInt64 {
        isSparse ? loadFixed64(contents, idsOffset + i &* 8) : firstId &+ UInt64(i)
    }

    @inline(__always) func trailer(_ i: Int) -> UInt64 {
        switch shape {
        case .plain: return loadFixed64(contents, entriesOffset + i &* 16)
        case .checked: return loadFixed64(contents, entriesOffset + i &* 16 + 8)
        case .checkedSequenceZero: return InternalKey.trailer(sequence: 0, kind: .value)
        }
    }

    /// Entry `i`'s value: its offset and size in `contents` (without a sealed value's tag).
    @inline(__always) func value(_ i: Int) -> (offset: Int, count: Int) {
        let stored = storedValue(i)
        return (stored.offset, stored.count &- valueTagBytes)
    }

    /// Entry `i`'s value as stored: its offset and size in `contents`, a sealed value's tag
    /// included.
    @inline(__always) func storedValue(_ i: Int) -> (offset: Int, count: Int) {
        let e = entriesOffset + i &* entryStride
        if shape == .plain { return (Int(loadFixed32(contents, e + 8)), Int(loadFixed32(contents, e + 12))) }
        // Format 5: up to the next entry's value (decode checked that offsets do not decrease).
        let offset = Int(loadFixed32(contents, e))
        let end = i + 1 < count ? Int(loadFixed32(contents, e + entryStride)) : idsOffset
        return (offset, end - offset)
    }

    /// Writes entry `i`'s internal key (head, big-endian id, trailer) at `out`, which has room
    /// for `userKeyCount + 8` bytes.
    @inline(__always) func writeKey(_ i: Int, to out: UnsafeMutableRawPointer) {
        if headCount > 0 { out.copyMemory(from: contents.baseAddress! + headOffset, byteCount: headCount) }
        (out + headCount).storeBytes(of: id(i).bigEndian, as: UInt64.self)
        (out + headCount + 8).storeBytes(of: trailer(i).littleEndian, as: UInt64.self)
    }

    /// The position of the first entry whose id is >= `id` (`count` when none is).
    @inline(__always) func lowerBound(id: UInt64) -> Int {
        if !isSparse {
            if id <= firstId { return 0 }
            let d = id &- firstId
            return d >= UInt64(count) ? count : Int(d)
        }
        // Branchless: the loop's trip count depends only on `count`, and the comparison becomes
        // a conditional move, so no misprediction waits on an id's memory miss.
        var base = 0
        var n = count
        let ids = contents.baseAddress! + idsOffset
        while n > 1 {
            let half = n >> 1
            let probe = ids.loadUnaligned(fromByteOffset: (base + half - 1) &* 8, as: UInt64.self)
            base = UInt64(littleEndian: probe) < id ? base + half : base
            n -= half
        }
        let last = UInt64(littleEndian: ids.loadUnaligned(fromByteOffset: base &* 8, as: UInt64.self))
        return last < id ? base + 1 : base
    }

    /// Whether `userKey` has this block's length and head; its id when it does.
    @inline(__always) func idOf(userKey: UnsafeRawBufferPointer) -> UInt64? {
        guard userKey.count == userKeyCount else { return nil }
        if headCount <= 8 {
            // The key has at least 8 bytes (its id): one load, masked to the head's length.
            let mask: UInt64 = headCount == 8 ? .max : (UInt64(1) << UInt64(8 * headCount)) &- 1
            guard UInt64(littleEndian: userKey.loadUnaligned(as: UInt64.self)) & mask == headWord else { return nil }
        } else if !UnsafeRawBufferPointer(rebasing: userKey[0..<headCount])
            .bytesEqual(UnsafeRawBufferPointer(rebasing: contents[headOffset..<(headOffset + headCount)])) { return nil }
        return UInt64(bigEndian: userKey.loadUnaligned(fromByteOffset: headCount, as: UInt64.self))
    }

    /// The position of the first entry whose internal key is >= `target` (`count` when none is).
    func firstAtOrAfter(_ target: UnsafeRawBufferPointer) -> Int {
        let user = InternalKey.userKey(target)
        if let id = idOf(userKey: user) {
            let i = lowerBound(id: id)
            // One version per user key: the entry sorts before the target when it is newer.
            if i < count && self.id(i) == id && trailer(i) > InternalKey.trailer(target) { return i + 1 }
            return i
        }
        // A key of another length or head: compared whole, entry by entry of a binary search.
        return withUnsafeTemporaryAllocation(byteCount: userKeyCount + 8, alignment: 8) { buffer in
            var lo = 0, hi = count
            while lo < hi {
                let mid = (lo + hi) / 2
                writeKey(mid, to: buffer.baseAddress!)
                if InternalKey.compare(UnsafeRawBufferPointer(buffer), target) < 0 { lo = mid + 1 } else { hi = mid }
            }
            return lo
        }
    }

    /// Starts loading what a lookup of `target` reads first: in a dense block the entry of its id
    /// (its position is arithmetic), in a sparse one the middle of the id array, the search's
    /// first probe.
    @inline(__always) func prefetch(for target: UnsafeRawBufferPointer) {
        let base = contents.baseAddress!
        if isSparse {
            strata_prefetch(base + idsOffset + (count / 2) * 8)
        } else if let id = idOf(userKey: InternalKey.userKey(target)) {
            let i = lowerBound(id: id)
            if i < count { strata_prefetch(base + entriesOffset + i * entryStride) }
        }
    }

    /// A point lookup: the entry holding `target`'s user key at or below its sequence, if any.
    @inline(__always) func lookup(_ target: UnsafeRawBufferPointer) -> Block.Lookup {
        guard let id = idOf(userKey: InternalKey.userKey(target)) else { return .notFound }
        let i = lowerBound(id: id)
        // Absent, or only a version newer than the read: the next entry holds another key.
        guard i < count, self.id(i) == id else { return .notFound }
        let t = trailer(i)
        guard t <= InternalKey.trailer(target) else { return .notFound }
        let v = value(i)
        return .entry(userKeyMatches: true, isDeletion: t & 0xFF == UInt64(EntryKind.deletion.rawValue),
                      valueOffset: v.offset, valueCount: v.count)
    }
}

/// Why an id block failed its checks.
package struct IdBlockDamage: Error {
    let reason: String
    init(_ reason: String) { self.reason = reason }
}
