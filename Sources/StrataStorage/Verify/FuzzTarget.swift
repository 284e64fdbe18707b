/// What the fuzzers (`Fuzz/`) and the corpus replay test feed arbitrary bytes to: one decoder of
/// a file format each. Every input must end in a result or a typed error, never a crash, a
/// hang or a sanitizer report. Underscored: a tool for Strata's own tests, not API.
public enum _FuzzTarget: String, CaseIterable, Sendable {
    /// A WAL: log framing (checksums, torn tails, mid-log damage) and write-batch decoding.
    case wal
    /// A whole segment file: footer, index, filter and properties blocks, then every data block
    /// and a few point lookups.
    case segment
    /// One block's contents (restart array, prefix-compressed entries), iterated and searched.
    case block
    /// The 64-byte segment footer.
    case footer
    /// A manifest: log framing and version-edit decoding.
    case manifest
    /// A WAL with its checksums made right after mutation (the first byte picks one record to
    /// leave damaged, or none), replayed into memtables the way an open does: batch decoding,
    /// durable marks, torn tails and mid-log damage behind valid checksums.
    case walChecked
    /// A manifest with its checksums made right, replayed by a read-only open behind a valid
    /// `CURRENT`: version edits applied, numbers range-checked, segments looked for.
    case manifestChecked
    /// A segment with its footer and block checksums made right: index, filter, properties and
    /// data blocks decoded behind valid checksums.
    case segmentChecked
    /// A whole store directory (``StoreFuzzArchive``), checksums made right: directory listing,
    /// `CURRENT`, manifest replay, WAL replay, segments, verify, and a writable open.
    case store

    /// The `store` target's input for the store in `directory` of `fileSystem` (its files with
    /// names the archive's table knows), to seed the fuzzer's corpus with real stores.
    public static func storeArchive(of fileSystem: InMemoryFileSystem, directory: String) throws -> [UInt8] {
        let files = try fileSystem.listDirectory(directory).sorted().compactMap { name in
            fileSystem.contents(of: joinPath(directory, name)).map { (name: name, bytes: $0) }
        }
        return StoreFuzzArchive.encode(files)
    }

    public func run(_ data: UnsafeRawBufferPointer) {
        switch self {
        case .wal:
            let reader = LogReader(bytes: Array(data), path: "fuzz.wal", allowsMarks: true)
            _ = try? reader.forEachRecord { record in
                let payload = record.payload
                guard payload.count >= 12 else { return }
                _ = try? BatchDecoder.forEach(UnsafeRawBufferPointer(rebasing: payload[8...])) { op in
                    _ = op.key.count &+ op.value.count
                }
            }
        case .manifest:
            let reader = LogReader(bytes: Array(data), path: "fuzz.manifest", allowsMarks: false)
            _ = try? reader.forEachRecord { record in _ = VersionEdit.decode(record.payload) }
        case .walChecked:
            guard let first = data.first else { return }
            var bytes = Array(data.dropFirst())
            ChecksumFixup.fixLog(&bytes, allowsMarks: true, leave: first < 0x80 ? nil : Int(first & 0x7F))
            let fs = InMemoryFileSystem()
            fs.setContents(of: "/fuzz.wal", to: bytes)
            var memtables: [UInt32: Memtable] = [:]
            for id: UInt32 in 0..<4 { memtables[id] = Memtable(keySpaceId: id, expectedBytes: 1 << 16) }
            _ = try? Recovery.replay(wal: "/fuzz.wal", fs: fs, into: memtables, after: UInt64(first & 0x0F))
        case .manifestChecked:
            var bytes = Array(data)
            ChecksumFixup.fixLog(&bytes, allowsMarks: false, leave: nil)
            let fs = InMemoryFileSystem()
            try? fs.createDirectory("/db")
            fs.setContents(of: "/db/MANIFEST-000001", to: bytes)
            fs.setContents(of: "/db/CURRENT", to: VersionSet.currentContents(manifestNumber: 1))
            fs.setContents(of: "/db/000002.wal", to: [])
            var options = EngineOptions()
            options.fileSystem = fs
            options.readOnly = true
            options.createIfMissing = false
            if let engine = try? Engine.open(directory: "/db", options: options) {
                for ks in engine.keySpaces { _ = try? engine.scan(ks) }
                engine.close()
            }
        case .segmentChecked:
            var bytes = Array(data)
            ChecksumFixup.fixSegment(&bytes)
            bytes.withUnsafeBytes { _FuzzTarget.segment.run($0) }
        case .store:
            StoreFuzzArchive.run(data)
        case .footer:
            _ = try? SegmentFooter.decode(data, file: "fuzz.seg", fileSize: UInt64(data.count))
        case .block:
            let storage = UnsafeMutableRawBufferPointer.allocate(byteCount: max(1, data.count), alignment: 8)
            if data.count > 0 { storage.copyMemory(from: data) }
            // Either layout: a restart-layout block, or an id block when it ends in the id marker.
            guard let block = try? Block(taking: storage, contentsCount: data.count, file: "fuzz.block", offset: 0,
                                         allowIdLayout: true) else { return }
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
        case .segment:
            let fs = InMemoryFileSystem()
            fs.setContents(of: "/fuzz.seg", to: Array(data))
            let cache = BlockCache(capacityBytes: 1 << 20)
            guard let reader = try? SegmentReader.open(fileSystem: fs, path: "/fuzz.seg", fileNumber: 1, cache: cache,
                                                       stats: StatisticsCounters()) else { return }
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
            }
        }
    }
}
