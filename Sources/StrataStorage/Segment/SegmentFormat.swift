/// Where a block sits in a segment file: offset of its payload and payload length, excluding the
/// 5-byte trailer (SPEC.md §Segment).
package struct BlockHandle: Equatable {
    package var offset: UInt64
    package var size: UInt64

    /// The memberwise initialiser, package-visible: the fuzz probes' checksum fix-ups build
    /// handles too.
    package init(offset: UInt64, size: UInt64) {
        self.offset = offset
        self.size = size
    }

    func encode(into w: inout ByteWriter) {
        w.appendVarint(offset)
        w.appendVarint(size)
    }

    package static func decode(_ r: inout ByteReader) -> BlockHandle? {
        guard let o = r.readVarint(), let s = r.readVarint() else { return nil }
        return BlockHandle(offset: o, size: s)
    }
}

/// The fixed 64-byte footer at the end of every segment (SPEC.md §Segment, footer).
///
/// index offset, index size, filter offset, filter size, properties offset, properties size
/// (6 × u64 LE) | format version (u32 LE) | masked CRC32C of the preceding 52 bytes (u32 LE) |
/// magic (u64 LE)
package struct SegmentFooter: Equatable {
    var index: BlockHandle
    var filter: BlockHandle
    var properties: BlockHandle
    var formatVersion: UInt32 = FormatConstants.segmentFormatVersion

    func encode() -> [UInt8] {
        var w = ByteWriter(capacity: FormatConstants.segmentFooterBytes)
        for v in [index.offset, index.size, filter.offset, filter.size, properties.offset, properties.size] {
            w.appendFixed64(v)
        }
        w.appendFixed32(formatVersion)
        let crc = w.bytes.withUnsafeBytes { Checksum.crc32c($0) }
        w.appendFixed32(Checksum.mask(crc))
        w.appendFixed64(FormatConstants.segmentMagic)
        return w.bytes
    }

    /// `trailerBytes`: what follows each block (5, or 29 in an encrypted segment, SPEC.md §14.3).
    package static func decode(_ raw: UnsafeRawBufferPointer, file: String, fileSize: UInt64,
                               trailerBytes: Int = FormatConstants.blockTrailerBytes) throws -> SegmentFooter {
        guard raw.count == FormatConstants.segmentFooterBytes, fileSize >= UInt64(raw.count) else {
            throw StorageError.corruption(file: file, offset: 0, reason: "file too short for a segment footer")
        }
        let footerOffset = fileSize - UInt64(raw.count)
        guard loadFixed64(raw, 56) == FormatConstants.segmentMagic else { throw StorageError.badMagic(file: file) }
        let stored = Checksum.unmask(loadFixed32(raw, 52))
        guard stored == Checksum.crc32c(UnsafeRawBufferPointer(rebasing: raw[0..<52])) else {
            throw StorageError.corruption(file: file, offset: footerOffset, reason: "footer checksum mismatch")
        }
        let version = loadFixed32(raw, 48)
        guard version <= FormatConstants.segmentFormatVersion, version >= 1 else {
            throw StorageError.unsupportedFormatVersion(file: file, found: version, supported: FormatConstants.segmentFormatVersion)
        }
        let f = SegmentFooter(
            index: BlockHandle(offset: loadFixed64(raw, 0), size: loadFixed64(raw, 8)),
            filter: BlockHandle(offset: loadFixed64(raw, 16), size: loadFixed64(raw, 24)),
            properties: BlockHandle(offset: loadFixed64(raw, 32), size: loadFixed64(raw, 40)),
            formatVersion: version)
        for h in [f.index, f.filter, f.properties] {
            // The size is bounded before any sum: a crafted size near 2^64 must not overflow.
            guard h.size < UInt64(Int32.max) else {
                throw StorageError.corruption(file: file, offset: footerOffset, reason: "footer block handle out of range")
            }
            let (end, overflow) = h.offset.addingReportingOverflow(h.size + UInt64(trailerBytes))
            guard !overflow, end <= footerOffset else {
                throw StorageError.corruption(file: file, offset: footerOffset, reason: "footer block handle out of range")
            }
        }
        return f
    }
}

/// What a segment holds, stored in its properties block (SPEC.md §Segment, properties).
public struct SegmentProperties: Equatable, Sendable {
    public var keySpaceId: UInt32
    public var entryCount: UInt64
    public var deletionCount: UInt64
    public var minSequence: UInt64
    public var maxSequence: UInt64
    /// Smallest and largest internal keys (user key + trailer).
    public var smallestKey: [UInt8]
    public var largestKey: [UInt8]
    public var rawKeyBytes: UInt64
    public var rawValueBytes: UInt64
    public var dataBlockCount: UInt64
    /// When not 0, the bloom filter also holds every key's prefix without its last this many
    /// bytes, so a seek for such a prefix can skip the segment (SPEC.md §6.3). 0 in segments
    /// of format 1.
    public var filterPrefixSuffixBytes: UInt64 = 0

    func encode(formatVersion: UInt32 = FormatConstants.segmentFormatVersion) -> [UInt8] {
        var w = ByteWriter(capacity: 128)
        w.appendVarint(UInt64(keySpaceId))
        w.appendVarint(entryCount)
        w.appendVarint(deletionCount)
        w.appendVarint(minSequence)
        w.appendVarint(maxSequence)
        w.appendLengthPrefixed(smallestKey)
        w.appendLengthPrefixed(largestKey)
        w.appendVarint(rawKeyBytes)
        w.appendVarint(rawValueBytes)
        w.appendVarint(dataBlockCount)
        if formatVersion >= 2 { w.appendVarint(filterPrefixSuffixBytes) }
        return w.bytes
    }

    static func decode(_ raw: UnsafeRawBufferPointer) -> SegmentProperties? {
        var r = ByteReader(raw)
        guard let ks = r.readVarint(), ks <= UInt64(UInt32.max),
              let entries = r.readVarint(), let deletions = r.readVarint(),
              let minSeq = r.readVarint(), let maxSeq = r.readVarint(),
              let smallest = r.readLengthPrefixed(limit: StorageLimits.maxKeyBytes + 8),
              let largest = r.readLengthPrefixed(limit: StorageLimits.maxKeyBytes + 8),
              let rk = r.readVarint(), let rv = r.readVarint(), let blocks = r.readVarint(),
              smallest.count >= 8, largest.count >= 8
        else { return nil }
        // Absent in format 1.
        var suffixBytes: UInt64 = 0
        if !r.isAtEnd {
            guard let n = r.readVarint(), n <= UInt64(StorageLimits.maxKeyBytes) else { return nil }
            suffixBytes = n
        }
        return SegmentProperties(keySpaceId: UInt32(ks), entryCount: entries, deletionCount: deletions,
                                 minSequence: minSeq, maxSequence: maxSeq, smallestKey: Array(smallest),
                                 largestKey: Array(largest), rawKeyBytes: rk, rawValueBytes: rv, dataBlockCount: blocks,
                                 filterPrefixSuffixBytes: suffixBytes)
    }
}

