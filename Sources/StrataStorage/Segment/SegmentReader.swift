import CLZ4

/// An open segment file: footer and properties in memory, the index and the bloom filter from
/// the first read that needs them; data blocks read on demand through the shared
/// ``BlockCache``. Every block read is checksum-verified
/// (SPEC.md §Segment). Safe for concurrent use.
package final class SegmentReader: @unchecked Sendable {
    // @unchecked Sendable: immutable after `open`; what it builds at first use (filter, index
    // summary) is published once through atomic cells.
    let fileNumber: UInt64
    let path: String
    let file: any ReadableFile
    /// The file's read-only mapping when the file system made one (``PosixFileSystem``): point
    /// reads of format 5 id block entries copy out of it directly (``readIdEntry(lookupKey:into:)``).
    let mapped: UnsafeRawBufferPointer?
    let fileSize: UInt64
    let properties: SegmentProperties
    /// The index block, read by the first read that needs it (``BlockCell``).
    private let indexCell = BlockCell()
    private let indexHandle: BlockHandle
    /// The index's keys as integers and its handles decoded, built on the first read (nil inside
    /// when the index is malformed: reads then search the block itself and report the damage).
    let indexSummary: IndexSummaryCell
    /// The filter block, read by the first probe into a 64-byte aligned buffer so that a line
    /// of a ``BloomFilter/Layout/cacheLine`` filter is one cache line (filter blocks are stored
    /// raw, so the block keeps the buffer it was read into).
    private let filterCell = BlockCell()
    private let filterHandle: BlockHandle
    private let filterLayout: BloomFilter.Layout
    /// Which id block layout data blocks may have (SPEC.md §6.1.1): none before segment format 4.
    let idFormat: IdBlockFormat
    private let cache: BlockCache
    let stats: StatisticsCounters
    private var fileSystem: (any FileSystem)?
    /// Opens the blocks of an encrypted segment (SPEC.md §14.3); nil for plaintext.
    let sealer: FileSealer?
    /// `sealer`'s context, unretained (`sealer`, which this reader keeps, keeps it): a point read
    /// of a sealed value reaches it without the retain and release that reading it through
    /// `sealer` costs, one atomic pair per object (1.7% of the encrypted graph benchmark's
    /// backlink phase, `perf`).
    let valueContext: Unmanaged<AEADContext>?
    /// What follows each block: type and CRC (5 bytes), or nonce, tag and type when sealed.
    let trailerBytes: Int
    /// An encrypted segment of format 6: its id blocks hold values sealed one by one, stored as
    /// ``sealedValuesBlockType`` blocks, and its index gives their spans (SPEC.md §14.3).
    let sealedValues: Bool
    /// Where an id block's contents start past its handle's offset: after the nonce of an
    /// encrypted segment's block.
    let payloadShift: UInt64

    /// The stored type of an encrypted segment's id block of sealed values: `nonce | contents |
    /// tag | 2`, the contents in the clear (their values sealed), the tag over them.
    static let sealedValuesBlockType: UInt8 = 2

    /// A sealed block's trailer: nonce (12), tag (16), type (1).
    static let sealedTrailerBytes = FileSealer.overhead + 1

    /// What a sealed block's tag authenticates besides its bytes: its type and its offset.
    static func sealedBlockAAD(type: UInt8, offset: UInt64) -> [UInt8] {
        var w = ByteWriter(capacity: 9)
        w.append(type)
        w.appendFixed64(offset)
        return w.bytes
    }

    /// `cipher`: the store's, when it is encrypted; every segment must then be (its header's key
    /// check value is checked here).
    package static func open(fileSystem: any FileSystem, path: String, fileNumber: UInt64, cache: BlockCache,
                     stats: StatisticsCounters, cipher: StoreCipher?) throws -> SegmentReader {
        let file = try fileSystem.openImmutable(path)
        do {
            let reader = try SegmentReader(file: file, path: path, fileNumber: fileNumber, cache: cache, stats: stats, cipher: cipher)
            reader.fileSystem = fileSystem
            return reader
        } catch {
            file.close()
            throw error
        }
    }

    private init(file: any ReadableFile, path: String, fileNumber: UInt64, cache: BlockCache, stats: StatisticsCounters,
                 cipher: StoreCipher?) throws {
        self.file = file
        // Segments are opened after the manifest, whose key check passed: a header that
        // disagrees is damage.
        if let cipher, case let .sealed(s) = try EncryptionHeader.read(file: file, cipher: cipher, path: path, keyChecked: true) {
            sealer = s
        } else {
            sealer = nil
        }
        let sealer = sealer
        valueContext = sealer.map { Unmanaged.passUnretained($0.context) }
        trailerBytes = sealer == nil ? FormatConstants.blockTrailerBytes : Self.sealedTrailerBytes
        payloadShift = sealer == nil ? 0 : UInt64(FileSealer.nonceBytes)
        mapped = (file as? PosixReadableFile)?.mappedBytes
        self.path = path
        self.fileNumber = fileNumber
        self.cache = cache
        self.stats = stats
        let fileSize = file.size
        self.fileSize = fileSize
        let footerBytes = FormatConstants.segmentFooterBytes
        guard fileSize >= UInt64(footerBytes) else {
            throw StorageError.corruption(file: path, offset: 0, reason: "file of \(fileSize) bytes is too short to be a segment")
        }
        var raw = [UInt8](repeating: 0, count: footerBytes)
        try raw.withUnsafeMutableBytes { buf in
            try file.readExactly(at: fileSize - UInt64(footerBytes), into: buf, path: path, once: true)
        }
        let trailerBytes = trailerBytes
        let footer = try raw.withUnsafeBytes { try SegmentFooter.decode($0, file: path, fileSize: fileSize, trailerBytes: trailerBytes) }
        // The index and the filter wait for the first read that needs them (``BlockCell``);
        // their handles are checked against the file now.
        for handle in [footer.index, footer.filter] where !Self.handleInRange(handle, fileSize: fileSize, trailerBytes: trailerBytes) {
            throw StorageError.corruption(file: path, offset: handle.offset, reason: "block handle out of range")
        }
        indexHandle = footer.index
        filterHandle = footer.filter
        // Read once, with `pread`: through the fresh mapping, every page would fault on first
        // touch (an open of the object-graph benchmark's 91 segments spent a tenth of its time
        // there). So are the index and the filter when first needed.
        let propsBlock = try Self.readBlock(file: file, path: path, handle: footer.properties, sealer: sealer, parseRestarts: false, once: true)
        guard let props = SegmentProperties.decode(propsBlock.contents) else {
            throw StorageError.corruption(file: path, offset: footer.properties.offset, reason: "malformed properties block")
        }
        properties = props
        filterLayout = BloomFilter.Layout(segmentFormat: footer.formatVersion)
        idFormat = IdBlockFormat(segmentFormat: footer.formatVersion)
        // Format 5's encrypted segments sealed id blocks whole: no spans, every read takes the
        // block path.
        sealedValues = sealer != nil && footer.formatVersion >= 6
        indexSummary = IndexSummaryCell(idSpans: idFormat == .checked && (sealer == nil || sealedValues),
                                        openedBudget: sealedValues ? cache.opened : nil)
    }

    deinit { file.close() }

    /// Closes and removes the file of a segment nothing uses any more.
    func deleteFile() {
        file.close()
        cache.evict(segmentId: fileNumber)
        try? fileSystem?.removeFile(path)
    }

    /// Whether a block and its trailer lie inside a file of `fileSize` bytes. Both numbers come
    /// from disk: compared without adding them, so no value can overflow.
    package static func handleInRange(_ handle: BlockHandle, fileSize: UInt64, trailerBytes: Int = FormatConstants.blockTrailerBytes) -> Bool {
        let trailer = UInt64(trailerBytes)
        return handle.size <= UInt64(Int32.max) && handle.offset <= fileSize && handle.size + trailer <= fileSize - handle.offset
    }

    /// Reads, verifies and decompresses one block. Filter and properties blocks are handled
    /// here too: for them the "contents" are raw bytes, so the restart-array check is skipped.
    /// - Parameter sealedValues: whether the block may be an id block of sealed values (a data
    ///   block of an encrypted segment of format 6); `checkEachSealedValue`: such a block's values
    ///   are each checked as a point read checks them (``openSealedValuesBlock(_:sealer:path:handle:checkEach:)``).
    static func readBlock(file: any ReadableFile, path: String, handle: BlockHandle, sealer: FileSealer?, parseRestarts: Bool = true,
                                  idFormat: IdBlockFormat = .none, sealedValues: Bool = false, checkEachSealedValue: Bool = false,
                                  once: Bool = false, alignment: Int = 8) throws -> Block {
        let trailer = sealer == nil ? FormatConstants.blockTrailerBytes : sealedTrailerBytes
        guard handleInRange(handle, fileSize: file.size, trailerBytes: trailer) else {
            throw StorageError.corruption(file: path, offset: handle.offset, reason: "block handle out of range")
        }
        let n = Int(handle.size)
        // Always a copy, never a read in place from a mapping: a mapped page can fault (another
        // process truncated the file, a media error), and only the file's guarded copy turns
        // that into an error (SPEC.md §6.6).
        let buf = UnsafeMutableRawBufferPointer.allocate(byteCount: n + trailer, alignment: alignment)
        do {
            try file.readExactly(at: handle.offset, into: buf, path: path, once: once)
        } catch {
            buf.deallocate()
            throw error
        }
        if let sealer {
            if buf[n + FileSealer.overhead] == sealedValuesBlockType {
                guard sealedValues else {
                    buf.deallocate()
                    throw StorageError.corruption(file: path, offset: handle.offset, reason: "block of sealed values where none may be")
                }
                return try openSealedValuesBlock(buf, sealer: sealer, path: path, handle: handle, checkEach: checkEachSealedValue)
            }
            return try openSealedBlock(buf, sealer: sealer, path: path, handle: handle, parseRestarts: parseRestarts,
                                       idFormat: idFormat, alignment: alignment)
        }
        return try decodeBlock(UnsafeRawBufferPointer(buf), owned: buf, path: path, handle: handle, parseRestarts: parseRestarts,
                               idFormat: idFormat)
    }

    /// Opens a sealed block (`nonce | ciphertext | tag | type`, SPEC.md §14.3) read into `sealed`,
    /// which this takes over, then decompresses it like a plaintext one. A tag that does not
    /// match (any changed byte, a block moved from another offset, another key) is corruption.
    private static func openSealedBlock(_ sealed: UnsafeMutableRawBufferPointer, sealer: FileSealer, path: String, handle: BlockHandle,
                                        parseRestarts: Bool, idFormat: IdBlockFormat, alignment: Int) throws -> Block {
        defer { sealed.deallocate() }
        let n = Int(handle.size)
        let type = sealed[n + FileSealer.overhead]
        // The plaintext and the type byte after it: `decodeBlock`'s layout, without the CRC the
        // tag stands for.
        let plain = UnsafeMutableRawBufferPointer.allocate(byteCount: n + 1, alignment: alignment)
        let aad = sealedBlockAAD(type: type, offset: handle.offset)
        let opened = aad.withUnsafeBytes {
            sealer.open(UnsafeRawBufferPointer(rebasing: sealed[0..<(n + FileSealer.overhead)]), aad: $0,
                        into: UnsafeMutableRawBufferPointer(rebasing: plain[0..<n]))
        }
        guard opened else {
            plain.deallocate()
            throw StorageError.corruption(file: path, offset: handle.offset, reason: "block fails its authentication tag")
        }
        plain[n] = type
        return try decodeBlock(UnsafeRawBufferPointer(plain), owned: plain, path: path, handle: handle, parseRestarts: parseRestarts,
                               idFormat: idFormat, verified: true)
    }

    /// Opens an id block of sealed values (`nonce | contents | tag | 2`, SPEC.md §14.3) read into
    /// `stored`, which this takes over: checks the tag over the whole block, moves the contents
    /// to the buffer's start and opens each value in place (each after its entry's checksum).
    /// - Parameter checkEach: also check every entry's checksum and every value's own tag
    ///   (verification: what point reads check), not only the block's tag.
    private static func openSealedValuesBlock(_ stored: UnsafeMutableRawBufferPointer, sealer: FileSealer, path: String,
                                              handle: BlockHandle, checkEach: Bool = false) throws -> Block {
        let n = Int(handle.size)
        let aad = sealedBlockAAD(type: sealedValuesBlockType, offset: handle.offset)
        guard aad.withUnsafeBytes({ sealer.verifyAuthenticated(stored, payloadCount: n, aadSuffix: $0) }) else {
            stored.deallocate()
            throw StorageError.corruption(file: path, offset: handle.offset, reason: "block fails its authentication tag")
        }
        let base = stored.baseAddress!
        base.copyMemory(from: base + FileSealer.nonceBytes, byteCount: n)
        let contents = UnsafeMutableRawBufferPointer(rebasing: stored[0..<n])
        let payloadOffset = handle.offset + UInt64(FileSealer.nonceBytes)
        switch IdBlockLayout.decode(UnsafeRawBufferPointer(contents), checked: true, sealedValues: true) {
        case let .success(layout):
            if let i = SealedIdValues.openAll(layout, contents: contents, context: sealer.context, payloadOffset: payloadOffset,
                                              checkEach: checkEach) {
                stored.deallocate()
                throw StorageError.corruption(file: path, offset: payloadOffset + UInt64(layout.entriesOffset + i * layout.entryStride),
                                              reason: "id block entry \(i) fails its checksum or its tag")
            }
        case let .failure(damage):
            stored.deallocate()
            throw StorageError.corruption(file: path, offset: handle.offset, reason: damage.reason)
        }
        return try Block(taking: stored, contentsCount: n, file: path, offset: handle.offset, idFormat: .checked, sealedValues: true)
    }

    /// Verifies and decompresses a block's payload and trailer in `raw`. `owned` is the buffer
    /// `raw` lies in, which this takes over (an uncompressed block keeps it).
    /// `verified`: the payload was authenticated already (a sealed block's tag); no CRC follows.
    private static func decodeBlock(_ raw: UnsafeRawBufferPointer, owned: UnsafeMutableRawBufferPointer, path: String,
                                    handle: BlockHandle, parseRestarts: Bool, idFormat: IdBlockFormat, verified: Bool = false) throws -> Block {
        let n = Int(handle.size)
        guard verified || Checksum.unmask(loadFixed32(raw, n + 1)) == Checksum.crc32c(UnsafeRawBufferPointer(rebasing: raw[0..<(n + 1)])) else {
            owned.deallocate()
            throw StorageError.corruption(file: path, offset: handle.offset, reason: "block checksum mismatch")
        }
        // Read before any path deallocates `owned`, which `raw` lies in.
        let compression = raw[n]
        switch BlockCompression(rawValue: compression) {
        case .none?:
            return try Block(taking: owned, contentsCount: n, file: path, offset: handle.offset, parseRestarts: parseRestarts,
                             idFormat: idFormat)
        case .lz4?:
            defer { owned.deallocate() }
            var r = ByteReader(UnsafeRawBufferPointer(rebasing: raw[0..<n]))
            guard let size = r.readVarintInt(limit: 2 * StorageLimits.maxValueBytes + StorageLimits.maxKeyBytes + 1024) else {
                throw StorageError.corruption(file: path, offset: handle.offset, reason: "bad uncompressed length")
            }
            let out = UnsafeMutableRawBufferPointer.allocate(byteCount: max(size, 1), alignment: 8)
            let got = Int(LZ4_decompress_safe((raw.baseAddress! + r.offset).assumingMemoryBound(to: CChar.self),
                                              out.baseAddress!.assumingMemoryBound(to: CChar.self),
                                              Int32(n - r.offset), Int32(size)))
            guard got == size else {
                out.deallocate()
                throw StorageError.corruption(file: path, offset: handle.offset, reason: "lz4 payload does not decompress")
            }
            return try Block(taking: out, contentsCount: size, file: path, offset: handle.offset, parseRestarts: parseRestarts,
                             idFormat: idFormat)
        case nil:
            owned.deallocate()
            throw StorageError.corruption(file: path, offset: handle.offset, reason: "unknown block compression \(compression)")
        }
    }

    /// A data block, from the cache or from the file.
    /// - Parameter fillCache: false for bulk reads (compaction) that would only evict the
    ///   blocks point reads need, as LevelDB's `fill_cache = false`.
    /// - Parameter checkingEachSealedValue: verification: a block of sealed values (never
    ///   cached) has every entry's checksum and every value's own tag checked too, what point
    ///   reads check, not only its block tag (SPEC.md §14.3).
    func dataBlock(_ handle: BlockHandle, fillCache: Bool = true, checkingEachSealedValue: Bool = false) throws -> Block {
        let key = BlockCache.Key(segmentId: fileNumber, offset: handle.offset)
        if let b = cache.get(key) {
            stats.blockCacheHits.add(1, ordering: .relaxed)
            return b
        }
        stats.blockCacheMisses.add(1, ordering: .relaxed)
        // A read that skips the cache (compaction) will not come back to this block soon.
        let b = try Self.readBlock(file: file, path: path, handle: handle, sealer: sealer, idFormat: idFormat,
                                   sealedValues: sealedValues, checkEachSealedValue: checkingEachSealedValue, once: !fillCache)
        stats.bytesRead.add(handle.size + UInt64(trailerBytes), ordering: .relaxed)
        // A format 5 id block (and an encrypted format 6 one, of sealed values) is not cached
        // either way: point reads copy its entries out of the file, and a scan, which reads it
        // whole, reads each block once (SPEC.md §6.1.1). The OS page cache keeps its bytes; the
        // block cache keeps the blocks read many times. A format 5 encrypted segment's id
        // blocks, sealed whole, have no other way to be read.
        if fillCache && (!(b.idLayout?.isChecked ?? false) || (sealer != nil && !sealedValues)) { cache.insert(key, b) }
        return b
    }

    /// Decodes an index entry's value.
    func handle(fromIndexValue value: UnsafeRawBufferPointer) throws -> BlockHandle {
        var r = ByteReader(value)
        guard let h = BlockHandle.decode(&r) else {
            throw StorageError.corruption(file: path, offset: 0, reason: "malformed index entry")
        }
        return h
    }

    /// Whether the bloom filter admits the hash; a "no" counts as a bloom negative.
    @inline(__always) func mayContain(hash: UInt64) throws -> Bool {
        if BloomFilter.mayContain(try filterBytes(), hash: hash, layout: filterLayout) { return true }
        stats.bloomNegatives.add(1, ordering: .relaxed)
        return false
    }

    /// The filter block's bytes, read and checked by the first call.
    @inline(__always) private func filterBytes() throws -> UnsafeRawBufferPointer {
        try filterCell.contents {
            try Self.readBlock(file: file, path: path, handle: filterHandle, sealer: sealer, parseRestarts: false, once: true,
                               alignment: BloomFilter.lineBytes)
        }
    }

    /// The index block, read and checked by the first call; unretained (``BlockCell``).
    @inline(__always) func indexBlock() throws -> Unmanaged<Block> {
        try indexCell.block { try Self.readBlock(file: file, path: path, handle: indexHandle, sealer: sealer, once: true) }
    }

    /// Calls `body` with the index block, read and checked by the first call.
    func withIndex<R>(_ body: (Block) throws -> R) throws -> R {
        try indexBlock()._withUnsafeGuaranteedRef { try body($0) }
    }

    /// How many entries the index has: one per data block.
    func indexEntryCount() throws -> Int { try indexBlock()._withUnsafeGuaranteedRef { $0.restartCount } }

    /// Reads the filter block if no probe has yet, checking its checksum: what verification
    /// asks of a segment, since an open no longer reads it.
    func checkFilter() throws { _ = try filterBytes() }

    /// Whether the segment may hold a key made of a prefix with this hash and `suffixBytes`
    /// more bytes: true unless its filter was built with such prefixes and rules this one out.
    func mayContain(prefixHash: UInt64, suffixBytes: Int) throws -> Bool {
        guard properties.filterPrefixSuffixBytes == UInt64(suffixBytes), suffixBytes > 0 else { return true }
        return try mayContain(hash: prefixHash)
    }

    /// The newest entry for `userKey` at or below the lookup key's sequence.
    /// `lookupKey` is the internal key (userKey, seekTrailer(sequence)).
    package func get(lookupKey: UnsafeRawBufferPointer, hash: UInt64) throws -> SegmentLookup? {
        guard let handle = try blockHandle(lookupKey: lookupKey, hash: hash) else { return nil }
        return try lookup(lookupKey, in: try dataBlock(handle))
    }

    /// The data block that may hold the lookup key: nil when the bloom filter or the index rules
    /// this segment out. The first half of ``get(lookupKey:hash:)``, for batched reads that fetch
    /// the blocks of many keys before searching any.
    func blockHandle(lookupKey: UnsafeRawBufferPointer, hash: UInt64) throws -> BlockHandle? {
        guard try mayContain(hash: hash) else { return nil }
        let index = try indexBlock()
        guard let position = index._withUnsafeGuaranteedRef({ indexPosition(lookupKey, in: $0) }) else { throw indexCorruption }
        guard position < index._withUnsafeGuaranteedRef({ $0.restartCount }) else { return nil }
        return try blockHandle(atIndexEntry: position, in: index)
    }

    /// The index summary, built now if no read has built it yet (what tests and inspection see).
    var summary: IndexSummary? { (try? withIndex { index in indexSummary.withSummary(of: index) { $0 } }) ?? nil }

    /// The first index entry whose key is >= `lookupKey` (the entry count when every key is
    /// smaller); nil when the index block is malformed.
    @inline(__always)
    func indexPosition(_ lookupKey: UnsafeRawBufferPointer) throws -> Int? {
        try indexBlock()._withUnsafeGuaranteedRef { indexPosition(lookupKey, in: $0) }
    }

    @inline(__always)
    private func indexPosition(_ lookupKey: UnsafeRawBufferPointer, in index: Block) -> Int? {
        indexSummary.withSummary(of: index) { index.indexPosition(lookupKey, summary: $0) }
    }

    /// The data block that index entry `position` names (every index entry is a restart point).
    /// Point reads and ``SegmentIterator`` both read index entries through this.
    @inline(__always)
    func blockHandle(atIndexEntry position: Int) throws -> BlockHandle {
        try blockHandle(atIndexEntry: position, in: indexBlock())
    }

    @inline(__always)
    private func blockHandle(atIndexEntry position: Int, in index: Unmanaged<Block>) throws -> BlockHandle {
        if let handle = index._withUnsafeGuaranteedRef({ index in indexSummary.withSummary(of: index) { $0?.handle(position) } }) {
            return handle
        }
        guard let value = index._withUnsafeGuaranteedRef({ $0.indexEntryValue(position) }) else { throw indexCorruption }
        return try handle(fromIndexValue: value)
    }

    var indexCorruption: StorageError { .corruption(file: path, offset: 0, reason: "malformed index block") }

    /// The second half of ``get(lookupKey:hash:)``: the newest entry for the lookup key in
    /// `block`, one of this segment's data blocks; nil when this segment does not hold the key.
    func lookup(_ lookupKey: UnsafeRawBufferPointer, in block: Block) throws -> SegmentLookup? {
        switch block.dataLookup(lookupKey) {
        case let .entry(matches, deletion, offset, count):
            guard matches else { return nil }
            return deletion ? .deleted : .found(block, offset, count)
        case .notFound:
            return nil
        case .corrupted:
            throw StorageError.corruption(file: path, offset: 0, reason: "malformed data block")
        case .keyTooLong:
            let it = block.makeIterator()
            it.seek(lookupKey)
            if it.corrupted { throw StorageError.corruption(file: path, offset: 0, reason: "malformed data block") }
            guard it.isValid, InternalKey.userKey(it.key).bytesEqual(InternalKey.userKey(lookupKey)) else { return nil }
            if InternalKey.trailer(it.key) & 0xFF == UInt64(EntryKind.deletion.rawValue) { return .deleted }
            let v = it.value
            return .found(block, v.baseAddress! - block.contents.baseAddress!, v.count)
        }
    }

    /// Starts loading a data block's cache entry into the CPU cache (see ``BlockCache/prefetch(_:)``).
    func prefetchCached(_ handle: BlockHandle) {
        cache.prefetch(BlockCache.Key(segmentId: fileNumber, offset: handle.offset))
    }

    package func makeIterator(fillCache: Bool = true) -> SegmentIterator {
        SegmentIterator(reader: self, fillCache: fillCache)
    }
}

/// A point-lookup hit in a segment: the value lies at `offset..<offset+count` of the block.
package enum SegmentLookup {
    case found(Block, Int, Int)
    case deleted
}
