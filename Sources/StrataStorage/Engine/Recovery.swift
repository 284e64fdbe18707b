import Dispatch

/// Opening a store (SPEC.md §Recovery): lock, read the manifest, open the live segments, replay
/// the write-ahead logs into memtables, write a fresh manifest, start a new WAL, and remove the
/// files nothing refers to.
enum Recovery {
    struct Result {
        var lock: any FileLock
        var versions: VersionSet
        var memtables: [UInt32: Memtable]
        var lastSequence: UInt64
        /// nil when opened read-only.
        var wal: LogWriter?
        var walNumber: UInt64
    }

    /// What a file name in the store directory is.
    enum FileKind: Equatable {
        case wal(UInt64), segment(UInt64), manifest(UInt64), current, lock, temp
    }

    /// What a name in the store directory is, when it is exactly a name the engine gives: a
    /// number written the way the engine writes it (decimal digits, zero-padded to six, no
    /// sign) and within ``FormatConstants/maxFileNumber``, so that arithmetic on it cannot
    /// overflow; temp files are CURRENT's and STATS's. Anything else (another program's file,
    /// `18446744073709551615.wal`, `+12.seg`) is not the store's: never read, never removed.
    static func parseFileName(_ name: String) -> FileKind? {
        if name == FormatConstants.currentFileName { return .current }
        if name == FormatConstants.lockFileName { return .lock }
        if name == FormatConstants.currentFileName + FormatConstants.tempSuffix
            || name == FormatConstants.statsFileName + FormatConstants.tempSuffix { return .temp }
        if name.hasPrefix(FormatConstants.manifestPrefix) {
            return fileNumber(name.dropFirst(FormatConstants.manifestPrefix.count)).map { .manifest($0) }
        }
        if name.hasSuffix(FormatConstants.walSuffix) {
            return fileNumber(name.dropLast(FormatConstants.walSuffix.count)).map { .wal($0) }
        }
        if name.hasSuffix(FormatConstants.segmentSuffix) {
            return fileNumber(name.dropLast(FormatConstants.segmentSuffix.count)).map { .segment($0) }
        }
        return nil
    }

    /// The number of a file name's numeric part, if it is in the engine's canonical form.
    private static func fileNumber(_ digits: Substring) -> UInt64? {
        guard digits.count >= 6, digits.count <= 20, digits.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }),
              let n = UInt64(digits), n <= FormatConstants.maxFileNumber,
              String(n).leftPadded(to: 6) == digits else { return nil }
        return n
    }

    static func walName(_ n: UInt64) -> String { String(n).leftPadded(to: 6) + FormatConstants.walSuffix }
    static func segmentName(_ n: UInt64) -> String { String(n).leftPadded(to: 6) + FormatConstants.segmentSuffix }

    static func run(directory: String, options: EngineOptions, stats: StatisticsCounters, cache: BlockCache) throws -> Result {
        let fs = options.fileSystem
        if !fs.directoryExists(directory) {
            guard options.createIfMissing, !options.readOnly else { throw StorageError.notAStore(path: directory) }
            try fs.createDirectory(directory)
        }
        if options.readOnly && !fs.fileExists(joinPath(directory, FormatConstants.currentFileName)) {
            throw StorageError.notAStore(path: directory)
        }
        // A store is created only in an empty directory, or one holding what an earlier
        // creation of this engine left (its lock, a manifest, temp files): a directory with
        // anything else belongs to someone else, and nothing in it is touched, not even by a
        // LOCK file.
        if !fs.fileExists(joinPath(directory, FormatConstants.currentFileName)),
           try fs.listDirectory(directory).contains(where: { parseFileName($0) == nil }) {
            throw StorageError.notAStore(path: directory)
        }
        let lock = try fs.lockFile(joinPath(directory, FormatConstants.lockFileName), shared: options.readOnly)
        do {
            return try recoverLocked(directory: directory, options: options, stats: stats, cache: cache, lock: lock)
        } catch {
            lock.release()
            throw error
        }
    }

    private static func recoverLocked(directory: String, options: EngineOptions, stats: StatisticsCounters,
                                      cache: BlockCache, lock: any FileLock) throws -> Result {
        let fs = options.fileSystem
        let openReader: @Sendable (SegmentMeta) throws -> SegmentReader = { meta in
            let path = joinPath(directory, segmentName(meta.fileNumber))
            guard fs.fileExists(path) else {
                throw StorageError.corruption(file: path, offset: 0, reason: "live segment file is missing")
            }
            let reader = try SegmentReader.open(fileSystem: fs, path: path, fileNumber: meta.fileNumber, cache: cache, stats: stats)
            // Size, key space and key range together: a segment file swapped for another one
            // (a restored backup, a copy gone wrong) is refused instead of answering for it.
            guard reader.fileSize == meta.fileSize, reader.properties.keySpaceId == meta.keySpaceId,
                  reader.properties.smallestKey == meta.smallest, reader.properties.largestKey == meta.largest,
                  reader.properties.entryCount == meta.entryCount else {
                throw StorageError.corruption(file: path, offset: 0, reason: "segment does not match its manifest record")
            }
            return reader
        }
        var names = try fs.listDirectory(directory)
        let isNew = !fs.fileExists(joinPath(directory, FormatConstants.currentFileName))
        let versions: VersionSet
        if isNew {
            guard options.createIfMissing else { throw StorageError.notAStore(path: directory) }
            let kinds = names.compactMap(parseFileName)
            if kinds.contains(where: { if case .manifest = $0 { return true } else { return false } }) {
                // A creation cut short before CURRENT was written leaves a manifest and no WAL or
                // segment (the first WAL is made after CURRENT): nothing was ever acknowledged,
                // so start over. With a WAL or a segment present, CURRENT was lost: damage.
                let hasData = kinds.contains { if case .wal = $0 { return true }; if case .segment = $0 { return true }; return false }
                guard !hasData, !options.readOnly else {
                    throw StorageError.corruption(file: joinPath(directory, FormatConstants.currentFileName), offset: 0,
                                                  reason: "CURRENT is missing but manifests exist")
                }
                for name in names {
                    switch parseFileName(name) {
                    case .manifest?, .temp?: try fs.removeFile(joinPath(directory, name))
                    default: break
                    }
                }
                names = try fs.listDirectory(directory)
            }
            versions = VersionSet.create(fileSystem: fs, directory: directory, stats: stats, openReader: openReader)
        } else {
            versions = try VersionSet.recover(fileSystem: fs, directory: directory, stats: stats, openReader: openReader)
        }

        // The WAL the manifest's log number names is deleted only after a later edit raises the
        // log number. Missing, it means that later edits were lost (a damaged or truncated
        // manifest read as a torn tail): refuse instead of opening an older state.
        if !isNew, versions.logNumber > 0, !fs.fileExists(joinPath(directory, walName(versions.logNumber))) {
            throw StorageError.corruption(file: joinPath(directory, VersionSet.manifestName(versions.manifestNumber)), offset: 0,
                                          reason: "the log number names \(walName(versions.logNumber)), which does not exist: later manifest records are lost")
        }

        // Never reuse a number that a file on disk already has.
        var wals: [UInt64] = []
        for name in names {
            switch parseFileName(name) {
            case let .wal(n)?: versions.markFileNumberUsed(n); if n >= versions.logNumber { wals.append(n) }
            case let .segment(n)?, let .manifest(n)?: versions.markFileNumberUsed(n)
            default: break
            }
        }
        wals.sort()

        var memtables: [UInt32: Memtable] = [:]
        for ks in versions.keySpaces { memtables[ks.id] = Memtable(keySpaceId: ks.id, expectedBytes: options.memtableBytes) }
        var lastSequence = versions.lastSequence
        // WALs that hold no record: every open makes a new WAL, and while the replayed data
        // stays in the memtables the log number cannot move past the older ones, so opens
        // without writes would pile up empty logs (each read again by every later open).
        var emptyWals: [UInt64] = []
        for n in wals {
            let replayed = try replay(wal: joinPath(directory, walName(n)), fs: fs, into: memtables, after: lastSequence)
            lastSequence = replayed.lastSequence
            if replayed.isEmpty { emptyWals.append(n) }
        }
        versions.noteLastSequence(lastSequence)
        if options.readOnly {
            // Nothing is written: no new manifest, no WAL, no clean-up.
            return Result(lock: lock, versions: versions, memtables: memtables, lastSequence: lastSequence,
                          wal: nil, walNumber: 0)
        }

        if isNew {
            // A fresh store gets its default key space in its first manifest.
            try versions.addInitialKeySpace(KeySpace(id: 0, name: "default"))
            memtables[0] = Memtable(keySpaceId: 0, expectedBytes: options.memtableBytes)
        }
        try versions.writeSnapshotManifest()

        let walNumber = versions.newFileNumber()
        let walPath = joinPath(directory, walName(walNumber))
        let wal = LogWriter(file: try fs.openLog(walPath), path: walPath)
        // The new WAL's directory entry is durable before any manifest record names it.
        try fs.syncDirectory(directory)
        if memtables.values.allSatisfy(\.isEmpty) {
            // No older WAL holds unflushed data: the new one is where the log starts.
            try versions.setLogNumber(walNumber)
        }

        removeObsoleteFiles(directory: directory, fs: fs, versions: versions, keepWal: walNumber)
        // The one the log number names stays: an open checks that it exists.
        for n in emptyWals where n != versions.logNumber && n != walNumber {
            try? fs.removeFile(joinPath(directory, walName(n)))
        }
        return Result(lock: lock, versions: versions, memtables: memtables, lastSequence: lastSequence,
                      wal: wal, walNumber: walNumber)
    }

    /// One operation of a WAL being replayed: where its key and value lie in the log's bytes.
    private struct ReplayOperation: Sendable {
        var keyOffset: Int
        var valueOffset: Int
        var sequence: UInt64
        var keyLength: UInt32
        var valueLength: UInt32
        var kind: EntryKind
    }

    /// Logs with fewer operations are replayed on the opening thread alone.
    static let parallelReplayMinimum = 4_096

    /// Replays one WAL into the memtables; returns the highest sequence number seen, and
    /// whether the log was empty: no record, nothing torn, only zeros if anything.
    ///
    /// The whole log is decoded and checked first, so a malformed log fails before anything is
    /// inserted. Then each key space's operations go into its memtable in log order, the key
    /// spaces on separate threads: the inserts miss the cache at every level of the skip list
    /// (more than half of an open's time) and different memtables share nothing.
    static func replay(wal path: String, fs: any FileSystem, into memtables: [UInt32: Memtable],
                       after start: UInt64) throws -> (lastSequence: UInt64, isEmpty: Bool) {
        var last = start
        let bytes = try fs.readWholeFile(path)
        // A record found after damage only counts as "valid" if it also looks like a batch
        // that follows on: that keeps random garbage in a torn tail from passing as a record.
        let reader = LogReader(bytes: bytes, path: path) { payload in
            payload.count >= 12 && loadFixed64(payload, 0) > start
        }
        // Indexed by key space id (ids are small and dense): a dictionary lookup per
        // operation showed in the profile.
        var operations = [[ReplayOperation]](repeating: [], count: Int(memtables.keys.max() ?? 0) + 1)
        var known = [Bool](repeating: false, count: operations.count)
        for id in memtables.keys { known[Int(id)] = true }
        var total = 0
        var records = 0
        let outcome = try reader.forEachRecord { payload, offset in
            records += 1
            guard payload.count >= 12 else {
                throw StorageError.corruption(file: path, offset: UInt64(offset), reason: "WAL record too short")
            }
            let base = loadFixed64(payload, 0)
            // A sequence number is checked before any arithmetic on it: a crafted or damaged
            // record must not overflow the counter.
            guard base <= StorageLimits.maxSequence else {
                throw StorageError.corruption(file: path, offset: UInt64(offset), reason: "WAL record with sequence \(base) past the limit")
            }
            // Offsets into the log, so that the second pass finds the bytes again.
            let payloadOffset = offset + FormatConstants.logRecordHeaderBytes
            func offsetInLog(_ part: UnsafeRawBufferPointer) -> Int {
                part.count == 0 ? 0 : payloadOffset + (part.baseAddress! - payload.baseAddress!)
            }
            var seq = base
            let ok = try BatchDecoder.forEach(UnsafeRawBufferPointer(rebasing: payload[8...])) { op in
                guard Int(op.keySpaceId) < known.count, known[Int(op.keySpaceId)] else {
                    throw StorageError.corruption(file: path, offset: UInt64(offset), reason: "WAL record for unknown key space \(op.keySpaceId)")
                }
                guard seq < StorageLimits.maxSequence else {
                    throw StorageError.corruption(file: path, offset: UInt64(offset), reason: "WAL record runs past the last sequence number")
                }
                operations[Int(op.keySpaceId)].append(
                    ReplayOperation(keyOffset: offsetInLog(op.key), valueOffset: offsetInLog(op.value), sequence: seq,
                                    keyLength: UInt32(op.key.count), valueLength: UInt32(op.value.count), kind: op.kind))
                seq += 1
            }
            guard ok else {
                throw StorageError.corruption(file: path, offset: UInt64(offset), reason: "malformed write batch")
            }
            total += Int(seq - base)
            if seq > base { last = max(last, seq - 1) }
        }
        let work = operations.indices.filter { !operations[$0].isEmpty }.map { (memtables[UInt32($0)]!, operations[$0]) }
        bytes.withUnsafeBytes { raw in
            let log = UnsafeSendableBytes(raw)
            if work.count > 1 && total >= parallelReplayMinimum {
                DispatchQueue.concurrentPerform(iterations: work.count) { i in insert(work[i].1, from: log.bytes, into: work[i].0) }
            } else {
                for (mem, ops) in work { insert(ops, from: raw, into: mem) }
            }
        }
        return (last, records == 0 && !outcome.droppedTornTail)
    }

    private static func insert(_ ops: [ReplayOperation], from log: UnsafeRawBufferPointer, into mem: Memtable) {
        for op in ops {
            mem.insert(key: UnsafeRawBufferPointer(rebasing: log[op.keyOffset..<(op.keyOffset + Int(op.keyLength))]),
                       value: UnsafeRawBufferPointer(rebasing: log[op.valueOffset..<(op.valueOffset + Int(op.valueLength))]),
                       sequence: op.sequence, kind: op.kind)
        }
    }

    /// The log's bytes, read (never written) by the replay threads while the array holding
    /// them outlives them.
    private struct UnsafeSendableBytes: @unchecked Sendable {
        let bytes: UnsafeRawBufferPointer
        init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }
    }

    /// Removes files the manifest does not refer to: old manifests, WALs before the log number,
    /// segments not live, temp files. Files Strata did not name are left alone.
    static func removeObsoleteFiles(directory: String, fs: any FileSystem, versions: VersionSet, keepWal: UInt64) {
        guard let names = try? fs.listDirectory(directory) else { return }
        let live = Set(versions.current.allSegments.map(\.meta.fileNumber))
        for name in names {
            let obsolete: Bool
            switch parseFileName(name) {
            case let .wal(n)?: obsolete = n < versions.logNumber && n != keepWal
            case let .segment(n)?: obsolete = !live.contains(n)
            case let .manifest(n)?: obsolete = n != versions.manifestNumber
            case .temp?: obsolete = true
            default: obsolete = false
            }
            if obsolete { try? fs.removeFile(joinPath(directory, name)) }
        }
    }
}
