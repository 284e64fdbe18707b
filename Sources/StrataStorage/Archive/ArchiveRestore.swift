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

/// One generation's history in an archive: its states, and its logs as far as they are whole.
private struct ArchivedGeneration {
    var id: UInt64
    var states: [ArchivedState] = []
    /// Per WAL number, its pieces by offset.
    var pieces: [UInt64: [UInt64: String]] = [:]
    /// Assembled logs (see `assemble`).
    var logs: [AssembledLog] = []
    /// The object at which the logs stop being whole, if they do.
    var brokenAt: String?

    var newest: Int64 { states.map(\.micros).max() ?? .min }
}

/// One WAL as the archive holds it: its bytes from 0 and its records' ends and sequences.
private struct AssembledLog {
    var number: UInt64
    var bytes: [UInt8]
    /// Each batch record: where it ends, and its last sequence number.
    var records: [(end: Int, sequence: UInt64)]
    var endsWithEndOfLog: Bool
    var times: [ArchivedLogPiece.CommitTime]
}

extension Engine {
    /// Rebuilds the store as of one commit from a continuous archive (``EngineOptions/archive``)
    /// into `path` (missing or empty): the last commit the archive holds, the last one at or
    /// before a sequence number, or the last one made at or before a time. The archive is only
    /// read. A damaged or missing object the restore needs throws
    /// ``StorageError/corruption(file:offset:reason:)`` naming it, unless
    /// ``ArchiveRestoreOptions/stopsAtDamage`` asks for the last commit before it. The store
    /// written is checked (every checksum) before the call returns.
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
        try checkRestoreDestination(path, fileSystem: fileSystem)
        var generations: [UInt64: ArchivedGeneration] = [:]
        var stoppedAt: String?
        for name in try target.list() {
            switch ArchiveObject(name: name) {
            case let .state(g, _, _)?:
                do {
                    let state = try ArchivedState.decode(try target.get(name), name: name)
                    guard state.generation == g else { throw StorageError.corruption(file: name, offset: 0, reason: "archived state of another generation") }
                    generations[g, default: ArchivedGeneration(id: g)].states.append(state)
                } catch let e as StorageError {
                    // A damaged state is only skipped when asked; it is never used.
                    guard options.stopsAtDamage, case .corruption = e else { throw e }
                    stoppedAt = stoppedAt ?? name
                }
            case let .log(g, wal, offset)?:
                generations[g, default: ArchivedGeneration(id: g)].pieces[wal, default: [:]][offset] = name
            default:
                continue
            }
        }
        for g in generations.keys { try generations[g]!.assemble(target) }

        // The generation and the commit.
        let chosen: (generation: ArchivedGeneration, sequence: UInt64)
        switch point {
        case .latest:
            guard let g = generations.values.filter({ !$0.states.isEmpty }).max(by: { $0.newest < $1.newest }) else {
                throw StorageError.notAStore(path: "archive (it holds no state of a store)")
            }
            if let broken = g.brokenAt {
                guard options.stopsAtDamage else {
                    throw StorageError.corruption(file: broken, offset: 0, reason: "archived log damaged or missing")
                }
                stoppedAt = stoppedAt ?? broken
            }
            chosen = (g, g.reachable)
        case let .sequence(n):
            // The newest generation that reaches the commit; if none does (the archive lags),
            // the newest that has a state before it.
            let candidates = generations.values.filter { g in g.states.contains { $0.sequence <= n } }.sorted { $0.newest > $1.newest }
            guard let g = candidates.first(where: { $0.reachable >= n }) ?? candidates.first else {
                throw StorageError.invalidOption(name: "sequence", reason: "the archive holds no state at or before sequence \(n)")
            }
            chosen = (g, n)
        case let .time(seconds):
            guard seconds.isFinite else {
                throw StorageError.invalidOption(name: "at", reason: "\(seconds) is not a point in time")
            }
            let limit = Archiver.micros(seconds: seconds)
            var best: (g: ArchivedGeneration, time: ArchivedLogPiece.CommitTime)?
            for g in generations.values where !g.states.isEmpty {
                // Commit times, and the points states were taken at (an open's has no commit).
                for t in g.logs.flatMap(\.times) + g.states.map(\.committed) where t.micros <= limit && t.sequence <= g.reachable {
                    if best == nil || (t.micros, t.sequence) > (best!.time.micros, best!.time.sequence) { best = (g, t) }
                }
            }
            guard let best else {
                throw StorageError.invalidOption(name: "time", reason: "the archive holds no commit at or before \(seconds) seconds since 1970")
            }
            chosen = (best.g, best.time.sequence)
        }
        let g = chosen.generation
        guard let state = g.states.filter({ $0.sequence <= chosen.sequence }).max(by: { ($0.sequence, $0.serial) < ($1.sequence, $1.serial) }) else {
            throw StorageError.invalidOption(name: "sequence", reason: "the archive holds no state at or before sequence \(chosen.sequence)")
        }

        // The logs from the state's log number, cut after the last commit at or before the target.
        var logs = g.logs.filter { $0.number >= state.logNumber }
        // The state's own log has no piece when nothing was written to it yet: then no later
        // log may have one either.
        if let first = logs.first, first.number != state.logNumber {
            let name = ArchiveObject.log(generation: g.id, wal: state.logNumber, offset: 0).name
            guard options.stopsAtDamage else { throw StorageError.corruption(file: name, offset: 0, reason: "archived log piece missing") }
            stoppedAt = stoppedAt ?? name
            logs = []
        }
        var sequence = state.sequence
        var kept: [(number: UInt64, bytes: ArraySlice<UInt8>)] = []
        for (i, log) in logs.enumerated() {
            let inside = log.records.filter { $0.sequence <= chosen.sequence }
            if let last = inside.last { sequence = max(sequence, last.sequence) }
            let whole = inside.count == log.records.count
            kept.append((log.number, whole ? log.bytes[...] : log.bytes[..<(inside.last?.end ?? 0)]))
            // A log that ends without its end-of-log record has no successor in the archive.
            if !whole || !log.endsWithEndOfLog || i == logs.count - 1 { break }
        }
        // Commits past what the archive holds whole: a lagging archive simply ends there (the
        // report says where); damage or a missing piece before the target is an error.
        if chosen.sequence > g.reachable, let broken = g.brokenAt {
            guard options.stopsAtDamage else {
                throw StorageError.corruption(file: broken, offset: 0, reason: "archived log damaged or missing before sequence \(chosen.sequence)")
            }
            stoppedAt = stoppedAt ?? broken
        }
        let commitTime = g.logs.lazy.flatMap(\.times).filter { $0.sequence == sequence }.map(\.micros).max()

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
            let name = ArchiveObject.segment(number: meta.fileNumber).name
            let bytes = try target.get(name)
            guard UInt64(bytes.count) == meta.fileSize else {
                throw StorageError.corruption(file: name, offset: 0, reason: "archived segment of \(bytes.count) bytes, the state says \(meta.fileSize)")
            }
            try writeSynced(bytes[...], to: joinPath(path, StoreFile.segmentName(meta.fileNumber)), fileSystem: fileSystem)
        }
        var logBytes: UInt64 = 0
        if kept.isEmpty { kept = [(state.logNumber, [])] }
        for log in kept {
            try writeSynced(log.bytes, to: joinPath(path, StoreFile.walName(log.number)), fileSystem: fileSystem)
            logBytes += UInt64(log.bytes.count)
            highest = max(highest, log.number + 1)
        }
        try fileSystem.syncDirectory(path)
        var edit = VersionEdit()
        edit.formatVersion = state.formatVersion
        edit.logNumber = state.logNumber
        edit.nextFileNumber = highest + 1
        edit.lastSequence = max(state.sequence, sequence)
        // Key spaces are only ever added, with fixed ids, and a record may use one created
        // after the state: the generation's newest state lists them all.
        edit.addedKeySpaces = g.states.max(by: { $0.serial < $1.serial })?.keySpaces ?? state.keySpaces
        edit.addedSegments = state.segments
        try VersionSet.writeManifest(edit, number: highest, fileSystem: fileSystem, directory: path).close()
        try VersionSet.replaceCurrent(manifestNumber: highest, fileSystem: fileSystem, directory: path)
        try fileSystem.syncDirectory(path)
        lock.release()
        // Every checksum of what was written; a problem names the archive object it came from.
        let verification = try verify(directory: path, fileSystem: fileSystem)
        if let p = verification.problems.first {
            try? fileSystem.removeFile(joinPath(path, FormatConstants.currentFileName))
            let file = p.file.hasSuffix(FormatConstants.segmentSuffix)
                ? ArchiveObject.segment(number: UInt64(p.file.split(separator: "/").last!.dropLast(FormatConstants.segmentSuffix.count)) ?? 0).name
                : p.file
            throw StorageError.corruption(file: file, offset: p.offset, reason: p.reason)
        }
        try fileSystem.removeFile(joinPath(path, BackupMarker.fileName))
        try fileSystem.syncDirectory(path)
        return ArchiveRestoreReport(sequence: sequence, commitTime: commitTime.map { Double($0) / 1e6 }, generation: g.id,
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

extension ArchivedGeneration {
    /// The highest sequence number the generation can be restored to.
    var reachable: UInt64 {
        max(states.map(\.sequence).max() ?? 0, logs.flatMap(\.records).map(\.sequence).max() ?? 0)
    }

    /// Reads every piece, and joins each WAL's pieces from offset 0 while they follow each other
    /// and are whole; records where the logs stop being whole.
    mutating func assemble(_ target: any ArchiveTarget) throws {
        states.sort { ($0.sequence, $0.serial) < ($1.sequence, $1.serial) }
        for wal in pieces.keys.sorted() {
            var bytes: [UInt8] = []
            var times: [ArchivedLogPiece.CommitTime] = []
            var broken = false
            for (offset, name) in pieces[wal]!.sorted(by: { $0.key < $1.key }) {
                guard offset == UInt64(bytes.count) else {
                    brokenAt = brokenAt ?? ArchiveObject.log(generation: id, wal: wal, offset: UInt64(bytes.count)).name
                    broken = true
                    break
                }
                guard let piece = try? ArchivedLogPiece.decode(try target.get(name), name: name),
                      piece.generation == id, piece.wal == wal, piece.offset == offset else {
                    brokenAt = brokenAt ?? name
                    broken = true
                    break
                }
                bytes += piece.bytes
                times += piece.times
            }
            if broken && bytes.isEmpty { break }
            var records: [(end: Int, sequence: UInt64)] = []
            var endsWithEndOfLog = false
            var craftedAt: Int?
            let reader = LogReader(bytes: bytes, path: ArchiveObject.log(generation: id, wal: wal, offset: 0).name, allowsMarks: true)
            let outcome = try reader.forEachRecord { record in
                if record.isEndOfLog {
                    endsWithEndOfLog = true
                } else if craftedAt == nil {
                    // Numbers from the archive, checked before any arithmetic (``WALRecord``): a
                    // record too short or whose sequences run past the limit is damage, not a trap.
                    guard let batch = try? WALRecord(parsing: record.payload, path: "", offset: record.offset) else {
                        craftedAt = record.offset
                        return
                    }
                    if let last = batch.lastSequence { records.append((record.end, last)) }
                    endsWithEndOfLog = false
                }
            }
            // The log up to the record that is damage (the record before it ends there).
            let validEnd = craftedAt ?? outcome.validEnd
            if let craftedAt {
                brokenAt = brokenAt ?? ArchiveObject.log(generation: id, wal: wal, offset: UInt64(craftedAt)).name
                broken = true
                endsWithEndOfLog = false
            }
            logs.append(AssembledLog(number: wal, bytes: Array(bytes[..<validEnd]), records: records,
                                     endsWithEndOfLog: endsWithEndOfLog, times: times))
            if broken { break }
        }
    }
}
