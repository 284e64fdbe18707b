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
        case .footer:
            _ = try? SegmentFooter.decode(data, file: "fuzz.seg", fileSize: UInt64(data.count))
        case .block:
            let storage = UnsafeMutableRawBufferPointer.allocate(byteCount: max(1, data.count), alignment: 8)
            if data.count > 0 { storage.copyMemory(from: data) }
            guard let block = try? Block(taking: storage, contentsCount: data.count, file: "fuzz.block", offset: 0) else { return }
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
