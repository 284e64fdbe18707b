import Dispatch

/// How far a replica has come (``Engine/replicaStatus()``).
public struct ReplicaStatus: Sendable, Equatable {
    /// Every commit of the primary up to this sequence number is applied (and readable).
    public var appliedSequence: UInt64
    /// The primary's generation (one open of it) the replica follows: its ordinal and id.
    public var generationOrdinal: UInt64
    public var generationId: UInt64
    /// When the last applied commit was made on the primary (seconds since 1970), when the
    /// archive says (commits replayed at an open of the primary have no time of their own).
    public var lastAppliedCommitTime: Double?
    /// Seconds between the last applied commit on the primary and its application here.
    public var lastApplyLag: Double?
    /// Rounds (looks at the archive) done, and the last round's failure while failures go on.
    public var rounds: Int
    public var lastError: String?
    /// Set when the replica stopped following for good (damage or a gap in the archive, a
    /// primary that lost commits the replica applied): it still serves what it applied.
    public var stoppedBecause: String?
}

/// One operation of a batch a replica applied, as the layer above learns it
/// (``Engine/setReplicaObserver(priorValuesIn:_:)``): whether the key held a value before, for
/// the key spaces the observer asked about (a point read each, so only where it matters: the
/// object layer's objects), nil elsewhere.
package struct ReplicatedOperation: Sendable {
    package var keySpaceId: UInt32
    package var key: [UInt8]
    package var isDeletion: Bool
    package var existed: Bool?
}

/// Follows a store's archive (SPEC.md §3.4) on a thread of its own and commits the primary's
/// batches, with the primary's sequence numbers, into a replica's engine: readers see whole
/// transactions only, in order. Reads the log pieces of one generation in WAL order from where
/// it stopped (pieces begin and end at commit boundaries), checks each WAL's link to the one
/// before, and moves to the primary's next generation when that one goes on from what it
/// applied.
final class ArchiveFollower: @unchecked Sendable {
    // @unchecked Sendable: the mutable state below is either guarded by `lock` or owned by the
    // follower's thread (`position`).
    let target: any ArchiveTarget
    let directory: String
    let fileSystem: any FileSystem
    let pollInterval: Double
    private weak var engine: Engine?

    private let lock = ConditionLock()
    // Guarded by `lock`.
    private var status: ReplicaStatus
    private var stopping = false
    /// Set by the thread as it ends: a second ``stop(timeout:)`` (a close, then the deinit's)
    /// returns at once.
    private var finished = false
    private var wakeRequested = false
    private var observer: (priorValuesIn: Set<UInt32>, body: @Sendable ([ReplicatedOperation]) -> Void)?
    private let done = DispatchSemaphore(value: 0)

    // Owned by the follower's thread.
    private var position: ReplicaPosition
    /// The position `REPLICA` holds.
    private var saved: ReplicaPosition?
    /// The sealer of the WAL being followed, from its header in the piece at offset 0, when the
    /// primary is encrypted: what opens the records of its later pieces (SPEC.md §14.5).
    private var walSealer: (generation: ArchiveGeneration, wal: UInt64, sealer: FileSealer)?

    init(engine: Engine, target: any ArchiveTarget, position: ReplicaPosition, pollInterval: Double) {
        self.engine = engine
        self.target = target
        self.directory = engine.directory
        self.fileSystem = engine.fileSystem
        self.pollInterval = pollInterval
        self.position = position
        status = ReplicaStatus(appliedSequence: position.applied, generationOrdinal: position.generation.ordinal,
                               generationId: position.generation.id, lastAppliedCommitTime: nil, lastApplyLag: nil,
                               rounds: 0, lastError: nil, stoppedBecause: nil)
    }

    func start() {
        DispatchQueue(label: "strata.replica").async { [self] in run() }
    }

    func currentStatus() -> ReplicaStatus { lock.withLock { status } }

    func setObserver(priorValuesIn keySpaces: Set<UInt32>, _ body: @escaping @Sendable ([ReplicatedOperation]) -> Void) {
        lock.withLock { observer = (keySpaces, body) }
    }

    /// Looks at the archive now and waits until a round that began after the call has ended;
    /// throws its failure, or when the follower has stopped for good.
    func catchUp(timeout: Double) throws {
        let deadline = monotonicSeconds() + timeout
        lock.lock()
        defer { lock.unlock() }
        let start = status.rounds
        wakeRequested = true
        lock.broadcast()
        while status.rounds < start + 2 {
            if let stopped = status.stoppedBecause { throw StorageError.corruption(file: "archive", offset: 0, reason: stopped) }
            if stopping { throw StorageError.closed }
            let left = deadline - monotonicSeconds()
            if left <= 0 { throw StorageError.io(operation: "replica: not caught up after \(timeout) s", path: directory, errno: 0) }
            lock.wait(timeoutSeconds: min(left, 0.05))
        }
        if let e = status.lastError { throw StorageError.io(operation: "replica: \(e)", path: directory, errno: 0) }
    }

    /// Ends the thread after its current round, waiting at most `timeout` seconds.
    func stop(timeout: Double) {
        let running: Bool = lock.withLock {
            stopping = true
            lock.broadcast()
            return !finished
        }
        guard running else { return }
        if done.wait(timeout: .now() + max(0, min(timeout, 86_400))) == .success {
            lock.withLock { finished = true }
        }
    }

    private struct Stop: Error { var reason: String }

    private func run() {
        var failures = 0
        var gained = false
        while true {
            let finishing: Bool = lock.withLock {
                // A round that applied something looks again at once: a replica behind a busy
                // primary catches up at the speed it applies, not one round a poll interval.
                if !stopping && !wakeRequested && !gained {
                    lock.wait(timeoutSeconds: failures == 0 ? pollInterval : min(30, pollInterval * Double(1 << min(failures, 10))))
                }
                wakeRequested = false
                return stopping || status.stoppedBecause != nil
            }
            if finishing { break }
            do {
                gained = try round()
                failures = 0
                lock.withLock {
                    status.lastError = nil
                    status.rounds += 1
                    lock.broadcast()
                }
            } catch let stop as Stop {
                gained = false
                lock.withLock {
                    status.stoppedBecause = stop.reason
                    status.rounds += 1
                    lock.broadcast()
                }
            } catch {
                failures += 1
                gained = false
                lock.withLock {
                    status.lastError = "\(error)"
                    status.rounds += 1
                    lock.broadcast()
                }
            }
        }
        lock.withLock { finished = true }
        done.signal()
    }

    /// One look at the archive: applies what the followed generation gained, then moves to the
    /// primary's next generation if this one is done and the next goes on from here. Whether it
    /// applied anything.
    private func round() throws -> Bool {
        guard let engine, !lock.withLock({ stopping }) else { return false }
        var pieces: [ArchiveGeneration: [UInt64: [UInt64: String]]] = [:]
        var states: [ArchiveGeneration: [(serial: UInt64, name: String)]] = [:]
        for name in try target.list() {
            switch ArchiveObject(name: name) {
            case let .log(g, wal, offset)? where g.store == position.generation.store:
                pieces[g, default: [:]][wal, default: [:]][offset] = name
            case let .state(g, _, serial)? where g.store == position.generation.store:
                states[g, default: []].append((serial, name))
            default:
                break
            }
        }
        var gained = try follow(pieces[position.generation] ?? [:], engine: engine)
        if !gained {
            // Done with this generation for now: the primary's next one, if it goes on from here.
            let next = Set(pieces.keys).union(states.keys).filter { $0.ordinal > position.generation.ordinal }.min { $0.ordinal < $1.ordinal }
            if let next, let opening = states[next]?.min(by: { $0.serial < $1.serial }) {
                let state = try ArchivedState.decode(try target.get(opening.name), name: opening.name)
                let applied = engine.latestSequence
                if state.committed.sequence < applied {
                    throw Stop(reason: "the primary reopened (generation \(next.ordinal)) without commits up to \(applied) that this replica applied: rebuild the replica")
                }
                if state.sequence <= applied {
                    position = ReplicaPosition(generation: next, wal: state.logNumber, offset: 0, walEnded: false, applied: applied)
                    lock.withLock {
                        status.generationOrdinal = next.ordinal
                        status.generationId = next.id
                    }
                    _ = try follow(pieces[next] ?? [:], engine: engine)
                    gained = true   // moved on: look again at once
                }
                // Else the commits up to the new generation's state are not all applied: the
                // archive may still ship the rest of this generation (a WAL the primary kept).
            }
        }
        position.applied = engine.latestSequence
        // Saved only when it moved: an idle replica polls every second, and each save is two
        // syncs (the file and the directory).
        if position != saved {
            try position.write(in: directory, fileSystem: fileSystem)
            saved = position
        }
        return gained
    }

    /// Applies every piece of the followed generation that is there, in order; whether any was.
    private func follow(_ wals: [UInt64: [UInt64: String]], engine: Engine) throws -> Bool {
        var gained = false
        while true {
            if position.wal == 0 || position.walEnded {
                // The next WAL: the generation's first (when seeking) or the one after.
                guard let next = wals.keys.filter({ $0 > position.wal }).min(), let first = wals[next]?[0] else { return gained }
                let piece = try ArchivedLogPiece.decode(try target.get(first), name: first)
                if position.wal != 0, let previous = piece.previous, previous != position.wal {
                    throw Stop(reason: "the archive lacks a WAL between \(position.wal) and \(next) (\(ArchiveObject.log(position.generation, wal: previous, offset: 0).name))")
                }
                position.wal = next
                position.offset = 0
                position.walEnded = false
                try apply(piece, engine: engine)
                gained = true
                continue
            }
            guard let name = wals[position.wal]?[position.offset] else { return gained }
            let piece = try ArchivedLogPiece.decode(try target.get(name), name: name)
            try apply(piece, engine: engine)
            gained = true
        }
    }

    /// How the records of `piece` are read: in plaintext; from the header it starts with (the
    /// piece at offset 0 of an encrypted store's WAL); or with the sealer of its WAL's header,
    /// fetched from the WAL's first piece when the follower did not read that one (it resumed
    /// in the middle of a WAL).
    private func encryption(of piece: ArchivedLogPiece) throws -> LogReader.Encryption {
        guard let cipher = SealingArchiveTarget.cipher(of: target) else { return .none }
        if piece.offset == 0 { return .file(cipher) }
        if let w = walSealer, w.generation == piece.generation, w.wal == piece.wal { return .records(w.sealer) }
        let firstName = ArchiveObject.log(piece.generation, wal: piece.wal, offset: 0).name
        let first = try ArchivedLogPiece.decode(try target.get(firstName), name: firstName)
        guard case let .sealed(sealer) = try first.bytes.withUnsafeBytes({
            try EncryptionHeader.read(UnsafeRawBufferPointer(rebasing: $0.prefix(EncryptionHeader.bytes)), cipher: cipher, path: firstName)
        }) else { throw Stop(reason: "archived log piece \(firstName) has no encryption header") }
        walSealer = (piece.generation, piece.wal, sealer)
        return .records(sealer)
    }

    /// Commits a piece's batches that come after what the engine holds.
    private func apply(_ piece: ArchivedLogPiece, engine: Engine) throws {
        let name = piece.objectName
        guard piece.generation == position.generation, piece.wal == position.wal, piece.offset == position.offset else {
            throw Stop(reason: "archived log piece \(name) is not the one its name says")
        }
        final class Last { var sequence: UInt64 = 0 }
        let last = Last()
        last.sequence = engine.latestSequence
        let reader = LogReader(bytes: piece.bytes, path: name, allowsMarks: true, encryption: try encryption(of: piece)) { head, count in
            WALRecord.isPlausible(payloadHead: head, payloadCount: count, after: last.sequence)
        }
        var ended = false
        var records: [(first: UInt64, batch: WriteBatch)] = []
        let outcome: LogReader.Outcome
        do {
            outcome = try reader.forEachRecord { record in
                if record.isEndOfLog { ended = true; return }
                let parsed = try WALRecord(parsing: record.payload, path: name, offset: record.offset)
                guard let lastSequence = parsed.lastSequence, lastSequence > last.sequence else { return }
                var batch = WriteBatch()
                try parsed.forEachOperation(path: name, offset: record.offset) { op in
                    let ks = KeySpace(id: op.keySpaceId, name: "")
                    if op.kind == .value { batch.put(op.key, op.value, in: ks) } else { batch.delete(op.key, in: ks) }
                }
                records.append((parsed.firstSequence, batch))
                last.sequence = lastSequence
            }
        } catch let e as StorageError {
            throw Stop(reason: "archived log piece \(name) is damaged: \(e)")
        }
        if outcome.validEnd < piece.bytes.count { ended = true }   // a torn tail ends the WAL
        if piece.offset == 0, let sealer = reader.sealer { walSealer = (piece.generation, piece.wal, sealer) }
        let observer = lock.withLock { self.observer }
        for (first, batch) in records {
            try ensureKeySpaces(upTo: batch.maxKeySpaceId, engine: engine)
            // What each key held before, for the observer (inserted or updated).
            var operations: [ReplicatedOperation] = []
            if let (priorValuesIn, _) = observer {
                try batch.rep.withUnsafeBytes { rep in
                    _ = try BatchDecoder.forEach(rep) { op in
                        let key = Array(op.key)
                        let existed = priorValuesIn.contains(op.keySpaceId)
                            ? try engine.get(key, in: KeySpace(id: op.keySpaceId, name: "")) != nil : nil
                        operations.append(ReplicatedOperation(keySpaceId: op.keySpaceId, key: key, isDeletion: op.kind == .deletion, existed: existed))
                    }
                }
            }
            try engine.applyReplicated(batch, firstSequence: first)
            if let (_, body) = observer, !operations.isEmpty { body(operations) }
        }
        position.offset += UInt64(piece.bytes.count)
        if ended { position.walEnded = true }
        let now = Archiver.nowMicros()
        lock.withLock {
            status.appliedSequence = engine.latestSequence
            if let t = piece.times.last(where: { $0.sequence <= engine.latestSequence }) {
                status.lastAppliedCommitTime = Double(t.micros) / 1e6
                status.lastApplyLag = max(0, Double(now - t.micros) / 1e6)
            }
        }
    }

    /// Creates the key spaces a batch uses that the replica lacks, named as the primary's
    /// newest state names them (ids are dense and handed out in order on both sides).
    private func ensureKeySpaces(upTo id: UInt32, engine: Engine) throws {
        guard id >= UInt32(engine.keySpaces.count) else { return }
        var newest: ArchivedState?
        for name in try target.list() {
            guard case let .state(g, _, _)? = ArchiveObject(name: name), g == position.generation else { continue }
            let s = try ArchivedState.decode(try target.get(name), name: name)
            if newest == nil || s.isNewer(than: newest!) { newest = s }
        }
        for ks in (newest?.keySpaces ?? []).sorted(by: { $0.id < $1.id }) where ks.id >= UInt32(engine.keySpaces.count) {
            guard try engine.keySpace(named: ks.name).id == ks.id else {
                throw Stop(reason: "key space \(ks.name) has id \(ks.id) on the primary and another here")
            }
        }
        guard id < UInt32(engine.keySpaces.count) else {
            // The primary ships a state at once when it creates a key space: the next round
            // finds it.
            throw StorageError.io(operation: "replica: a batch uses key space \(id), which no state of the primary names yet",
                                  path: directory, errno: 0)
        }
    }
}
