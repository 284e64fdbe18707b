import Dispatch
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Ships a store's segments, manifest states and write-ahead log to an ``ArchiveTarget`` on a
/// thread of its own (SPEC.md §3.3). The engine tells it what to ship: each commit's end in its
/// WAL (``noteCommit``), each WAL sealed by a rotation (``noteSealed``), each new manifest
/// state (``noteState``). Nothing the engine does waits for the target; the engine only keeps
/// the WAL files the archive still lacks (``firstUnshippedWal``).
final class Archiver: @unchecked Sendable {
    // @unchecked Sendable: its mutable state is guarded by `lock`; the rest is constant.
    /// A WAL still to ship: its committed end (bytes from 0 that hold whole commits), whether
    /// nothing more will be written to it, and the commit times not yet shipped.
    private struct PendingLog {
        var end: UInt64 = 0
        var sealed = false
        var times: [ArchivedLogPiece.CommitTime] = []
        /// The last sequence number of a commit that ends in it.
        var sequence: UInt64 = 0
        /// The generation the WAL belongs to (this one's id, or an earlier open's whose WAL
        /// the store kept because the archive lacked it: SPEC.md §3.3).
        var generation: UInt64 = 0
        /// The generation's WAL before it (0 for its first); nil until the archive is listed
        /// (an earlier open's WAL).
        var previous: UInt64? = 0
    }

    let options: ArchiveOptions
    let directory: String
    let fileSystem: any FileSystem
    /// This open's generation id (its ordinal comes from the archive: ``ordinal``).
    let generation: UInt64
    let storeId: UInt64
    /// Removes the store's WAL files below a number: those the archive has whole and the store
    /// no longer needs (the engine checks its log number).
    private let removeShippedWals: @Sendable (UInt64) -> Void

    private let lock = ConditionLock()
    // Guarded by `lock`.
    /// The state the generation opened with: always shipped (a restore of a commit made before
    /// the next state starts from it), while of later states only the newest is.
    private var openingState: (version: Version, state: ArchivedState)?
    private var pendingState: (version: Version, state: ArchivedState)?
    private var logs: [UInt64: PendingLog] = [:]
    /// The last commit noted, with the time it was noted at (nil before the first).
    private var lastNoted: ArchivedLogPiece.CommitTime?
    private var stopping = false
    /// The last WAL of this generation noted: the next one's ``PendingLog/previous``.
    private var lastOwnWal: UInt64 = 0
    /// How long ``stop(timeout:)`` waits at close: ``ArchiveOptions/closeTimeout``; tests set
    /// less (internal, so that no public options struct changes layout).
    var closeTimeout = ArchiveOptions.closeTimeout
    /// Set when ``stop(timeout:)`` gave up waiting (a hung target): the engine has closed and
    /// released the store, so the thread touches none of its files again and ends as soon as
    /// the target lets it.
    private var abandoned = false
    private var wakeRequested = false
    private var status: ArchiveStatus
    /// The error behind `status.lastError`.
    private var lastFailure: (any Error)?
    private var roundsCompleted = 0
    /// Set by ``waitUntilArchived`` (and a close): the next round ships the latest state too.
    private var statesForced = false
    /// When the last state went out (monotonic seconds); -∞ before the first.
    private var lastStateShipment = -Double.infinity
    private let done = DispatchSemaphore(value: 0)

    // Owned by the archiver's thread.
    private var shippedOffsets: [UInt64: UInt64] = [:]
    private var serial: UInt64 = 0
    /// Names of this store's segments the archive holds.
    private var shippedSegments: Set<String> = []
    /// This generation's ordinal and those of the earlier generations whose WALs it ships; set
    /// when the archive is first listed.
    private var ordinals: [UInt64: UInt64] = [:]
    private var listed = false

    /// `state`: the store as recovery left it; `wals`: the WAL files from its log number on, the
    /// active one last, with their sizes; `inherited`: WALs below the log number that earlier
    /// opens (`generation`) may not have shipped whole; `sequence`: the last sequence recovery
    /// replayed.
    init(options: ArchiveOptions, directory: String, fileSystem: any FileSystem, storeId: UInt64, generation: UInt64,
         state: (Version, ArchivedState), wals: [(number: UInt64, size: UInt64)],
         inherited: [(number: UInt64, size: UInt64, generation: UInt64)], sequence: UInt64,
         removeShippedWals: @escaping @Sendable (UInt64) -> Void) {
        self.options = options
        self.directory = directory
        self.fileSystem = fileSystem
        self.removeShippedWals = removeShippedWals
        self.storeId = storeId
        self.generation = generation
        clockOffset = Self.testClockOffsets.withLock { $0[directory] } ?? 0
        status = ArchiveStatus(archivedSequence: 0, latestSequence: sequence, pendingLogBytes: 0, consecutiveFailures: 0,
                               lastError: nil, objectsPut: 0, bytesPut: 0)
        openingState = state
        keySpacesNoted = state.1.keySpaces.count
        wakeRequested = true   // the base state goes out at once
        for (i, w) in wals.enumerated() {
            // The replayed logs are whole; the active one holds what recovery put in it.
            logs[w.number] = PendingLog(end: w.size, sealed: i < wals.count - 1, times: [], sequence: sequence,
                                        generation: generation, previous: i == 0 ? 0 : wals[i - 1].number)
        }
        lastOwnWal = wals.last?.number ?? 0
        for w in inherited {
            logs[w.number] = PendingLog(end: w.size, sealed: true, times: [], sequence: 0, generation: w.generation, previous: nil)
        }
        DispatchQueue(label: "strata.archive").async { [self] in run() }
    }

    /// A new generation id: random, never 0.
    static func newGeneration() -> UInt64 {
        var g: UInt64 = 0
        while g == 0 { g = UInt64.random(in: 1...UInt64.max) }
        return g
    }

    // MARK: What the engine reports (each call is short and never does I/O)

    /// A commit group ended at byte `end` of WAL `wal`; its last sequence number is `sequence`.
    /// REQUIRES: the engine's commit lock (so calls come in commit order).
    func noteCommit(wal: UInt64, end: UInt64, sequence: UInt64) {
        let now = nowMicros()
        lock.withLock {
            notePresence(of: wal)
            // In place: a copy of the entry would copy its list of times at every commit.
            Self.record(into: &logs[wal]!, end: end, sequence: sequence, now: now)
            lastNoted = .init(sequence: sequence, micros: now)
            status.latestSequence = sequence
        }
    }

    /// The last commit noted and when, as one pair: what a state taken now says it holds (see
    /// ``ArchivedState/committed``). Reading the store's sequence and the clock separately let a
    /// state taken beside a commit (a compaction's, on its own thread) pair a sequence with a
    /// later time than a commit it lacks, and a restore at a time after both then missed that
    /// commit.
    func lastCommit() -> ArchivedLogPiece.CommitTime? {
        lock.withLock { lastNoted }
    }

    /// Starts the entry of a WAL of this generation seen for the first time, linked to the one
    /// before it. REQUIRES: `lock`.
    private func notePresence(of wal: UInt64) {
        guard logs[wal] == nil else { return }
        logs[wal] = PendingLog(generation: generation, previous: wal > lastOwnWal ? lastOwnWal : 0)
        lastOwnWal = max(lastOwnWal, wal)
    }

    private static func record(into log: inout PendingLog, end: UInt64, sequence: UInt64, now: Int64) {
        log.end = max(log.end, end)
        log.sequence = max(log.sequence, sequence)
        // One time per millisecond is enough for a restore "at" a time, and bounds what a
        // busy store keeps while the target is down.
        if let last = log.times.last, last.micros / 1000 == now / 1000 {
            log.times[log.times.count - 1].sequence = sequence
        } else {
            log.times.append(.init(sequence: sequence, micros: now))
        }
    }

    /// WAL `wal` was sealed at `end` bytes (its end-of-log record included): nothing more is
    /// written to it. REQUIRES: the engine's commit lock.
    func noteSealed(wal: UInt64, end: UInt64) {
        lock.withLock {
            notePresence(of: wal)
            var log = logs[wal]!
            log.end = max(log.end, end)
            log.sealed = true
            logs[wal] = log
        }
    }

    /// A new manifest state; `version` keeps its segment files until they are shipped (the
    /// newest one, at the next state shipment: ``ArchiveOptions/stateInterval``).
    func noteState(_ version: Version, _ state: ArchivedState) {
        lock.withLock {
            pendingState = (version, state)
            // A new key space goes out at once: a replica cannot apply a record that uses one
            // before a state names it.
            if state.keySpaces.count > keySpacesNoted {
                keySpacesNoted = state.keySpaces.count
                statesForced = true
                wakeRequested = true
                lock.broadcast()
            }
        }
    }

    /// The most key spaces a noted state had.
    private var keySpacesNoted = 0

    /// The lowest WAL number the archive does not have whole: the store must keep that WAL and
    /// every later one.
    var firstUnshippedWal: UInt64 { lock.withLock { logs.keys.min() ?? .max } }

    func currentStatus() -> ArchiveStatus {
        lock.withLock {
            var s = status
            s.pendingLogBytes = logs.reduce(0) { $0 + ($1.value.end - min($1.value.end, shippedOffsetsSnapshot[$1.key] ?? 0)) }
            return s
        }
    }

    /// `shippedOffsets` as the status sees it (updated under the lock by the thread).
    private var shippedOffsetsSnapshot: [UInt64: UInt64] = [:]

    /// Ships now and waits until every commit up to `sequence` and the latest state are in the
    /// archive; throws the target's error if a shipment fails, or when `timeout` passes.
    func waitUntilArchived(sequence: UInt64, timeout: Double) throws {
        let deadline = monotonicSeconds() + timeout
        lock.lock()
        defer { lock.unlock() }
        let startRound = roundsCompleted
        wakeRequested = true
        statesForced = true
        lock.broadcast()
        while !(roundsCompleted > startRound && status.archivedSequence >= sequence && pendingState == nil && openingState == nil) {
            if stopping { throw StorageError.closed }
            if roundsCompleted > startRound, status.consecutiveFailures > 0, let e = status.lastError {
                // The engine's own errors as they are (a refused target is typed); a target's
                // other errors wrapped, naming the archive.
                if let typed = lastFailure as? StorageError, case .archiveOfAnotherStore = typed { throw typed }
                throw StorageError.io(operation: "archive: \(e)", path: directory, errno: 0)
            }
            let left = deadline - monotonicSeconds()
            if left <= 0 {
                throw StorageError.io(operation: "archive: not caught up after \(timeout) s", path: directory, errno: 0)
            }
            // A state noted after the round that shipped the forced one (a flush the open
            // started, say) is forced too: it would otherwise wait for `stateInterval`.
            if pendingState != nil && !statesForced {
                statesForced = true
                wakeRequested = true
                lock.broadcast()
            }
            lock.wait(timeoutSeconds: min(left, 0.05))
        }
    }

    /// Ends the thread after one last shipment (unless the target is failing), and waits for it.
    /// Ends the archiver after one last shipment, waiting at most `timeout` seconds for it.
    /// Returns the status then: when the wait timed out (a target that hangs), the archive
    /// lacks what the status says is pending, and the thread is abandoned: it reads and removes
    /// no file of the store again.
    @discardableResult
    func stop(timeout: Double) -> (finished: Bool, status: ArchiveStatus) {
        lock.withLock {
            stopping = true
            lock.broadcast()
        }
        let finished = done.wait(timeout: .now() + max(0, min(timeout, 86_400))) == .success
        return lock.withLock {
            if !finished { abandoned = true }
            return (finished, status)
        }
    }

    /// Thrown on the archiver's thread once it is abandoned, before it would touch the store.
    private struct Abandoned: Error {}

    private func checkNotAbandoned() throws {
        if lock.withLock({ abandoned }) { throw Abandoned() }
    }

    // MARK: The archiver's thread

    private func run() {
        var failures = 0
        // What an earlier session's crash left half-put. A failure here is reported like a
        // failed round's and the archive goes on: a leftover only takes space.
        do { try options.target.removeIncompleteObjects() } catch {
            lock.withLock { status.lastError = "\(error)" }
        }
        while true {
            let (states, snapshot, finishing): ([(Version, ArchivedState)], [UInt64: PendingLog], Bool) = lock.withLock {
                let wait = failures == 0 ? options.interval : min(30, options.interval * Double(1 << min(failures, 10)))
                if !stopping && !wakeRequested { lock.wait(timeoutSeconds: wait) }
                wakeRequested = false
                // The opening state always; the latest one when it is due or asked for.
                let due = statesForced || stopping || monotonicSeconds() - lastStateShipment >= options.stateInterval
                return ([openingState, due ? pendingState : nil].compactMap { $0 }, logs, stopping)
            }
            if finishing && failures > 0 { break }
            do {
                try shipRound(states: states, logs: snapshot)
                failures = 0
                lock.withLock {
                    if !states.isEmpty {
                        lastStateShipment = monotonicSeconds()
                        if pendingState == nil { statesForced = false }
                    }
                    status.consecutiveFailures = 0
                    status.lastError = nil
                    roundsCompleted += 1
                    lock.broadcast()
                }
            } catch {
                failures += 1
                lock.withLock {
                    status.consecutiveFailures = failures
                    status.lastError = "\(error)"
                    lastFailure = error
                    roundsCompleted += 1
                    lock.broadcast()
                }
            }
            if finishing { break }
        }
        done.signal()
    }

    private func put(_ name: String, _ bytes: [UInt8]) throws {
        try options.target.put(name, bytes)
        lock.withLock {
            status.objectsPut += 1
            status.bytesPut += UInt64(bytes.count)
        }
    }

    private func shipRound(states: [(Version, ArchivedState)], logs snapshot: [UInt64: PendingLog]) throws {
        if !listed { try prepare() }
        let own = ArchiveGeneration(store: storeId, ordinal: ordinals[generation]!, id: generation)
        for (version, archived) in states {
            try withExtendedLifetime(version) {
                for meta in archived.segments {
                    let name = ArchiveObject.segment(store: storeId, meta: meta).name
                    guard !shippedSegments.contains(name) else { continue }
                    try checkNotAbandoned()
                    let path = joinPath(directory, StoreFile.segmentName(meta.fileNumber))
                    let bytes = try readFile(path, from: 0, to: meta.fileSize)
                    try put(name, bytes)
                    shippedSegments.insert(name)
                }
            }
            var s = archived
            s.generation = own
            s.serial = serial
            s.micros = nowMicros()
            try put(s.objectName, s.encode())
            serial += 1
            lock.withLock {
                if openingState?.version === version { openingState = nil }
                if pendingState?.version === version { pendingState = nil }
            }
            try applyRetention()
        }
        // Logs in number order, each from where the last piece ended.
        var sealedShipped = false
        for (wal, log) in snapshot.sorted(by: { $0.key < $1.key }) {
            let from = shippedOffsets[wal] ?? 0
            // An earlier open that shipped nothing has no history in the archive its WAL could
            // join: the WAL is let go (its commits are in this generation's opening state).
            if log.end > from, let ordinal = ordinals[log.generation] {
                try checkNotAbandoned()
                let bytes = try readFile(joinPath(directory, StoreFile.walName(wal)), from: from, to: log.end)
                let piece = ArchivedLogPiece(generation: ArchiveGeneration(store: storeId, ordinal: ordinal, id: log.generation), wal: wal,
                                             previous: log.previous ?? previousOfInherited[wal] ?? 0, offset: from,
                                             times: log.times, bytes: bytes)
                try put(piece.objectName, piece.encode())
                shippedOffsets[wal] = log.end
            }
            let whole = log.sealed && ((shippedOffsets[wal] ?? 0) >= log.end || ordinals[log.generation] == nil)
            if whole { sealedShipped = true }
            lock.withLock {
                shippedOffsetsSnapshot[wal] = whole ? log.end : shippedOffsets[wal] ?? 0
                if var current = logs[wal] {
                    // Times shipped with this piece are dropped; later ones stay, and so does the
                    // last one if a commit in the same millisecond moved it on meanwhile.
                    let shipped = min(log.times.count, current.times.count)
                    if shipped > 0 {
                        current.times.removeFirst(shipped - 1)
                        if current.times.first == log.times.last { current.times.removeFirst() }
                    }
                    if whole && current.end == log.end { logs[wal] = nil } else { logs[wal] = current }
                }
                status.archivedSequence = max(status.archivedSequence, log.sequence)
            }
        }
        if sealedShipped {
            try checkNotAbandoned()
            removeShippedWals(firstUnshippedWal)
        }
    }

    /// The `previous` of each WAL an earlier open left (``prepare``).
    private var previousOfInherited: [UInt64: UInt64] = [:]

    /// The first round's look at the archive (SPEC.md §3.3): refuses a target holding another
    /// store's archive (unless ``ArchiveOptions/sharesTarget``); takes this generation's ordinal,
    /// one above the highest of the store's generations there; notes the segments already
    /// shipped; and finds where each WAL an earlier open left ends in the archive.
    private func prepare() throws {
        var objects: [(name: String, object: ArchiveObject)] = []
        for name in try options.target.list() {
            if let object = ArchiveObject(name: name) { objects.append((name, object)) }
        }
        let others = Set(objects.map(\.object.store)).subtracting([0, storeId])
        if !others.isEmpty && !options.sharesTarget {
            throw StorageError.archiveOfAnotherStore(
                storeIds: others.sorted(),
                reason: "store \(ArchiveObject.hex(storeId)) ships nothing into another store's archive; give it a target of its own, or set ArchiveOptions.sharesTarget")
        }
        var highest: UInt64 = 0
        var known: [UInt64: UInt64] = [:]
        var pieces: [UInt64: [UInt64: [(offset: UInt64, name: String)]]] = [:]   // generation → WAL → pieces
        for (name, object) in objects where object.store == storeId {
            switch object {
            case .segment: shippedSegments.insert(name)
            case let .state(g, _, _):
                highest = max(highest, g.ordinal)
                known[g.id] = g.ordinal
            case let .log(g, wal, offset):
                highest = max(highest, g.ordinal)
                known[g.id] = g.ordinal
                pieces[g.id, default: [:]][wal, default: []].append((offset, name))
            }
        }
        // At most 2^48 opens: the ordinal's 12 digits never run out.
        ordinals[generation] = highest + 1
        let inherited = lock.withLock { logs.filter { $0.value.generation != generation } }
        for (wal, log) in inherited.sorted(by: { $0.key < $1.key }) {
            guard let ordinal = known[log.generation] else { continue }
            ordinals[log.generation] = ordinal
            let shipped = pieces[log.generation]?[wal] ?? []
            if let last = shipped.max(by: { $0.offset < $1.offset }) {
                let piece = try ArchivedLogPiece.decode(try options.target.get(last.name), name: last.name)
                shippedOffsets[wal] = last.offset + UInt64(piece.bytes.count)
                previousOfInherited[wal] = piece.previous ?? 0
            } else {
                let earlier = Array(pieces[log.generation]?.keys ?? [:].keys) + inherited.filter { $0.value.generation == log.generation }.map(\.key)
                previousOfInherited[wal] = earlier.filter { $0 < wal }.max() ?? 0
            }
        }
        listed = true
    }

    /// Reads bytes `from..<to` of a store file.
    private func readFile(_ path: String, from: UInt64, to: UInt64) throws -> [UInt8] {
        guard to > from else { return [] }
        let file = try fileSystem.openReadable(path)
        defer { file.close() }
        var bytes = [UInt8](repeating: 0, count: Int(to - from))
        try bytes.withUnsafeMutableBytes { try file.readExactly(at: from, into: $0, path: path, once: true) }
        return bytes
    }

    /// Deletes what the retention rule lets go: older states, then the log pieces and segments
    /// no kept state needs (SPEC.md §3.3). Only this store's objects, ordered by generation
    /// ordinal, sequence and serial: a clock that steps back never makes a new state look old.
    private func applyRetention() throws {
        let own = ordinals[generation]!
        var states: [String] = []
        var others: [(name: String, object: ArchiveObject)] = []
        for name in try options.target.list() {
            guard let object = ArchiveObject(name: name), object.store == storeId else { continue }
            switch object {
            case let .state(g, _, _), let .log(g, _, _):
                // Another open of this store ships beside this one (a copy of its directory, a
                // restore of it, started later): which history goes on is a restore's choice,
                // and nothing is deleted meanwhile.
                if g.id != generation && g.ordinal >= own { return }
            case .segment: break
            }
            if case .state = object { states.append(name) } else { others.append((name, object)) }
        }
        var decoded: [(name: String, state: ArchivedState)] = []
        for name in states {
            // A state that does not decode is left alone (a restore reports it).
            guard let state = try? ArchivedState.decode(try options.target.get(name), name: name) else { continue }
            decoded.append((name, state))
        }
        decoded.sort { $0.state.isNewer(than: $1.state) }
        var keep = decoded.count
        switch options.retention {
        case let .states(n): keep = max(1, n)
        case let .seconds(age):
            // now ≥ 0 and the age in 0...Int64.max: the difference cannot overflow.
            let cutoff = nowMicros() - Self.micros(seconds: age)
            keep = max(1, decoded.prefix { $0.state.micros >= cutoff }.count)
        }
        guard decoded.count > keep else { return }
        let kept = decoded.prefix(keep).map(\.state)
        let neededSegments = Set(kept.flatMap { s in s.segments.map { ArchiveObject.segment(store: storeId, meta: $0).name } })
        var firstLog: [UInt64: UInt64] = [:]   // per generation, the lowest log number a kept state replays from
        for s in kept { firstLog[s.generation.id] = min(firstLog[s.generation.id] ?? .max, s.logNumber) }
        for (name, _) in decoded.dropFirst(keep) { try options.target.delete(name) }
        for (name, object) in others {
            switch object {
            case .segment where !neededSegments.contains(name):
                try options.target.delete(name)
                shippedSegments.remove(name)
            case let .log(g, wal, _) where wal < (firstLog[g.id] ?? .max):
                try options.target.delete(name)
            default:
                break
            }
        }
    }

    /// `seconds` (finite: checked at open) in microseconds, saturated at Int64's range: an age
    /// of a million years is "everything", not an overflow trap.
    static func micros(seconds: Double) -> Int64 {
        let m = (seconds * 1e6).rounded(.down)
        if m >= 9.2e18 { return .max }
        if m <= -9.2e18 { return .min }
        return Int64(m)
    }

    /// Tests only: how far the clock of the archive of a store directory is set off (a clock
    /// stepped back by NTP, a restored VM), read when its archiver starts.
    static let testClockOffsets = Mutex<[String: Int64]>([:])
    private let clockOffset: Int64

    /// Now, by this archiver's clock (microseconds since 1970).
    private func nowMicros() -> Int64 { Self.nowMicros() + clockOffset }

    static func nowMicros() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Int64(ts.tv_sec) * 1_000_000 + Int64(ts.tv_nsec) / 1000
    }
}
