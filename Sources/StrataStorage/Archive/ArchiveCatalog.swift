/// What an archive holds for one store, read from its names and its states alone (SPEC.md
/// §3.3): a restore reads this first, chooses a generation and a commit, and then fetches the
/// log pieces of that generation only, one WAL at a time, so that its memory is bounded by the
/// largest WAL, not by the archive.
struct ArchiveCatalog {
    /// One generation: its states and the names of its log pieces.
    struct Generation {
        var name: ArchiveGeneration
        /// Sorted by sequence, then serial.
        var states: [ArchivedState] = []
        /// Per WAL number, its pieces by offset.
        var pieces: [UInt64: [UInt64: String]] = [:]

        /// The newest shipping time of its states: orders format-1 generations (which have no
        /// ordinal) and breaks a tie between two opens that took the same ordinal.
        var newestMicros: Int64 { states.map(\.micros).max() ?? .min }
    }

    var store: UInt64
    var generations: [Generation]
    /// A state that did not decode (with ``ArchiveRestoreOptions/stopsAtDamage``: skipped).
    var firstDamagedState: String?

    /// Generations with a state, newest first: by ordinal (the order the store opened in),
    /// then, for two that share one, by shipping time.
    var newestFirst: [Generation] {
        generations.filter { !$0.states.isEmpty }.sorted {
            ($0.name.ordinal, $0.newestMicros, $0.name.id) > ($1.name.ordinal, $1.newestMicros, $1.name.id)
        }
    }

    /// Lists the target and decodes the states of one store: `storeId`, or the only one the
    /// archive holds (a format-1 archive counts as one, unnamed; beside a store with an id it is
    /// that store's history before it had one, and the named store is chosen).
    static func read(_ target: any ArchiveTarget, storeId: UInt64?, stopsAtDamage: Bool) throws -> ArchiveCatalog {
        var objects: [(name: String, object: ArchiveObject)] = []
        for name in try target.list() {
            if let object = ArchiveObject(name: name) { objects.append((name, object)) }
        }
        let stores = Set(objects.map(\.object.store))
        let store: UInt64
        if let storeId {
            guard stores.contains(storeId) else {
                throw StorageError.notAStore(path: "archive (it holds no object of store \(ArchiveObject.hex(storeId)))")
            }
            store = storeId
        } else {
            let named = stores.subtracting([0])
            guard named.count <= 1 else {
                throw StorageError.archiveOfAnotherStore(storeIds: named.sorted(),
                                                         reason: "name the store to restore (ArchiveRestoreOptions.storeId, strata restore --store)")
            }
            store = named.first ?? 0
        }
        var byId: [ArchiveGeneration: Generation] = [:]
        var damaged: String?
        for (name, object) in objects where object.store == store {
            switch object {
            case let .state(g, _, _):
                do {
                    let state = try ArchivedState.decode(try target.get(name), name: name)
                    guard state.generation == g else {
                        throw StorageError.corruption(file: name, offset: 0, reason: "archived state of another generation")
                    }
                    byId[g, default: Generation(name: g)].states.append(state)
                } catch let e as StorageError {
                    // A damaged state is only skipped when asked; it is never used.
                    guard stopsAtDamage, case .corruption = e else { throw e }
                    damaged = damaged ?? name
                }
            case let .log(g, wal, offset):
                byId[g, default: Generation(name: g)].pieces[wal, default: [:]][offset] = name
            case .segment:
                continue
            }
        }
        for g in byId.keys { byId[g]!.states.sort { ($0.sequence, $0.serial) < ($1.sequence, $1.serial) } }
        return ArchiveCatalog(store: store, generations: Array(byId.values), firstDamagedState: damaged)
    }
}

/// One WAL of a generation as the archive holds it, summarized: where its records end and
/// their last sequence numbers, whether it ends with an end-of-log record, its commit times.
struct ArchivedLogSummary {
    var number: UInt64
    /// The generation's WAL before it (nil in a format-1 archive).
    var previous: UInt64?
    var records: [(end: Int, sequence: UInt64)]
    var endsWithEndOfLog: Bool
    var times: [ArchivedLogPiece.CommitTime]
    /// Where its last valid record ends (an end-of-log record included).
    var validEnd = 0
}

/// A generation's logs from a log number on, as far as they are whole: read WAL by WAL, each
/// one's bytes dropped once summarized.
struct ArchivedHistory {
    var logs: [ArchivedLogSummary] = []
    /// The object at which the logs stop being whole, if they do.
    var brokenAt: String?

    /// The highest sequence number the generation can be restored to from its states at or
    /// before `limit` (all of them by default): from the newest such state, as far as the logs
    /// from its log number on are whole.
    func reachable(_ g: ArchiveCatalog.Generation, from limit: UInt64 = .max) -> UInt64 {
        guard let state = g.states.last(where: { $0.sequence <= limit }) else { return 0 }
        let from = logs.drop { $0.number < state.logNumber }
        guard from.first?.number == state.logNumber else { return state.sequence }
        return max(state.sequence, from.lazy.compactMap { $0.records.last?.sequence }.max() ?? 0)
    }

    /// Reads the generation's WALs numbered `lowest` and up, in order: each one's pieces joined
    /// from offset 0 while they follow each other and are whole, each one linked to the one
    /// before it (a WAL missing in between is damage), each parsed as a log.
    static func read(_ g: ArchiveCatalog.Generation, from lowest: UInt64, target: any ArchiveTarget) -> ArchivedHistory {
        var history = ArchivedHistory()
        for wal in g.pieces.keys.sorted() where wal >= lowest {
            // A log that ends without its end-of-log record is the generation's last: a later one
            // means that its end is missing from the archive (a WAL is shipped to its end before
            // any later WAL is).
            if let before = history.logs.last, !before.endsWithEndOfLog {
                history.brokenAt = ArchiveObject.log(g.name, wal: before.number, offset: UInt64(before.validEnd)).name
                break
            }
            let joined = joinedBytes(g, wal: wal, target: target)
            guard let bytes = joined.bytes, !(bytes.isEmpty && joined.brokenAt != nil) else {
                history.brokenAt = joined.brokenAt
                break
            }
            if let before = history.logs.last, let previous = joined.previous, previous != before.number {
                // The generation wrote another WAL between these two: the archive lost it.
                history.brokenAt = ArchiveObject.log(g.name, wal: previous > before.number ? previous : wal, offset: 0).name
                break
            }
            var summary = ArchivedLogSummary(number: wal, previous: joined.previous, records: [], endsWithEndOfLog: false, times: joined.times)
            let parsed = parse(bytes, name: ArchiveObject.log(g.name, wal: wal, offset: 0).name, generation: g.name, wal: wal,
                               cipher: SealingArchiveTarget.cipher(of: target), into: &summary)
            summary.validEnd = parsed.validEnd
            history.logs.append(summary)
            if let broken = parsed.brokenAt ?? joined.brokenAt {
                history.brokenAt = broken
                history.logs[history.logs.count - 1].endsWithEndOfLog = false
                break
            }
        }
        return history
    }

    /// The bytes of WAL `wal` of `g` from offset 0, up to the first piece that is missing or
    /// damaged (named in `brokenAt`), with its pieces' commit times and previous WAL.
    static func joinedBytes(_ g: ArchiveCatalog.Generation, wal: UInt64, target: any ArchiveTarget)
        -> (bytes: [UInt8]?, brokenAt: String?, times: [ArchivedLogPiece.CommitTime], previous: UInt64?) {
        var bytes: [UInt8] = []
        var times: [ArchivedLogPiece.CommitTime] = []
        var previous: UInt64?
        for (offset, name) in (g.pieces[wal] ?? [:]).sorted(by: { $0.key < $1.key }) {
            guard offset == UInt64(bytes.count) else {
                return (bytes, ArchiveObject.log(g.name, wal: wal, offset: UInt64(bytes.count)).name, times, previous)
            }
            guard let piece = try? ArchivedLogPiece.decode(try target.get(name), name: name),
                  piece.generation == g.name, piece.wal == wal, piece.offset == offset,
                  offset == 0 || piece.previous == previous else {
                return (bytes, name, times, previous)
            }
            if offset == 0 { previous = piece.previous }
            bytes += piece.bytes
            times += piece.times
        }
        return (bytes, nil, times, previous)
    }

    /// Parses a joined WAL: its batch records (checked as recovery checks them: ``WALRecord``)
    /// and whether it ends with an end-of-log record. A record that is damage ends it there
    /// (named in `brokenAt`), and so does damage the log reader proves: never a thrown error,
    /// so that a restore that stops at damage can stop there.
    private static func parse(_ bytes: [UInt8], name: String, generation: ArchiveGeneration, wal: UInt64, cipher: StoreCipher?,
                              into summary: inout ArchivedLogSummary) -> (validEnd: Int, brokenAt: String?) {
        var records: [(end: Int, sequence: UInt64)] = []
        var endsWithEndOfLog = false
        var damagedAt: Int?
        // The plausibility check recovery makes of a record found after damage, so that a crafted
        // piece (a pattern repeating every 8 bytes) costs no more here than in a WAL (§5.2).
        final class Last { var sequence: UInt64 = 0 }
        let last = Last()
        // Joined from offset 0: an encrypted store's WAL starts with its header (SPEC.md §14.2).
        let reader = LogReader(bytes: bytes, path: name, allowsMarks: true, encryption: cipher.map { .file($0) } ?? .none) { head, count in
            WALRecord.isPlausible(payloadHead: head, payloadCount: count, after: last.sequence)
        }
        var validEnd = 0
        do {
            let outcome = try reader.forEachRecord { record in
                guard damagedAt == nil else { return }
                if record.isEndOfLog {
                    endsWithEndOfLog = true
                } else {
                    // Numbers from the archive, checked before any arithmetic: a record too short
                    // or whose sequences run past the limit is damage, not a trap.
                    guard let batch = try? WALRecord(parsing: record.payload, path: "", offset: record.offset) else {
                        damagedAt = record.offset
                        return
                    }
                    if let s = batch.lastSequence {
                        records.append((record.end, s))
                        last.sequence = s
                    }
                    endsWithEndOfLog = false
                }
                validEnd = record.end
            }
            if damagedAt == nil { validEnd = outcome.validEnd }
        } catch let StorageError.corruption(_, offset, _) {
            damagedAt = Int(clamping: offset)
        } catch {
            damagedAt = validEnd
        }
        summary.records = records
        summary.endsWithEndOfLog = damagedAt == nil && endsWithEndOfLog
        return (validEnd, damagedAt.map { ArchiveObject.log(generation, wal: wal, offset: UInt64($0)).name })
    }
}
