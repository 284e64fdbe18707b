import StrataStorage

/// Each file format's decoders run on arbitrary bytes: what the fuzz targets of the
/// `StrataTesting` product (`_FuzzTarget`) and the corpus replay test call. Every input must end
/// in a result or a typed error, never a crash, a hang or a sanitizer report. Package-visible
/// only: the decoders are internal, and apps reach these through `StrataTesting`.
///
/// The probes that need files take an empty file system to put them in (the fuzz targets pass
/// an in-memory one).
package enum DecoderProbe {
    /// Log framing and write-batch decoding.
    package static func wal(_ data: UnsafeRawBufferPointer) {
        let reader = LogReader(bytes: Array(data), path: "fuzz.wal", allowsMarks: true)
        _ = try? reader.forEachRecord { record in
            guard let batch = try? WALRecord(parsing: record.payload, path: "fuzz.wal", offset: record.offset) else { return }
            try? batch.forEachOperation(path: "fuzz.wal", offset: record.offset) { op in
                _ = op.key.count &+ op.value.count
            }
        }
    }

    /// Log framing and version-edit decoding.
    package static func manifest(_ data: UnsafeRawBufferPointer) {
        let reader = LogReader(bytes: Array(data), path: "fuzz.manifest", allowsMarks: false)
        _ = try? reader.forEachRecord { record in _ = VersionEdit.decode(record.payload) }
    }

    /// WAL replay behind checksums made right; the first byte picks a record to leave damaged.
    package static func walChecked(_ data: UnsafeRawBufferPointer, in fs: any FileSystem) {
        guard let first = data.first else { return }
        var bytes = Array(data.dropFirst())
        ChecksumFixup.fixLog(&bytes, allowsMarks: true, leave: first < 0x80 ? nil : Int(first & 0x7F))
        guard (try? write(bytes, to: "/fuzz.wal", in: fs)) != nil else { return }
        var loaders: [UInt32: MemtableLoader] = [:]
        for id: UInt32 in 0..<4 { loaders[id] = MemtableLoader(Memtable(keySpaceId: id, expectedBytes: 1 << 16)) }
        _ = try? Recovery.replay(wal: "/fuzz.wal", fs: fs, cipher: nil, into: loaders, after: UInt64(first & 0x0F))
        Recovery.finishLoading(Array(loaders.values))
        // The replay's sort and linking: every entry written is linked, in internal-key order.
        for loader in loaders.values {
            var linked = 0
            var node = loader.memtable.first()
            while let n = node {
                linked += 1
                node = Memtable.next(n, 0)
                if let next = node {
                    precondition(Memtable.compare(n, Memtable.userKey(next), Memtable.trailer(next)) <= 0,
                                 "replayed memtable out of order")
                }
            }
            precondition(linked == loader.memtable.entryCount, "replayed memtable lost entries")
        }
    }

    /// A read-only open of a manifest whose checksums were made right.
    package static func manifestChecked(_ data: UnsafeRawBufferPointer, in fs: any FileSystem) {
        var bytes = Array(data)
        ChecksumFixup.fixLog(&bytes, allowsMarks: false, leave: nil)
        do {
            try fs.createDirectory("/db")
            try write(bytes, to: "/db/MANIFEST-000001", in: fs)
            try write(VersionSet.currentContents(manifestNumber: 1), to: "/db/CURRENT", in: fs)
            try write([], to: "/db/000002.wal", in: fs)
        } catch {
            return
        }
        var options = EngineOptions()
        options.fileSystem = fs
        options.readOnly = true
        options.createIfMissing = false
        if let engine = try? Engine.open(directory: "/db", options: options) {
            for ks in engine.keySpaces { _ = try? engine.scan(ks) }
            engine.close()
        }
    }

    /// Footer decoding.
    package static func footer(_ data: UnsafeRawBufferPointer) {
        _ = try? SegmentFooter.decode(data, file: "fuzz.seg", fileSize: UInt64(data.count))
    }

    /// Block decoding (either layout), iteration and search.
    package static func block(_ data: UnsafeRawBufferPointer) {
        // Either layout: a restart-layout block, or an id block when it ends in the id marker,
        // of format 4 (plain entries) or 5 (entries with checksums), as its flags say.
        for format in [IdBlockFormat.plain, .checked] { block(data, idFormat: format) }
        // An encrypted segment's id block of sealed values (format 6, SPEC.md §14.3): its
        // values opened (under a fixed key: they fail, but every region is walked), then decoded.
        block(data, idFormat: .checked, sealedValues: true)
    }

    /// A fixed key's cipher for the sealed-values variant.
    private static let fuzzContext = [UInt8](repeating: 0x42, count: 32).withUnsafeBytes { AEADContext(key: $0, cipher: .aes256GCM) }

    private static func block(_ data: UnsafeRawBufferPointer, idFormat: IdBlockFormat, sealedValues: Bool = false) {
        let storage = UnsafeMutableRawBufferPointer.allocate(byteCount: max(1, data.count), alignment: 8)
        if data.count > 0 { storage.copyMemory(from: data) }
        if sealedValues, case let .success(layout) = IdBlockLayout.decode(UnsafeRawBufferPointer(rebasing: storage[0..<data.count]),
                                                                             checked: true, sealedValues: true) {
            let contents = UnsafeMutableRawBufferPointer(rebasing: storage[0..<data.count])
            _ = SealedIdValues.openAll(layout, contents: contents, context: fuzzContext, payloadOffset: 76, checkEach: true)
            _ = SealedIdValues.openAll(layout, contents: contents, context: fuzzContext, payloadOffset: 76)
        }
        guard let block = try? Block(taking: storage, contentsCount: data.count, file: "fuzz.block", offset: 0,
                                     idFormat: idFormat, sealedValues: sealedValues) else { return }
        _ = block.idLayout?.firstDamagedEntry()
        let it = block.makeIterator()
        it.seekToFirst()
        var n = 0
        while it.isValid && n < 100_000 {
            _ = it.key.count &+ it.value.count
            it.next()
            n += 1
        }
        it.seekToLast()
        it.prev()
        let probe = UnsafeRawBufferPointer(rebasing: data.prefix(24))
        it.seek(probe)
        _ = block.dataLookup(probe)
        if let i = block.indexPosition(probe), i < block.restartCount { _ = block.indexEntryValue(i) }
    }

    /// A segment opened, iterated and probed by point lookups.
    package static func segment(_ data: UnsafeRawBufferPointer, in fs: any FileSystem) {
        guard (try? write(Array(data), to: "/fuzz.seg", in: fs)) != nil else { return }
        let cache = BlockCache(capacityBytes: 1 << 20)
        guard let reader = try? SegmentReader.open(fileSystem: fs, path: "/fuzz.seg", fileNumber: 1, cache: cache,
                                                   stats: StatisticsCounters(), cipher: nil) else { return }
        let it = reader.makeIterator(fillCache: false)
        it.seekToFirst()
        var n = 0
        while it.isValid && n < 100_000 {
            _ = it.key.count &+ it.value.count
            it.next()
            n += 1
        }
        for length in [0, 8, 16] where data.count >= length {
            var key = Array(data.prefix(length))
            withUnsafeBytes(of: InternalKey.seekTrailer(sequence: StorageLimits.maxSequence).littleEndian) { key.append(contentsOf: $0) }
            _ = key.withUnsafeBytes { k in
                try? reader.get(lookupKey: k, hash: BloomFilter.hash(InternalKey.userKey(k)))
            }
            // The read that copies one id block entry out of the file (format 5).
            withUnsafeTemporaryAllocation(byteCount: 256, alignment: 8) { value in
                _ = key.withUnsafeBytes { k in try? reader.readIdEntry(lookupKey: k, into: value) }
            }
        }
    }

    /// ``segment(_:in:)`` behind checksums made right.
    package static func segmentChecked(_ data: UnsafeRawBufferPointer, in fs: any FileSystem) {
        var bytes = Array(data)
        ChecksumFixup.fixSegment(&bytes)
        bytes.withUnsafeBytes { segment($0, in: fs) }
    }

    /// A store directory unpacked from a ``StoreFuzzArchive``, checksums made right.
    package static func store(_ data: UnsafeRawBufferPointer, in fs: any FileSystem) {
        StoreFuzzArchive.run(data, in: fs)
    }

    /// The `store` probe's input for these files of a store directory.
    package static func storeArchive(_ files: [(name: String, bytes: [UInt8])]) -> [UInt8] {
        StoreFuzzArchive.encode(files)
    }

    /// Writes a whole file through the file system's own interface.
    package static func write(_ bytes: [UInt8], to path: String, in fs: any FileSystem) throws {
        let file = try fs.openWritable(path, truncate: true)
        try bytes.withUnsafeBytes { try file.append($0) }
        try file.close()
    }
}
