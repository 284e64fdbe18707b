import CLZ4

/// Tuning of the segment layout; recorded nowhere on disk because readers do not need it.
struct SegmentLayout: Sendable {
    var blockBytes = 4096
    var restartInterval = 16
    var bloomBitsPerKey = 10
    var compress = true
    /// When not 0, the filter also holds each key's prefix without its last this many bytes
    /// (``EngineOptions/prefixFilters``).
    var filterPrefixSuffixBytes = 0
    /// The segment format to write. Only tests of reading older segments ask for 1 (no filter
    /// prefixes) or 2 (a filter whose probes spread over the whole array).
    var formatVersion = FormatConstants.segmentFormatVersion
    /// Write data blocks in the id layout where the keys allow (``EngineOptions/idKeySpaces``;
    /// format 4 and later).
    var idBlocks = false
}

/// Writes one immutable sorted segment file (SPEC.md §Segment):
/// data blocks | filter block | properties block | index block | footer.
/// Every block is followed by its trailer: compression type (1 byte) and the masked CRC32C of the
/// payload and the type byte.
final class SegmentWriter {
    let file: any WritableFile
    let path: String
    private let layout: SegmentLayout
    // One thread writes a segment; the runtime's exclusivity checks on these were a fifth of a
    // flush's time.
    @exclusivity(unchecked) private var dataBlock: BlockBuilder
    /// The block being built when it is an id block (then `dataBlock` is empty).
    @exclusivity(unchecked) private var idBlock: IdBlockBuilder
    @exclusivity(unchecked) private var indexBlock = BlockBuilder(restartInterval: 1)
    @exclusivity(unchecked) private var output = ByteWriter(capacity: 256 * 1024)
    @exclusivity(unchecked) private var offset: UInt64 = 0
    @exclusivity(unchecked) private var hashes: [UInt64] = []
    @exclusivity(unchecked) private var lastUserKey: [UInt8] = []
    @exclusivity(unchecked) private var hasLastUserKey = false
    @exclusivity(unchecked) private var compressScratch: [UInt8] = []
    /// The uncompressed-length prefix of a compressed block, reused from block to block.
    @exclusivity(unchecked) private var lengthPrefix = ByteWriter(capacity: 10)
    @exclusivity(unchecked) private var properties: SegmentProperties
    /// The last key of the block written last, whose index entry waits for the next key (or
    /// finish()); reused from block to block.
    @exclusivity(unchecked) private var pendingIndexKey: [UInt8] = []
    @exclusivity(unchecked) private var hasPendingIndexKey = false
    @exclusivity(unchecked) private var pendingHandle = BlockHandle(offset: 0, size: 0)
    /// The span of the pending block when it is an id block of format 5, for its index entry.
    @exclusivity(unchecked) private var pendingSpan: IdBlockSpan?
    /// When set, each data block written also goes into this cache, under this segment's file
    /// number (``EngineOptions/cacheFillingKeySpaces``).
    private let cacheFill: (cache: BlockCache, segmentId: UInt64)?
    /// Seals every block when the store is encrypted (SPEC.md §14.3); the file then starts with
    /// its encryption header.
    private let sealer: FileSealer?
    /// An encrypted segment of format 6: id blocks hold values sealed one by one, so that a
    /// point read opens one object, not its block (SPEC.md §14.3).
    private let sealsValues: Bool

    init(file: any WritableFile, path: String, keySpaceId: UInt32, layout: SegmentLayout,
         cacheFill: (cache: BlockCache, segmentId: UInt64)? = nil, cipher: StoreCipher? = nil) {
        self.file = file
        self.path = path
        self.layout = layout
        self.cacheFill = cacheFill
        sealer = cipher?.newFile()
        if let sealer {
            output.append(sealer.header)
            offset = UInt64(EncryptionHeader.bytes)
        }
        dataBlock = BlockBuilder(restartInterval: layout.restartInterval)
        sealsValues = sealer != nil && layout.formatVersion >= 6
        idBlock = IdBlockBuilder(checked: IdBlockFormat(segmentFormat: layout.formatVersion) == .checked, sealedValues: sealsValues)
        properties = SegmentProperties(keySpaceId: keySpaceId, entryCount: 0, deletionCount: 0,
                                       minSequence: .max, maxSequence: 0, smallestKey: [], largestKey: [],
                                       rawKeyBytes: 0, rawValueBytes: 0, dataBlockCount: 0,
                                       filterPrefixSuffixBytes: layout.formatVersion >= 2 ? UInt64(max(0, layout.filterPrefixSuffixBytes)) : 0)
    }

    /// Bytes written so far (including buffered).
    var fileSize: UInt64 { offset }

    /// Adds an entry. REQUIRES: internal keys strictly increasing.
    func add(internalKey: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) throws {
        let userKey = InternalKey.userKey(internalKey)
        let isNewUserKey = !hasLastUserKey || !lastUserKey.withUnsafeBytes({ $0.bytesEqual(userKey) })
        if isNewUserKey {
            hashes.append(BloomFilter.hash(userKey))
            let cut = layout.formatVersion >= 2 ? layout.filterPrefixSuffixBytes : 0
            if cut > 0 && userKey.count >= cut {
                // Keys sharing a prefix are adjacent: one hash per distinct prefix.
                let prefix = UnsafeRawBufferPointer(rebasing: userKey[..<(userKey.count - cut)])
                let samePrefix = hasLastUserKey && lastUserKey.count >= cut && lastUserKey.withUnsafeBytes {
                    UnsafeRawBufferPointer(rebasing: $0[..<($0.count - cut)]).bytesEqual(prefix)
                }
                if !samePrefix { hashes.append(BloomFilter.hash(prefix)) }
            }
            lastUserKey.removeAll(keepingCapacity: true)
            lastUserKey.append(contentsOf: userKey)
            hasLastUserKey = true
        }
        let trailer = InternalKey.trailer(internalKey)
        let seq = trailer >> 8
        if properties.entryCount == 0 { properties.smallestKey = Array(internalKey) }
        properties.entryCount += 1
        if trailer & 0xFF == UInt64(EntryKind.deletion.rawValue) { properties.deletionCount += 1 }
        properties.minSequence = min(properties.minSequence, seq)
        properties.maxSequence = max(properties.maxSequence, seq)
        properties.rawKeyBytes += UInt64(userKey.count)
        properties.rawValueBytes += UInt64(value.count)
        if layout.idBlocks {
            try addToIdBlock(internalKey: internalKey, value: value, isNewUserKey: isNewUserKey)
        } else {
            dataBlock.add(key: internalKey, value: value)
        }
        if dataBlock.estimatedSize >= layout.blockBytes || idBlock.estimatedSize >= layout.blockBytes {
            try finishDataBlock()
        }
    }

    /// An id key space's entry: into the id block being built if it fits there, else into a
    /// new block, an id block when the key can start one (an older version of the key before
    /// cannot: an id block holds one version of each key) and a restart-layout block otherwise.
    private func addToIdBlock(internalKey: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer, isNewUserKey: Bool) throws {
        if !dataBlock.isEmpty {
            dataBlock.add(key: internalKey, value: value)
            return
        }
        if !idBlock.isEmpty {
            if idBlock.add(key: internalKey, value: value) { return }
            try finishDataBlock()
        }
        if isNewUserKey && idBlock.add(key: internalKey, value: value) { return }
        dataBlock.add(key: internalKey, value: value)
    }

    private func addIndexEntry() {
        var w = ByteWriter(capacity: 40)
        pendingHandle.encode(into: &w)
        pendingSpan?.encode(into: &w)
        pendingIndexKey.withUnsafeBytes { k in w.bytes.withUnsafeBytes { v in indexBlock.add(key: k, value: v) } }
        hasPendingIndexKey = false
    }

    private func finishDataBlock() throws {
        guard !idBlock.isEmpty || !dataBlock.isEmpty else { return }
        let compress = layout.compress
        // The block before's index entry waits for this one (or finish()) to be written first.
        if hasPendingIndexKey { addIndexEntry() }
        // The index entry is the block's last key.
        if !idBlock.isEmpty {
            idBlock.key(idBlock.entryCount - 1, into: &pendingIndexKey)
            if sealsValues, let sealer {
                // Each value sealed alone, the block authenticated whole and stored in the
                // clear: a point read opens one object (SPEC.md §14.3). The contents start
                // after the block's nonce.
                pendingSpan = idBlock.span
                pendingHandle = try idBlock.withFinishedContents(sealing: (sealer.context, offset + UInt64(FileSealer.nonceBytes))) {
                    try appendSealedValuesBlock($0, sealer: sealer)
                }
            } else if IdBlockFormat(segmentFormat: layout.formatVersion) == .checked && sealer == nil {
                // Stored raw, so that a point read copies one entry and its value out of the
                // file (SPEC.md §6.1.1); no cache fill either: such reads do not use the cache.
                pendingSpan = idBlock.span
                pendingHandle = try idBlock.withFinishedContents { try writeBlock($0, compress: false) }
            } else {
                // Format 5's encrypted segments: id blocks sealed (and compressed) whole.
                pendingSpan = nil
                pendingHandle = try idBlock.withFinishedContents { try writeDataBlock($0, compress: compress) }
            }
            idBlock.reset()
        } else {
            pendingSpan = nil
            pendingIndexKey.removeAll(keepingCapacity: true)
            dataBlock.withLastKey { pendingIndexKey.append(contentsOf: $0) }
            pendingHandle = try dataBlock.withFinishedContents { try writeDataBlock($0, compress: compress) }
            dataBlock.reset()
        }
        hasPendingIndexKey = true
        properties.dataBlockCount += 1
    }

    /// Writes a data block and, when the writer fills the cache, puts its contents there as a
    /// reader would find them after reading the block.
    private func writeDataBlock(_ contents: UnsafeRawBufferPointer, compress: Bool) throws -> BlockHandle {
        let handle = try writeBlock(contents, compress: compress)
        if let cacheFill {
            let storage = UnsafeMutableRawBufferPointer.allocate(byteCount: max(1, contents.count), alignment: 8)
            if contents.count > 0 { storage.copyMemory(from: contents) }
            // The same checks a read makes; a block this writer built always passes them.
            if let block = try? Block(taking: storage, contentsCount: contents.count, file: path, offset: handle.offset,
                                      idFormat: IdBlockFormat(segmentFormat: layout.formatVersion)) {
                cacheFill.cache.insert(BlockCache.Key(segmentId: cacheFill.segmentId, offset: handle.offset), block)
            }
        }
        return handle
    }

    private func writeBlock(_ contents: [UInt8], compress: Bool) throws -> BlockHandle {
        try contents.withUnsafeBytes { try writeBlock($0, compress: compress) }
    }

    /// Buffers one block with its trailer; returns its handle.
    private func writeBlock(_ contents: UnsafeRawBufferPointer, compress: Bool) throws -> BlockHandle {
        if compress, contents.count >= 64 {
            let bound = Int(LZ4_compressBound(Int32(contents.count)))
            if compressScratch.count < bound + 10 { compressScratch = [UInt8](repeating: 0, count: bound + 10) }
            lengthPrefix.removeAll()
            lengthPrefix.appendVarint(contents.count)
            let kept = compressScratch.withUnsafeMutableBytes { dst -> Int? in
                let at = lengthPrefix.count
                lengthPrefix.bytes.withUnsafeBytes { dst.copyMemory(from: $0) }
                let n = Int(LZ4_compress_default(contents.baseAddress!.assumingMemoryBound(to: CChar.self),
                                                 (dst.baseAddress! + at).assumingMemoryBound(to: CChar.self),
                                                 Int32(contents.count), Int32(bound)))
                // Keep compression only when it saves at least 1/8: decompressing costs reads.
                return n > 0 && at + n < contents.count - contents.count / 8 ? at + n : nil
            }
            if let kept {
                return try compressScratch.withUnsafeBytes { try appendBlock(UnsafeRawBufferPointer(rebasing: $0[0..<kept]), type: .lz4) }
            }
        }
        return try appendBlock(contents, type: .none)
    }

    private func appendBlock(_ payload: UnsafeRawBufferPointer, type: BlockCompression) throws -> BlockHandle {
        let handle = BlockHandle(offset: offset, size: UInt64(payload.count))
        if let sealer {
            // `nonce | ciphertext | tag | type`; the tag covers the type and the block's offset,
            // so a block moved elsewhere in the file fails like a changed one.
            let aad = SegmentReader.sealedBlockAAD(type: type.rawValue, offset: offset)
            aad.withUnsafeBytes { sealer.seal(payload, aad: $0, into: &output) }
            output.append(type.rawValue)
            offset += UInt64(payload.count + SegmentReader.sealedTrailerBytes)
            if output.count >= 256 * 1024 { try flushOutput() }
            return handle
        }
        output.append(payload)
        output.append(type.rawValue)
        var crc = Checksum.crc32c(payload)
        crc = withUnsafeBytes(of: type.rawValue) { Checksum.crc32c($0, extending: crc) }
        output.appendFixed32(Checksum.mask(crc))
        offset += UInt64(payload.count + FormatConstants.blockTrailerBytes)
        if output.count >= 256 * 1024 { try flushOutput() }
        return handle
    }

    /// `nonce | contents | tag | 2`: an id block of sealed values, authenticated whole with its
    /// type and offset (SPEC.md §14.3).
    private func appendSealedValuesBlock(_ contents: UnsafeRawBufferPointer, sealer: FileSealer) throws -> BlockHandle {
        let handle = BlockHandle(offset: offset, size: UInt64(contents.count))
        let type = SegmentReader.sealedValuesBlockType
        let aad = SegmentReader.sealedBlockAAD(type: type, offset: offset)
        aad.withUnsafeBytes { sealer.authenticate(contents, aadSuffix: $0, into: &output) }
        output.append(type)
        offset += UInt64(contents.count + SegmentReader.sealedTrailerBytes)
        if output.count >= 256 * 1024 { try flushOutput() }
        return handle
    }

    private func flushOutput() throws {
        try output.bytes.withUnsafeBytes { try file.append($0) }
        output.removeAll()
    }

    /// Writes the remaining blocks and the footer, syncs and closes the file.
    func finish() throws -> SegmentProperties {
        let properties = try finishUnsynced()
        try file.sync()
        try file.close()
        return properties
    }

    /// Writes the remaining blocks and the footer and leaves the file open and unsynced: the
    /// caller syncs and closes it (``file``) before anything names the segment, or abandons it.
    func finishUnsynced() throws -> SegmentProperties {
        try finishDataBlock()
        if properties.dataBlockCount > 0 { properties.largestKey = pendingIndexKey }
        if hasPendingIndexKey { addIndexEntry() }
        let filterHandle = try writeBlock(BloomFilter.build(hashes: hashes, bitsPerKey: layout.bloomBitsPerKey,
                                                                       layout: BloomFilter.Layout(segmentFormat: layout.formatVersion)), compress: false)
        if properties.entryCount == 0 { properties.minSequence = 0 }
        let propsHandle = try writeBlock(properties.encode(formatVersion: layout.formatVersion), compress: false)
        let indexHandle = try writeBlock(indexBlock.finish(), compress: false)
        output.append(SegmentFooter(index: indexHandle, filter: filterHandle, properties: propsHandle, formatVersion: layout.formatVersion).encode())
        offset += UInt64(FormatConstants.segmentFooterBytes)
        try flushOutput()
        return properties
    }

    /// Gives up on the file (the caller removes it).
    func abandon() {
        try? file.close()
    }
}
