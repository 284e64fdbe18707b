/// What ``Engine/changeEncryptionKey(directory:from:to:options:)`` did.
public struct KeyChangeReport: Sendable, Equatable {
    /// Segments rewritten under the new key.
    public var segments: Int
    /// Bytes of the segments written.
    public var bytesWritten: UInt64
    public var seconds: Double
}

extension Engine {
    /// Re-encrypts the store in `directory` under another key: `from` is the key it has now
    /// (nil: a plaintext store, which this encrypts), `to` the key it gets (nil: decrypt it). The
    /// store must not be open; this opens it, flushes what its logs hold, closes it, then, holding
    /// its lock, writes every live segment again under the new key, a new manifest naming them and
    /// an empty log, and only then points `CURRENT` at the new manifest: a crash or a power cut at
    /// any moment leaves a store that opens with the old key (before `CURRENT` moved) or with the
    /// new one (after), never neither; the other key's files left behind are removed by the next
    /// open (SPEC.md §14.6). An archive the store ships to keeps what it holds under the old key:
    /// point the store at a new archive target after a key change.
    ///
    /// `options` are the store's (the segment layout of its key spaces); its `encryptionKey` is
    /// ignored.
    ///
    /// ```swift
    /// try Engine.changeEncryptionKey(directory: "/data/shop", from: oldKey, to: newKey)
    /// ```
    @discardableResult
    public static func changeEncryptionKey(directory: String, from oldKey: [UInt8]?, to newKey: [UInt8]?,
                                           options: EngineOptions = EngineOptions()) throws -> KeyChangeReport {
        let start = monotonicSeconds()
        let fs = options.fileSystem
        let oldCipher = try oldKey.map { try StoreCipher(key: $0) }
        let newCipher = try newKey.map { try StoreCipher(key: $0) }
        guard fs.fileExists(joinPath(directory, FormatConstants.currentFileName)) else { throw StorageError.notAStore(path: directory) }
        // Everything the logs hold goes into segments: the new store starts with an empty log.
        var o = options
        o.encryptionKey = oldKey
        o.createIfMissing = false
        o.readOnly = false
        o.archive = nil
        let engine = try Engine.open(directory: directory, options: o)
        let counters: EngineCounters
        do {
            try engine.flush()
            counters = engine.stats.lifetime
        } catch {
            engine.close()
            throw error
        }
        engine.close()

        let lock = try fs.lockFile(joinPath(directory, FormatConstants.lockFileName), shared: false)
        defer { lock.release() }
        let stats = StatisticsCounters()
        let cache = BlockCache(capacityBytes: 1 << 20)
        let opener = SegmentOpener(open: { meta in
            try SegmentReader.open(fileSystem: fs, path: joinPath(directory, StoreFile.segmentName(meta.fileNumber)),
                                   fileNumber: meta.fileNumber, cache: cache, stats: stats, cipher: oldCipher)
        }, remove: { _ in })
        let versions = try VersionSet.recover(fileSystem: fs, directory: directory, stats: stats, opener: opener, cipher: oldCipher)
        // Numbers above every file there, so that no new file takes an old one's name.
        for name in try fs.listDirectory(directory) {
            switch StoreFile.parse(name) {
            case let .wal(n)?, let .segment(n)?, let .manifest(n)?: versions.markFileNumberUsed(n)
            default: break
            }
        }
        let names = Dictionary(uniqueKeysWithValues: versions.keySpaces.map { ($0.id, $0.name) })
        var written: [String] = []
        var report = KeyChangeReport(segments: 0, bytesWritten: 0, seconds: 0)
        do {
            var metas: [SegmentMeta] = []
            for segment in versions.current.allSegments {
                let number = versions.newFileNumber()
                let path = joinPath(directory, StoreFile.segmentName(number))
                written.append(path)
                let meta = try rewriteSegment(segment, to: path, number: number, fileSystem: fs,
                                              layout: options.segmentLayout(forKeySpaceNamed: names[segment.meta.keySpaceId] ?? ""),
                                              cipher: newCipher)
                metas.append(meta)
                report.segments += 1
                report.bytesWritten += meta.fileSize
            }
            // An empty file reads as a log without records under any key, or none: a crash
            // before CURRENT moves leaves the old store a log it replays as empty and removes.
            let walNumber = versions.newFileNumber()
            let walPath = joinPath(directory, StoreFile.walName(walNumber))
            written.append(walPath)
            let wal = try fs.openWritable(walPath, truncate: true)
            do { try wal.sync() } catch { try? wal.close(); throw error }
            try wal.close()
            let manifestNumber = versions.newFileNumber()
            written.append(joinPath(directory, StoreFile.manifestName(manifestNumber)))
            try fs.syncDirectory(directory)

            var edit = VersionEdit()
            edit.formatVersion = FormatConstants.storeFormatVersion
            edit.logNumber = walNumber
            edit.nextFileNumber = versions.nextFileNumber
            edit.lastSequence = versions.lastSequence
            edit.addedKeySpaces = versions.keySpaces
            edit.addedSegments = metas
            edit.storeId = versions.storeId != 0 ? versions.storeId : VersionSet.newStoreId()
            try VersionSet.writeManifest(edit, number: manifestNumber, fileSystem: fs, directory: directory, cipher: newCipher).close()
            // The advisory counters under the old key would not open under the new one.
            try? fs.removeFile(StatsFile.path(in: directory))
            try VersionSet.replaceCurrent(manifestNumber: manifestNumber, fileSystem: fs, directory: directory)
        } catch {
            for path in written { try? fs.removeFile(path) }
            throw error
        }
        // CURRENT names the new manifest (durable with this sync): the old key's files go.
        try fs.syncDirectory(directory)
        let keep = Set(written.map { String($0.split(separator: "/").last ?? "") })
        for name in try fs.listDirectory(directory) where !keep.contains(name) {
            switch StoreFile.parse(name) {
            case .wal?, .segment?, .manifest?, .temp?: try? fs.removeFile(joinPath(directory, name))
            default: break
            }
        }
        try? StatsFile.write(counters, directory: directory, fileSystem: fs, cipher: newCipher)
        try fs.syncDirectory(directory)
        report.seconds = monotonicSeconds() - start
        return report
    }

    /// Writes the entries of `segment` into a new segment at `path` under `cipher`: the same
    /// keys, values and sequence numbers, so the same manifest record but for its number, size
    /// and uid.
    private static func rewriteSegment(_ segment: LiveSegment, to path: String, number: UInt64, fileSystem fs: any FileSystem,
                                       layout: SegmentLayout, cipher: StoreCipher?) throws -> SegmentMeta {
        let reader = try segment.reader()
        let writer = SegmentWriter(file: try fs.openWritable(path, truncate: true), path: path, keySpaceId: segment.meta.keySpaceId,
                                   layout: layout, cipher: cipher)
        do {
            let it = reader.makeIterator(fillCache: false)
            it.seekToFirst()
            while it.isValid {
                try writer.add(internalKey: it.key, value: it.value)
                it.next()
            }
            if let error = it.error { throw error }
            let props = try writer.finish()
            guard props.entryCount == segment.meta.entryCount, props.smallestKey == segment.meta.smallest,
                  props.largestKey == segment.meta.largest else {
                throw StorageError.corruption(file: reader.path, offset: 0, reason: "segment does not match its manifest record")
            }
            var meta = segment.meta
            meta.fileNumber = number
            meta.fileSize = writer.fileSize
            meta.uid = SegmentMeta.newUid()
            return meta
        } catch {
            writer.abandon()
            throw error
        }
    }
}

extension EngineOptions {
    /// How segments of the key space `name` are written: the options' layout with the key
    /// space's prefix filter and id blocks.
    func segmentLayout(forKeySpaceNamed name: String) -> SegmentLayout {
        var l = segmentLayout
        l.filterPrefixSuffixBytes = prefixFilters[name] ?? 0
        l.idBlocks = IdBlockLayout.isAllowed(inSegmentFormat: l.formatVersion) && idKeySpaces.contains(name)
        return l
    }
}
