import Dispatch
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
    }

    let options: ArchiveOptions
    let directory: String
    let fileSystem: any FileSystem
    let generation: UInt64
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
    /// How long ``stop(timeout:)`` waits at close: ``ArchiveOptions/closeTimeout``; tests set
    /// less (internal, so that no public options struct changes layout).
    var closeTimeout = ArchiveOptions.closeTimeout
    /// Set when ``stop(timeout:)`` gave up waiting (a hung target): the engine has closed and
    /// released the store, so the thread touches none of its files again and ends as soon as
    /// the target lets it.
    private var abandoned = false
    private var wakeRequested = false
    private var status: ArchiveStatus
    private var roundsCompleted = 0
    /// Set by ``waitUntilArchived`` (and a close): the next round ships the latest state too.
    private var statesForced = false
    /// When the last state went out (monotonic seconds); -∞ before the first.
    private var lastStateShipment = -Double.infinity
    private let done = DispatchSemaphore(value: 0)

    // Owned by the archiver's thread.
    private var shippedSegments: Set<UInt64> = []
    private var shippedOffsets: [UInt64: UInt64] = [:]
    private var serial: UInt64 = 0
    private var listed = false

    /// `state`: the store as recovery left it; `wals`: the WAL files from its log number on, the
    /// active one last, with their sizes; `sequence`: the last sequence recovery replayed.
    init(options: ArchiveOptions, directory: String, fileSystem: any FileSystem, generation: UInt64, state: (Version, ArchivedState),
         wals: [(number: UInt64, size: UInt64)], sequence: UInt64, removeShippedWals: @escaping @Sendable (UInt64) -> Void) {
        self.options = options
        self.directory = directory
        self.fileSystem = fileSystem
        self.removeShippedWals = removeShippedWals
        self.generation = generation
        status = ArchiveStatus(archivedSequence: 0, latestSequence: sequence, pendingLogBytes: 0, consecutiveFailures: 0,
                               lastError: nil, objectsPut: 0, bytesPut: 0)
        openingState = state
        wakeRequested = true   // the base state goes out at once
        for (i, w) in wals.enumerated() {
            // The replayed logs are whole; the active one holds what recovery put in it.
            logs[w.number] = PendingLog(end: w.size, sealed: i < wals.count - 1, times: [], sequence: sequence)
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
        let now = Self.nowMicros()
        lock.withLock {
            // In place: a copy of the entry would copy its list of times at every commit.
            Self.record(into: &logs[wal, default: PendingLog()], end: end, sequence: sequence, now: now)
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
            var log = logs[wal] ?? PendingLog()
            log.end = max(log.end, end)
            log.sealed = true
            logs[wal] = log
        }
    }

    /// A new manifest state; `version` keeps its segment files until they are shipped (the
    /// newest one, at the next state shipment: ``ArchiveOptions/stateInterval``).
    func noteState(_ version: Version, _ state: ArchivedState) {
        lock.withLock { pendingState = (version, state) }
    }

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
                throw StorageError.io(operation: "archive: \(e)", path: directory, errno: 0)
            }
            let left = deadline - monotonicSeconds()
            if left <= 0 {
                throw StorageError.io(operation: "archive: not caught up after \(timeout) s", path: directory, errno: 0)
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
        if !listed {
            // Segments are shared by generations: one an earlier open shipped is not shipped again.
            for name in try options.target.list() {
                if case let .segment(n)? = ArchiveObject(name: name) { shippedSegments.insert(n) }
            }
            listed = true
        }
        for (version, archived) in states {
            try withExtendedLifetime(version) {
                for meta in archived.segments where !shippedSegments.contains(meta.fileNumber) {
                    try checkNotAbandoned()
                    let path = joinPath(directory, StoreFile.segmentName(meta.fileNumber))
                    let bytes = try readFile(path, from: 0, to: meta.fileSize)
                    try put(ArchiveObject.segment(number: meta.fileNumber).name, bytes)
                    shippedSegments.insert(meta.fileNumber)
                }
            }
            var s = archived
            s.serial = serial
            s.micros = Self.nowMicros()
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
            if log.end > from {
                try checkNotAbandoned()
                let bytes = try readFile(joinPath(directory, StoreFile.walName(wal)), from: from, to: log.end)
                let piece = ArchivedLogPiece(generation: generation, wal: wal, offset: from, times: log.times, bytes: bytes)
                try put(piece.objectName, piece.encode())
                shippedOffsets[wal] = log.end
            }
            let whole = log.sealed && (shippedOffsets[wal] ?? 0) >= log.end
            if whole { sealedShipped = true }
            lock.withLock {
                shippedOffsetsSnapshot[wal] = shippedOffsets[wal] ?? 0
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
    /// no kept state needs (SPEC.md §3.3).
    private func applyRetention() throws {
        var states: [(name: String, object: ArchiveObject)] = []
        var others: [(name: String, object: ArchiveObject)] = []
        for name in try options.target.list() {
            guard let object = ArchiveObject(name: name) else { continue }
            if case .state = object { states.append((name, object)) } else { others.append((name, object)) }
        }
        // Newest first: by shipping time, read from each state (names order by sequence only).
        var decoded: [(name: String, state: ArchivedState)] = []
        for s in states {
            // A state that does not decode is left alone (a restore reports it).
            guard let state = try? ArchivedState.decode(try options.target.get(s.name), name: s.name) else { continue }
            decoded.append((s.name, state))
        }
        decoded.sort { ($0.state.micros, $0.state.serial) > ($1.state.micros, $1.state.serial) }
        var keep = decoded.count
        switch options.retention {
        case let .states(n): keep = max(1, n)
        case let .seconds(age):
            // now ≥ 0 and the age in 0...Int64.max: the difference cannot overflow.
            let cutoff = Self.nowMicros() - Self.micros(seconds: age)
            keep = max(1, decoded.prefix { $0.state.micros >= cutoff }.count)
        }
        guard decoded.count > keep else { return }
        let kept = decoded.prefix(keep).map(\.state)
        let neededSegments = Set(kept.flatMap { $0.segments.map(\.fileNumber) })
        var firstLog: [UInt64: UInt64] = [:]   // per generation, the lowest log number a kept state replays from
        for s in kept { firstLog[s.generation] = min(firstLog[s.generation] ?? .max, s.logNumber) }
        for (name, _) in decoded.dropFirst(keep) { try options.target.delete(name) }
        for (name, object) in others {
            switch object {
            case let .segment(n) where !neededSegments.contains(n):
                try options.target.delete(name)
                shippedSegments.remove(n)
            case let .log(g, wal, _) where wal < (firstLog[g] ?? .max):
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

    static func nowMicros() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Int64(ts.tv_sec) * 1_000_000 + Int64(ts.tv_nsec) / 1000
    }
}
