import StrataStorage

/// Makes the checksums of fuzzed bytes right, so that a fuzzer's mutations reach the decoders
/// behind the checksums instead of stopping at the first one (RELIABILITY.md §6). Each function
/// walks the bytes the way a reader would and rewrites every checksum it finds to match. Only
/// for `_FuzzTarget`: the engine itself never repairs a checksum.
package enum ChecksumFixup {
    /// Rewrites a log's records (SPEC.md §5) to be well formed: each length is folded into
    /// what is left of the bytes (keeping the mark flag where marks are allowed) and each CRC
    /// recomputed, except the record numbered `leave` (if any), which keeps its damage.
    package static func fixLog(_ bytes: inout [UInt8], allowsMarks: Bool, leave: Int?) {
        let header = FormatConstants.logRecordHeaderBytes
        var offset = 0
        var index = 0
        while bytes.count - offset >= header {
            let field = read32(bytes, offset + 4)
            let flag = allowsMarks ? field & FormatConstants.logRecordMarkFlag : 0
            let room = bytes.count - offset - header
            var length = Int(field & ~FormatConstants.logRecordMarkFlag) % (room + 1)
            if flag != 0 && length < FormatConstants.logRecordMarkBytes { length = min(room, FormatConstants.logRecordMarkBytes) }
            if flag != 0 && length < FormatConstants.logRecordMarkBytes { break }
            write32(&bytes, offset + 4, UInt32(length) | flag)
            if index != leave {
                let crc = bytes.withUnsafeBytes { Checksum.crc32c(UnsafeRawBufferPointer(rebasing: $0[(offset + 4)..<(offset + header + length)])) }
                write32(&bytes, offset, Checksum.mask(crc))
            }
            offset += header + length
            index += 1
        }
    }

    /// Rewrites a segment's footer CRC, then the trailer CRC of every block the footer names
    /// and of every data block an uncompressed index names (SPEC.md §6).
    package static func fixSegment(_ bytes: inout [UInt8]) {
        let footerBytes = FormatConstants.segmentFooterBytes
        guard bytes.count >= footerBytes else { return }
        let footer = bytes.count - footerBytes
        let crc = bytes.withUnsafeBytes { Checksum.crc32c(UnsafeRawBufferPointer(rebasing: $0[footer..<(footer + 52)])) }
        write32(&bytes, footer + 52, Checksum.mask(crc))
        var handles: [BlockHandle] = []
        for i in 0..<3 {
            handles.append(BlockHandle(offset: read64(bytes, footer + 16 * i), size: read64(bytes, footer + 16 * i + 8)))
        }
        for handle in handles { fixBlock(&bytes, handle) }
        // The index's entries name the data blocks.
        let index = handles[0]
        guard SegmentReader.handleInRange(index, fileSize: UInt64(bytes.count)),
              bytes[Int(index.offset) + Int(index.size)] == BlockCompression.none.rawValue else { return }
        let contents = Array(bytes[Int(index.offset)..<(Int(index.offset) + Int(index.size))])
        let storage = UnsafeMutableRawBufferPointer.allocate(byteCount: max(1, contents.count), alignment: 8)
        if !contents.isEmpty { contents.withUnsafeBytes { storage.copyMemory(from: $0) } }
        guard let block = try? Block(taking: storage, contentsCount: contents.count, file: "fuzz", offset: 0) else { return }
        let it = block.makeIterator()
        it.seekToFirst()
        var n = 0
        while it.isValid && n < 10_000 {
            var r = ByteReader(it.value)
            if let handle = BlockHandle.decode(&r) { fixBlock(&bytes, handle) }
            it.next()
            n += 1
        }
    }

    /// Rewrites a `STATS` file's trailing CRC (SPEC.md §3.1), so that its counters are read.
    package static func fixStats(_ bytes: inout [UInt8]) {
        guard bytes.count >= 12 else { return }
        let crc = bytes.withUnsafeBytes { Checksum.crc32c(UnsafeRawBufferPointer(rebasing: $0[0..<(bytes.count - 4)])) }
        write32(&bytes, bytes.count - 4, Checksum.mask(crc))
    }

    /// Rewrites one block's trailer CRC (over payload and compression byte) when the block
    /// lies in the file.
    package static func fixBlock(_ bytes: inout [UInt8], _ handle: BlockHandle) {
        guard SegmentReader.handleInRange(handle, fileSize: UInt64(bytes.count)) else { return }
        let start = Int(handle.offset), end = Int(handle.offset) + Int(handle.size) + 1
        let crc = bytes.withUnsafeBytes { Checksum.crc32c(UnsafeRawBufferPointer(rebasing: $0[start..<end])) }
        write32(&bytes, end, Checksum.mask(crc))
    }

    private static func read32(_ bytes: [UInt8], _ at: Int) -> UInt32 {
        bytes.withUnsafeBytes { loadFixed32($0, at) }
    }

    private static func read64(_ bytes: [UInt8], _ at: Int) -> UInt64 {
        bytes.withUnsafeBytes { loadFixed64($0, at) }
    }

    private static func write32(_ bytes: inout [UInt8], _ at: Int, _ value: UInt32) {
        for i in 0..<4 { bytes[at + i] = UInt8(truncatingIfNeeded: value >> (8 * UInt32(i))) }
    }
}
