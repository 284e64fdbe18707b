import Dispatch

/// Opening a store (SPEC.md §Recovery): lock, read the manifest, open the live segments, replay
/// the write-ahead logs into memtables, write a fresh manifest, start a new WAL, and remove the
/// files nothing refers to.
package enum Recovery {
    struct Result {
        var lock: any FileLock
        var versions: VersionSet
        var memtables: [UInt32: Memtable]
        var lastSequence: UInt64
        /// nil when opened read-only.
        var wal: LogWriter?
        var walNumber: UInt64
        /// Replayed logs this open did not sync: the engine's first durable write syncs them
        /// first, unless a flush makes them obsolete (they join ``Engine/retiredWals``).
        var unsyncedLogs: [(number: UInt64, log: LogWriter)] = []
        /// Whether the new WAL's directory entry is not yet durable.
        var walEntryNeedsSync = false
        /// The manifest's last sequence before the logs were replayed: no write in a segment
        /// is above it (an archive state's sequence, SPEC.md §3.3).
        var segmentsSequence: UInt64 = 0
        /// Paths of segment files no manifest record names (a compaction a close stopped, a
        /// crash's orphans), which the engine removes with its first background work or at its
        /// close (``Engine/removeLeftoverSegments()``).
        var leftoverSegments: [String] = []
    }

    static func run(directory: String, options: EngineOptions, cipher: StoreCipher?, stats: StatisticsCounters, cache: BlockCache) throws -> Result {
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
           try fs.listDirectory(directory).contains(where: { StoreFile.parse($0) == nil }) {
            throw StorageError.notAStore(path: directory)
        }
        let lock = try fs.lockFile(joinPath(directory, FormatConstants.lockFileName), shared: options.readOnly)
        do {
            return try recoverLocked(directory: directory, options: options, cipher: cipher, stats: stats, cache: cache, lock: lock)
        } catch {
            lock.release()
            throw error
        }
    }

    private static func recoverLocked(directory: String, options: EngineOptions, cipher: StoreCipher?, stats: StatisticsCounters,
                                      cache: BlockCache, lock: any FileLock) throws -> Result {
        let fs = options.fileSystem
        let opener = SegmentOpener(open: { meta in
            let path = joinPath(directory, StoreFile.segmentName(meta.fileNumber))
            let reader = try SegmentReader.open(fileSystem: fs, path: path, fileNumber: meta.fileNumber, cache: cache, stats: stats,
                                                cipher: cipher)
            // Size, key space and key range together: a segment file swapped for another one
            // (a restored backup, a copy gone wrong) is refused instead of answering for it.
            guard reader.fileSize == meta.fileSize, reader.properties.keySpaceId == meta.keySpaceId,
                  reader.properties.smallestKey == meta.smallest, reader.properties.largestKey == meta.largest,
                  reader.properties.entryCount == meta.entryCount else {
                throw StorageError.corruption(file: path, offset: 0, reason: "segment does not match its manifest record")
            }
            return reader
        }, remove: { meta in
            try? fs.removeFile(joinPath(directory, StoreFile.segmentName(meta.fileNumber)))
        })
        var names = try fs.listDirectory(directory)
        // Modes an older build gave the store's files, tightened from the same listing.
        if !options.readOnly {
            fs.restrictPermissions(ofStoreDirectory: directory, files: names.filter { StoreFile.parse($0) != nil })
        }
        let isNew = !fs.fileExists(joinPath(directory, FormatConstants.currentFileName))
        let versions: VersionSet
        if isNew {
            guard options.createIfMissing else { throw StorageError.notAStore(path: directory) }
            let kinds = names.compactMap(StoreFile.parse)
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
                    switch StoreFile.parse(name) {
                    case .manifest?, .temp?: try fs.removeFile(joinPath(directory, name))
                    default: break
                    }
                }
                names = try fs.listDirectory(directory)
            }
            versions = VersionSet.create(fileSystem: fs, directory: directory, stats: stats, opener: opener, cipher: cipher)
        } else {
            versions = try VersionSet.recover(fileSystem: fs, directory: directory, stats: stats, opener: opener, cipher: cipher)
        }
        versions.roll = ManifestRollRule(minimumBytes: options.manifestRollMinimumBytes, liveMultiple: options.manifestRollLiveMultiple)
        // The segments open on first use (``LiveSegment``); that their files are there is
        // known from the listing, with no call per segment.
        let listed = Set(names)
        for segment in versions.current.allSegments where !listed.contains(StoreFile.segmentName(segment.meta.fileNumber)) {
            throw StorageError.corruption(file: joinPath(directory, StoreFile.segmentName(segment.meta.fileNumber)), offset: 0,
                                          reason: "live segment file is missing")
        }

        // The WAL the manifest's log number names is deleted only after a later edit raises the
        // log number. Missing, it means that later edits were lost (a damaged or truncated
        // manifest read as a torn tail): refuse instead of opening an older state.
        if !isNew, versions.logNumber > 0, !fs.fileExists(joinPath(directory, StoreFile.walName(versions.logNumber))) {
            throw StorageError.corruption(file: joinPath(directory, StoreFile.manifestName(versions.manifestNumber)), offset: 0,
                                          reason: "the log number names \(StoreFile.walName(versions.logNumber)), which does not exist: later manifest records are lost")
        }

        // Never reuse a number that a file on disk already has.
        var wals: [UInt64] = []
        for name in names {
            switch StoreFile.parse(name) {
            case let .wal(n)?: versions.markFileNumberUsed(n); if n >= versions.logNumber { wals.append(n) }
            case let .segment(n)?, let .manifest(n)?: versions.markFileNumberUsed(n)
            default: break
            }
        }
        wals.sort()

        var memtables: [UInt32: Memtable] = [:]
        for ks in versions.keySpaces { memtables[ks.id] = Memtable(keySpaceId: ks.id, expectedBytes: options.memtableBytes) }
        // Every log's entries are written first and linked once all are read (``MemtableLoader``).
        let loaders = memtables.mapValues(MemtableLoader.init)
        var lastSequence = versions.lastSequence
        let segmentsSequence = lastSequence
        // Which logs are replayed, and where the history they hold ends (``WALReplay``).
        let decisions = try WALReplay.decide(logs: wals, after: lastSequence, scan: { n, start in
            try replay(wal: joinPath(directory, StoreFile.walName(n)), fs: fs, cipher: cipher, into: loaders, after: start)
        }, hasDurableMark: { n, start in
            try logHasDurableMark(joinPath(directory, StoreFile.walName(n)), fs: fs, cipher: cipher, after: start)
        })
        // WALs that hold no record: every open makes a new WAL, and while the replayed data
        // stays in the memtables the log number cannot move past the older ones, so opens
        // without writes would pile up empty logs (each read again by every later open).
        var emptyWals: [UInt64] = []
        // The log where the history recovery can vouch for ends (SPEC.md §5.2, §8).
        var torn: (number: UInt64, validEnd: Int)?
        var replayed: [(number: UInt64, validEnd: Int, endsWithEndOfLog: Bool)] = []
        var discarded: [UInt64] = []
        for d in decisions {
            switch d.verdict {
            case let .corrupt(offset, later):
                throw WALReplay.corruption(directory: directory, log: d.number, offset: offset, vouchedBy: later)
            case .discard:
                discarded.append(d.number)
            case let .replay(endsHistory):
                let scan = d.scan!
                lastSequence = max(lastSequence, scan.lastSequence)
                replayed.append((d.number, scan.validEnd, scan.sawEndOfLog))
                if scan.isEmpty { emptyWals.append(d.number) }
                if endsHistory { torn = (d.number, scan.validEnd) }
            }
        }
        finishLoading(Array(loaders.values))
        versions.noteLastSequence(lastSequence)
        if options.readOnly {
            // Nothing is written: no new manifest, no WAL, no clean-up.
            return Result(lock: lock, versions: versions, memtables: memtables, lastSequence: lastSequence,
                          wal: nil, walNumber: 0, segmentsSequence: segmentsSequence)
        }

        try settleReplayedLogs(directory: directory, fs: fs, cipher: cipher, torn: torn, discarded: discarded)

        if isNew {
            // A fresh store gets its default key space in its first manifest.
            try versions.addInitialKeySpace(KeySpace(id: 0, name: "default"))
            memtables[0] = Memtable(keySpaceId: 0, expectedBytes: options.memtableBytes)
        }
        let appending = isNew ? false : try versions.reopenManifestForAppend()
        if !appending { try versions.writeSnapshotManifest() }

        let walNumber = versions.newFileNumber()
        let walPath = joinPath(directory, StoreFile.walName(walNumber))
        let wal = try LogWriter.create(file: try fs.openLog(walPath), path: walPath, cipher: cipher)
        // The new WAL's directory entry must be durable before any manifest record names it and
        // before any durable write to it. A record naming it is logged now only when no older
        // WAL holds unflushed data (the new one is then where the log starts); otherwise the
        // directory sync is left to the first durable write (`Engine.walEntryNeedsSync`), and a
        // flush's record names a WAL started later, whose rotation syncs the directory. An open
        // of a store closed with unflushed writes thus makes no sync at all (SPEC.md §8).
        let logStartsHere = memtables.values.allSatisfy(\.isEmpty)
        if logStartsHere {
            try fs.syncDirectory(directory)
            try versions.setLogNumber(walNumber)
        }

        let leftoverSegments = removeObsoleteFiles(directory: directory, fs: fs, versions: versions, keepWal: walNumber,
                                                   keepsArchivedWals: options.archive != nil)
        // The one the log number names stays: an open checks that it exists.
        var removed = Set<UInt64>()
        for n in emptyWals where n != versions.logNumber && n != walNumber {
            try? fs.removeFile(joinPath(directory, StoreFile.walName(n)))
            removed.insert(n)
        }
        // The replayed logs that still matter (not cut back and synced as torn, not removed as
        // empty, not made obsolete by the log number) are not synced here: like a WAL retired at
        // a rotation, each is synced by the first durable write, before the record whose mark
        // vouches for it (SPEC.md §5.1), or never, when a flush makes it obsolete first. An open
        // of a store closed with unflushed data thus costs no sync of its log.
        //
        // Each must end with an end-of-log record, as a log the writer moved on from does: a log
        // the previous process left without one (it was killed) would otherwise stop the next
        // recovery from replaying the new log after it, since no durable mark vouches for it
        // until the first durable write. The record is appended after the valid records (a
        // killed writer's reserved zeros are cut first), not synced: a power cut that takes it
        // can only take the new log's non-durable writes along.
        var unsynced: [(number: UInt64, log: LogWriter)] = []
        do {
            for r in replayed where r.number != torn?.number && !removed.contains(r.number) && r.number >= versions.logNumber {
                unsynced.append((r.number, try endReplayedLog(r.number, validEnd: r.validEnd, endsWithEndOfLog: r.endsWithEndOfLog,
                                                              directory: directory, fs: fs, cipher: cipher)))
            }
        } catch {
            for u in unsynced { try? u.log.close() }
            try? wal.close()
            throw error
        }
        // With none left to sync, every older log is durable: the first record says so.
        if unsynced.isEmpty { wal.noteEarlierLogsDurable() }
        return Result(lock: lock, versions: versions, memtables: memtables, lastSequence: lastSequence,
                      wal: wal, walNumber: walNumber, unsyncedLogs: unsynced, walEntryNeedsSync: !logStartsHere,
                      segmentsSequence: segmentsSequence, leftoverSegments: leftoverSegments)
    }

    /// Makes this open's verdict on a torn log permanent before anything new is logged:
    /// - logs after a torn one hold no durable write (checked by the caller) and are removed,
    ///   first, so that a crash in between leaves the same verdict for the next open;
    /// - the torn log is cut back to its valid prefix, ended with an end-of-log record and
    ///   synced, or the next open would find its torn point again and drop every later log,
    ///   this open's writes among them.
    /// The other replayed logs are left to the first durable write (``run``'s `unsyncedLogs`).
    static func settleReplayedLogs(directory: String, fs: any FileSystem, cipher: StoreCipher?,
                                   torn: (number: UInt64, validEnd: Int)?, discarded: [UInt64]) throws {
        if !discarded.isEmpty {
            for n in discarded { try fs.removeFile(joinPath(directory, StoreFile.walName(n))) }
            try fs.syncDirectory(directory)
        }
        guard let torn else { return }
        // It ends here now: the new log is replayed after it even before a durable mark vouches
        // for the older logs (see `unsyncedLogs`).
        let log = try endReplayedLog(torn.number, validEnd: torn.validEnd, endsWithEndOfLog: false, directory: directory, fs: fs, cipher: cipher)
        do {
            try log.sync()
            try log.close()
        } catch {
            try? log.close()
            throw error
        }
    }

    /// Opens replayed log `number` for appending, cut back to its valid records (a torn tail, or
    /// a killed writer's reserved zeros) and ended with an end-of-log record unless its last
    /// record is one. Not synced.
    private static func endReplayedLog(_ number: UInt64, validEnd: Int, endsWithEndOfLog: Bool, directory: String,
                                       fs: any FileSystem, cipher: StoreCipher?) throws -> LogWriter {
        let path = joinPath(directory, StoreFile.walName(number))
        let log = try LogWriter.reopen(path, validEnd: validEnd, fileSystem: fs, cipher: cipher)
        do {
            if !endsWithEndOfLog { try log.appendEndOfLog() }
        } catch {
            try? log.close()
            throw error
        }
        return log
    }

    /// Whether any valid record of a log carries a durable mark.
    static func logHasDurableMark(_ path: String, fs: any FileSystem, cipher: StoreCipher?, after start: UInt64) throws -> Bool {
        let file = try fs.openReadable(path)
        defer { file.close() }
        return try walReader(file, path: path, cipher: cipher, after: start).forEachRecord { _ in }.sawDurableMark
    }

    /// A reader of a WAL whose records follow sequence `start`. A record found after damage
    /// only counts as "valid" if it also looks like a batch that follows on
    /// (``WALRecord/isPlausible(payloadHead:payloadCount:after:)``): that keeps random garbage
    /// in a torn tail from passing as a record.
    static func walReader(_ file: any ReadableFile, path: String, cipher: StoreCipher?, after start: UInt64,
                          windowBytes: Int = replayWindowBytes) -> LogReader {
        LogReader(file: file, path: path, allowsMarks: true, maxRecordBytes: WALRecord.maxBytes, windowBytes: windowBytes,
                  encryption: cipher.map { .file($0) } ?? .none) { head, count in
            WALRecord.isPlausible(payloadHead: head, payloadCount: count, after: start)
        }
    }

    /// One operation of a WAL being replayed: where its key and value lie in the reader's window.
    private struct ReplayOperation: @unchecked Sendable {
        // @unchecked Sendable: the pointers are into the reader's window, which does not move until
        // the parallel inserts that read them have returned.
        var key: UnsafeRawPointer?
        var value: UnsafeRawPointer?
        var sequence: UInt64
        var keyLength: UInt32
        var valueLength: UInt32
        var kind: EntryKind
    }

    /// Windows with fewer operations are replayed on the opening thread alone.
    static let parallelReplayMinimum = 4_096

    /// The replay reads its log through a window of this size, inserting each window's
    /// operations before it moves on. Small enough that the window and the operation lists stay
    /// in memory already touched: with a window the size of the log (2.3 MB of the object-graph
    /// benchmark's), a fresh process's open faulted in every page of both, a quarter of its time.
    static let replayWindowBytes = 256 << 10

    /// The operations of the replay's window not yet inserted, by key space. A class, because
    /// the reader's window-move callback shares them with the record loop: as a captured `var`,
    /// every append paid the runtime's exclusivity check (80 instructions, an eighth of an
    /// operation's replay). Only the opening thread touches them (the parallel inserts read
    /// copies).
    private final class ReplayLists {
        @exclusivity(unchecked) var operations: [[ReplayOperation]]
        /// Operations in `operations`.
        @exclusivity(unchecked) var pending = 0

        init(keySpaces: Int) { operations = Array(repeating: [], count: keySpaces) }
    }

    /// Replays one WAL into the memtables' loaders.
    ///
    /// The log is read through a window of bounded size (``LogReader``), so replay's memory is
    /// the memtables plus the window or the largest record, not the log. The operations of the
    /// records in the window are decoded and checked first; when the window moves on, each key
    /// space's operations are written to its memtable's arena in log order, the key spaces on
    /// separate threads (different memtables share nothing); ``finishLoading(_:)`` links them
    /// once every log is read. A malformed record fails the open before anything after it is
    /// written; what was written before goes with the failed open.
    package static func replay(wal path: String, fs: any FileSystem, cipher: StoreCipher?, into loaders: [UInt32: MemtableLoader],
                       after start: UInt64) throws -> WALScan {
        var last = start
        let file = try fs.openReadable(path)
        defer { file.close() }
        let reader = walReader(file, path: path, cipher: cipher, after: start)
        // Indexed by key space id (ids are small and dense): a dictionary lookup per
        // operation showed in the profile.
        let lists = ReplayLists(keySpaces: Int(loaders.keys.max() ?? 0) + 1)
        var known = [Bool](repeating: false, count: lists.operations.count)
        for id in loaders.keys { known[Int(id)] = true }
        var records = 0
        func insertPending() {
            guard lists.pending > 0 else { return }
            let work = lists.operations.indices.filter { !lists.operations[$0].isEmpty }.map { (loaders[UInt32($0)]!, lists.operations[$0]) }
            if work.count > 1 && lists.pending >= parallelReplayMinimum {
                DispatchQueue.concurrentPerform(iterations: work.count) { i in add(work[i].1, to: work[i].0) }
            } else {
                for (loader, ops) in work { add(ops, to: loader) }
            }
            for i in lists.operations.indices { lists.operations[i].removeAll(keepingCapacity: true) }
            lists.pending = 0
        }
        reader.beforeWindowMoves = { insertPending() }
        let outcome = try reader.forEachRecord { record in
            if record.isEndOfLog { return }
            records += 1
            let offset = record.offset
            let batch = try WALRecord(parsing: record.payload, path: path, offset: offset)
            var seq = batch.firstSequence
            try batch.forEachOperation(path: path, offset: offset) { op in
                guard Int(op.keySpaceId) < known.count, known[Int(op.keySpaceId)] else {
                    throw StorageError.corruption(file: path, offset: UInt64(offset), reason: "WAL record for unknown key space \(op.keySpaceId)")
                }
                lists.operations[Int(op.keySpaceId)].append(
                    ReplayOperation(key: op.key.baseAddress, value: op.value.baseAddress, sequence: seq,
                                    keyLength: UInt32(op.key.count), valueLength: UInt32(op.value.count), kind: op.kind))
                seq += 1
            }
            lists.pending += Int(batch.operationCount)
            if let end = batch.lastSequence { last = max(last, end) }
        }
        insertPending()
        return WALScan(lastSequence: last, records: records, torn: outcome.droppedTornTail, validEnd: outcome.validEnd,
                       sawEndOfLog: outcome.sawEndOfLog, sawDurableMark: outcome.sawDurableMark)
    }

    private static func add(_ ops: [ReplayOperation], to loader: MemtableLoader) {
        for op in ops {
            loader.add(key: UnsafeRawBufferPointer(start: op.key, count: Int(op.keyLength)),
                       value: UnsafeRawBufferPointer(start: op.value, count: Int(op.valueLength)),
                       sequence: op.sequence, kind: op.kind)
        }
    }

    /// Links what the replay wrote into each memtable, the memtables on separate threads when
    /// there is enough to do.
    package static func finishLoading(_ loaders: [MemtableLoader]) {
        let work = loaders.filter { !$0.isEmpty }
        if work.count > 1 && work.reduce(0, { $0 + $1.memtable.entryCount }) >= parallelReplayMinimum {
            DispatchQueue.concurrentPerform(iterations: work.count) { i in work[i].finish() }
        } else {
            for loader in work { loader.finish() }
        }
    }

    /// Removes files the manifest does not refer to: old manifests, WALs before the log number,
    /// temp files; returns the paths of segments not live, which the engine removes later
    /// (``Engine/removeLeftoverSegments()``). Files Strata did not name are left alone. With
    /// `keepsArchivedWals` (a store opened with an archive), a WAL before the log number that an
    /// archive generation wrote stays: the archiver ships what the archive lacks of it, then
    /// removes it (SPEC.md §3.3).
    ///
    /// Why segments later: they are what a close leaves when it stops a compaction (its outputs,
    /// up to tens of files of freshly written pages), and unlinking them cost that close 0.7–2.1 ms
    /// of an encrypted store's reopen (4–17 files, the object-graph benchmark, 2026-12-08); here,
    /// the open would pay it instead. Their numbers are marked used before this runs, so no new
    /// file takes one while they wait.
    static func removeObsoleteFiles(directory: String, fs: any FileSystem, versions: VersionSet, keepWal: UInt64,
                                    keepsArchivedWals: Bool = false) -> [String] {
        guard let names = try? fs.listDirectory(directory) else { return [] }
        let live = Set(versions.current.allSegments.map(\.meta.fileNumber))
        var leftovers: [String] = []
        for name in names {
            let obsolete: Bool
            switch StoreFile.parse(name) {
            case let .wal(n)?:
                let owned = keepsArchivedWals && versions.archiveLogOwners.contains { $0.firstWal <= n }
                obsolete = n < versions.logNumber && n != keepWal && !owned
            case let .segment(n)?:
                if !live.contains(n) { leftovers.append(joinPath(directory, name)) }
                obsolete = false
            case let .manifest(n)?: obsolete = n != versions.manifestNumber
            case .temp?: obsolete = true
            default: obsolete = false
            }
            if obsolete { try? fs.removeFile(joinPath(directory, name)) }
        }
        return leftovers
    }
}
