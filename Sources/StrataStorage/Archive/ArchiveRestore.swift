/// Which commit a restore from an archive rebuilds the store at.
public enum ArchivePoint: Sendable, Equatable {
    /// The last commit the archive holds.
    case latest
    /// The last commit whose sequence number is at most this one.
    case sequence(UInt64)
    /// The last commit made at or before this time, in seconds since 1970 (to the millisecond).
    case time(secondsSince1970: Double)
}

/// How ``Engine/restoreArchive(from:toDirectoryPath:at:options:)`` treats a damaged archive.
public struct ArchiveRestoreOptions: Sendable {
    /// When an archive object the restore needs is damaged or missing before the requested
    /// commit: restore the last commit before the damage (and name the object in
    /// ``ArchiveRestoreReport/stoppedAt``) instead of throwing.
    public var stopsAtDamage = false
    /// The store to restore when the target holds the archives of several (their ids are in
    /// the ``StorageError/archiveOfAnotherStore(storeIds:reason:)`` a restore without it
    /// throws); nil: the only one.
    public var storeId: UInt64?
    /// The key of an encrypted store's archive (``EngineOptions/encryptionKey``); the restored
    /// store is encrypted with it too. Without it, an encrypted archive fails with
    /// ``StorageError/encryptionKeyRequired(file:)``.
    public var encryptionKey: [UInt8]?

    public init() {}
}

/// What a restore from an archive rebuilt.
public struct ArchiveRestoreReport: Sendable, Equatable {
    /// The restored store holds every commit up to this sequence number and none after it.
    public var sequence: UInt64
    /// When that commit was made (seconds since 1970, to the millisecond), when the archive
    /// knows it (a commit replayed at an open has no time of its own).
    public var commitTime: Double?
    /// The generation (one open of the store) the commit belongs to.
    public var generation: UInt64
    public var segments: Int
    public var logBytes: UInt64
    /// The damaged or missing object that ended the restore early (with
    /// ``ArchiveRestoreOptions/stopsAtDamage``), or nil.
    public var stoppedAt: String?
    public var seconds: Double
}

extension Engine {
    /// Rebuilds the store as of one commit from a continuous archive (``EngineOptions/archive``)
    /// into `path` (missing or empty): the last commit the archive holds, the last one at or
    /// before a sequence number, or the last one made at or before a time. The archive is only
    /// read. A damaged or missing object the restore needs throws
    /// ``StorageError/corruption(file:offset:reason:)`` naming it, unless
    /// ``ArchiveRestoreOptions/stopsAtDamage`` asks for the last commit before it. The store
    /// written is checked (every checksum) before the call returns. It is the same store as the
    /// archived one (its id): opened with the same archive, it goes on as its newest generation.
    ///
    /// ```swift
    /// let target = DirectoryArchiveTarget(path: "/archive/shop")
    /// let report = try Engine.restoreArchive(from: target, toDirectoryPath: "/data/shop-at-ten",
    ///                                        at: .time(secondsSince1970: 1_796_119_200))
    /// print("restored up to sequence \(report.sequence)")
    /// ```
    @discardableResult
    public static func restoreArchive(from target: any ArchiveTarget, toDirectoryPath path: String, at point: ArchivePoint = .latest,
                                      options: ArchiveRestoreOptions = ArchiveRestoreOptions(),
                                      fileSystem: any FileSystem = PosixFileSystem()) throws -> ArchiveRestoreReport {
        let start = monotonicSeconds()
        let cipher = try options.encryptionKey.map { try StoreCipher(key: $0) }
        let target = SealingArchiveTarget.wrapping(target, cipher: cipher)
        try checkRestoreDestination(path, fileSystem: fileSystem)
        let catalog = try ArchiveCatalog.read(target, storeId: options.storeId, stopsAtDamage: options.stopsAtDamage)
        var stoppedAt = catalog.firstDamagedState
        let candidates = catalog.newestFirst
        guard !candidates.isEmpty else { throw StorageError.notAStore(path: "archive (it holds no state of a store)") }
        /// A generation's logs from its oldest state's log number (what any of its states replays).
        func history(_ g: ArchiveCatalog.Generation) -> ArchivedHistory {
            ArchivedHistory.read(g, from: g.states.map(\.logNumber).min() ?? 0, target: target)
        }

        // The generation and the commit. Only the generations looked at are read, one at a time.
        var chosen: (generation: ArchiveCatalog.Generation, history: ArchivedHistory, sequence: UInt64)
        switch point {
        case .latest:
            let g = candidates[0]
            let h = history(g)
            if let broken = h.brokenAt {
                guard options.stopsAtDamage else {
                    throw StorageError.corruption(file: broken, offset: 0, reason: "archived log damaged or missing")
                }
                stoppedAt = stoppedAt ?? broken
            }
            chosen = (g, h, h.reachable(g))
        case let .sequence(n):
            // The newest generation that reaches the commit; if none does (the archive lags),
            // the newest that has a state before it.
            var fallback: (ArchiveCatalog.Generation, ArchivedHistory)?
            var found: (ArchiveCatalog.Generation, ArchivedHistory)?
            for g in candidates where g.states.contains(where: { $0.sequence <= n }) {
                let h = history(g)
                if fallback == nil { fallback = (g, h) }
                if h.reachable(g, from: n) >= n { found = (g, h); break }
            }
            guard let (g, h) = found ?? fallback else {
                throw StorageError.invalidOption(name: "sequence", reason: "the archive holds no state at or before sequence \(n)")
            }
            chosen = (g, h, n)
        case let .time(seconds):
            guard seconds.isFinite else {
                throw StorageError.invalidOption(name: "at", reason: "\(seconds) is not a point in time")
            }
            let limit = Archiver.micros(seconds: seconds)
            var best: (g: ArchiveCatalog.Generation, h: ArchivedHistory, time: ArchivedLogPiece.CommitTime)?
            for g in candidates {
                // Commit times, and the points states were taken at (an open's has no commit).
                let h = history(g)
                let reachable = h.reachable(g)
                for t in h.logs.flatMap(\.times) + g.states.map(\.committed) where t.micros <= limit && t.sequence <= reachable {
                    if best == nil || (t.micros, t.sequence) > (best!.time.micros, best!.time.sequence) { best = (g, h, t) }
                }
            }
            guard let best else {
                throw StorageError.invalidOption(name: "time", reason: "the archive holds no commit at or before \(seconds) seconds since 1970")
            }
            chosen = (best.g, best.h, best.time.sequence)
        }
        let g = chosen.generation
        guard let state = g.states.filter({ $0.sequence <= chosen.sequence }).max(by: { ($0.sequence, $0.serial) < ($1.sequence, $1.serial) }) else {
            throw StorageError.invalidOption(name: "sequence", reason: "the archive holds no state at or before sequence \(chosen.sequence)")
        }

        // The logs from the state's log number, cut after the last commit at or before the target.
        var logs = chosen.history.logs.filter { $0.number >= state.logNumber }
        // The state's own log has no piece when nothing was written to it yet: then no later
        // log may have one either.
        if let first = logs.first, first.number != state.logNumber {
            let name = ArchiveObject.log(g.name, wal: state.logNumber, offset: 0).name
            guard options.stopsAtDamage else { throw StorageError.corruption(file: name, offset: 0, reason: "archived log piece missing") }
            stoppedAt = stoppedAt ?? name
            logs = []
        }
        var sequence = state.sequence
        var kept: [(number: UInt64, end: Int)] = []
        for (i, log) in logs.enumerated() {
            let inside = log.records.filter { $0.sequence <= chosen.sequence }
            if let last = inside.last { sequence = max(sequence, last.sequence) }
            let whole = inside.count == log.records.count
            kept.append((log.number, whole ? log.validEnd : inside.last?.end ?? 0))
            // A log that ends without its end-of-log record has no successor in the archive.
            if !whole || !log.endsWithEndOfLog || i == logs.count - 1 { break }
        }
        // Commits past what the archive holds whole: a lagging archive simply ends there (the
        // report says where); damage or a missing piece before the target is an error.
        if chosen.sequence > chosen.history.reachable(g, from: chosen.sequence), let broken = chosen.history.brokenAt {
            guard options.stopsAtDamage else {
                throw StorageError.corruption(file: broken, offset: 0, reason: "archived log damaged or missing before sequence \(chosen.sequence)")
            }
            stoppedAt = stoppedAt ?? broken
        }
        let commitTime = chosen.history.logs.lazy.flatMap(\.times).filter { $0.sequence == sequence }.map(\.micros).max()

        // The store: segments and logs, then the manifest and CURRENT (SPEC.md §3.3).
        try fileSystem.createDirectory(path)
        let lock = try fileSystem.lockFile(joinPath(path, FormatConstants.lockFileName), shared: false)
        defer { lock.release() }
        // A restore owns its destination: what an interrupted one left (the only thing
        // `checkRestoreDestination` lets through) goes first, so that none of its logs or
        // segments is read with this restore's.
        for name in try fileSystem.listDirectory(path) {
            switch StoreFile.parse(name) {
            case .wal?, .segment?, .manifest?, .temp?: try fileSystem.removeFile(joinPath(path, name))
            default: if name == FormatConstants.statsFileName { try fileSystem.removeFile(joinPath(path, name)) }
            }
        }
        try BackupMarker(current: nil, previous: nil, sequence: 0).write(in: path, fileSystem: fileSystem)
        try fileSystem.syncDirectory(path)
        var highest = max(state.nextFileNumber, state.logNumber + 1)
        for meta in state.segments {
            let name = ArchiveObject.segment(store: catalog.store, meta: meta).name
            let bytes = try target.get(name)
            guard UInt64(bytes.count) == meta.fileSize else {
                throw StorageError.corruption(file: name, offset: 0, reason: "archived segment of \(bytes.count) bytes, the state says \(meta.fileSize)")
            }
            try writeSynced(bytes[...], to: joinPath(path, StoreFile.segmentName(meta.fileNumber)), fileSystem: fileSystem)
        }
        var logBytes: UInt64 = 0
        if kept.isEmpty { kept = [(state.logNumber, 0)] }
        for log in kept {
            // Fetched again, one WAL at a time: the choice above kept no log's bytes.
            var bytes: ArraySlice<UInt8> = []
            if log.end > 0 {
                let joined = ArchivedHistory.joinedBytes(g, wal: log.number, target: target)
                guard let all = joined.bytes, all.count >= log.end else {
                    let name = joined.brokenAt ?? ArchiveObject.log(g.name, wal: log.number, offset: 0).name
                    throw StorageError.corruption(file: name, offset: 0, reason: "archived log changed while it was restored")
                }
                bytes = all[..<log.end]
            }
            try writeSynced(bytes, to: joinPath(path, StoreFile.walName(log.number)), fileSystem: fileSystem)
            logBytes += UInt64(bytes.count)
            highest = max(highest, log.number + 1)
        }
        try fileSystem.syncDirectory(path)
        var edit = VersionEdit()
        edit.formatVersion = state.formatVersion
        edit.logNumber = state.logNumber
        edit.nextFileNumber = highest + 1
        edit.lastSequence = max(state.sequence, sequence)
        // The same store: opened with the same archive, it ships as the store's next generation.
        if catalog.store != 0 { edit.storeId = catalog.store }
        // Key spaces are only ever added, with fixed ids, and a record may use one created
        // after the state: the generation's newest state lists them all, or, for a WAL an
        // earlier open left and a later one shipped, a later generation's state does (the
        // longest list that agrees with this generation's).
        let own = g.states.max(by: { $0.serial < $1.serial })?.keySpaces ?? state.keySpaces
        edit.addedKeySpaces = catalog.generations.flatMap(\.states).map(\.keySpaces)
            .filter { $0.count > own.count && Array($0.prefix(own.count)) == own }
            .max { $0.count < $1.count } ?? own
        edit.addedSegments = state.segments
        try VersionSet.writeManifest(edit, number: highest, fileSystem: fileSystem, directory: path, cipher: cipher).close()
        try VersionSet.replaceCurrent(manifestNumber: highest, fileSystem: fileSystem, directory: path)
        try fileSystem.syncDirectory(path)
        lock.release()
        // Every checksum of what was written; a problem names the archive object it came from.
        let verification = try verify(directory: path, fileSystem: fileSystem, encryptionKey: options.encryptionKey)
        if let p = verification.problems.first {
            try? fileSystem.removeFile(joinPath(path, FormatConstants.currentFileName))
            var file = p.file
            if p.file.hasSuffix(FormatConstants.segmentSuffix),
               let n = UInt64(p.file.split(separator: "/").last!.dropLast(FormatConstants.segmentSuffix.count)),
               let meta = state.segments.first(where: { $0.fileNumber == n }) {
                file = ArchiveObject.segment(store: catalog.store, meta: meta).name
            }
            throw StorageError.corruption(file: file, offset: p.offset, reason: p.reason)
        }
        try fileSystem.removeFile(joinPath(path, BackupMarker.fileName))
        try fileSystem.syncDirectory(path)
        return ArchiveRestoreReport(sequence: sequence, commitTime: commitTime.map { Double($0) / 1e6 }, generation: g.name.id,
                                    segments: state.segments.count, logBytes: logBytes, stoppedAt: stoppedAt,
                                    seconds: monotonicSeconds() - start)
    }

    /// A restore writes into a missing or empty directory, or over an interrupted restore (a
    /// `BACKUP` marker without `CURRENT`); nothing else.
    static func checkRestoreDestination(_ path: String, fileSystem: any FileSystem) throws {
        guard fileSystem.directoryExists(path) else { return }
        let names = try fileSystem.listDirectory(path)
        let interrupted = names.contains(BackupMarker.fileName) && !names.contains(FormatConstants.currentFileName)
        if !interrupted, let other = names.sorted().first(where: { !BackupMarker.isLeftOfAnEmptyDestination($0) }) {
            throw StorageError.destinationInUse(path: path, reason: "a restore needs an empty directory (it holds \(other))")
        }
    }

    private static func writeSynced(_ bytes: ArraySlice<UInt8>, to path: String, fileSystem: any FileSystem) throws {
        let file = try fileSystem.openWritable(path, truncate: true)
        do {
            try bytes.withUnsafeBytes { try file.append($0) }
            try file.sync()
        } catch {
            try? file.close()
            throw error
        }
        try file.close()
    }
}
