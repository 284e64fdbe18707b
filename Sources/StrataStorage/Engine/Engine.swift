import CStrataSupport
import Dispatch
import Synchronization

/// What readers see: the memtables and the segment version, captured together.
final class ReadView: Sendable {
    let memtables: [UInt32: Memtable]
    let immutables: [UInt32: Memtable]?
    let version: Version
    /// The same memtables by key space id, for point reads (``KeySpaceTable``).
    private let memtableById: KeySpaceTable<Memtable>
    private let immutableById: KeySpaceTable<Memtable>

    init(memtables: [UInt32: Memtable], immutables: [UInt32: Memtable]?, version: Version) {
        self.memtables = memtables
        self.immutables = immutables
        self.version = version
        memtableById = KeySpaceTable(memtables)
        immutableById = KeySpaceTable(immutables ?? [:])
    }

    @inline(__always)
    func memtable(_ keySpaceId: UInt32) -> Memtable? { memtableById[keySpaceId] }

    @inline(__always)
    func immutable(_ keySpaceId: UInt32) -> Memtable? { immutableById[keySpaceId] }

    /// A reader is done with what it read through this view (see ``SanitizerEdges``): the
    /// edge ThreadSanitizer needs from its reads to the thread that frees the view's memtables.
    /// Nothing without ThreadSanitizer.
    @inline(__always)
    func readerDone() { SanitizerEdges.release(self) }

    deinit {
        // Hands the readers' edges on to the memtables, whose deinit acquires them.
        guard strata_tsan_active != 0 else { return }
        SanitizerEdges.acquire(self)
        for m in memtables.values { SanitizerEdges.release(m) }
        for m in (immutables ?? [:]).values { SanitizerEdges.release(m) }
    }
}

/// Strata's storage engine: an embedded, log-structured key-value store with named key spaces,
/// atomic multi-key-space batches, snapshots and crash recovery. It knows nothing about objects.
///
/// ```swift
/// let engine = try Engine.open(directory: "/tmp/db")
/// let users = try engine.keySpace(named: "users")
/// var batch = WriteBatch()
/// batch.put(Array("alice".utf8), Array("admin".utf8), in: users)
/// try engine.write(batch)
/// let role = try engine.get(Array("alice".utf8), in: users)   // [UInt8]("admin".utf8)
/// engine.close()
/// ```
///
/// An `Engine` is safe to use from many threads. Writes are serialised through a commit queue
/// (with group commit); reads never block writes.
public final class Engine: @unchecked Sendable {
    // @unchecked Sendable: mutable state is guarded by the commit lock, the manifest lock or the
    // background lock (each property says which), or is atomic; readers take a `ReadView`.
    /// The directory holding the store.
    public let directory: String
    let options: EngineOptions
    let fileSystem: any FileSystem
    /// The store's cipher when it is encrypted (``EngineOptions/encryptionKey``): every file
    /// this engine writes is sealed with a key derived from it (SPEC.md §14).
    let cipher: StoreCipher?
    /// The key the engine was opened with (the object layer's key change reopens with another).
    package var encryptionKey: [UInt8]? { options.encryptionKey }
    let layout: SegmentLayout
    /// How each key space's segments are written, by key space id: what the options name for it.
    private let writeSettings = LockedValue<[UInt32: KeySpaceWriteSettings]>([:])
    let stats = StatisticsCounters()
    let cache: BlockCache
    let snapshots = SnapshotList()
    let flushQueue = DispatchQueue(label: "strata.flush")
    let compactionQueue = DispatchQueue(label: "strata.compaction")
    let isClosed = Atomic<Bool>(false)
    /// Highest sequence number whose write is complete and visible to new reads.
    let visibleSequence = Atomic<UInt64>(0)
    private let viewBox: LockedValue<ReadView>

    // `@exclusivity(unchecked)` on the state below: it is guarded by `commitLock` (or owned by
    // the commit leader), and the runtime exclusivity checks showed up in perf as a tenth of
    // the cost of a put (swift_beginAccess / AccessSet::insert).
    // Guarded by `commitLock`: the commit queue, the memtables, flush state.
    let commitLock = ConditionLock()
    @exclusivity(unchecked) var writers: [PendingWrite] = []
    /// Writers in the queue when the last durable group finished, counting that group: how
    /// many a group-commit leader may expect to gather (guarded by `commitLock`).
    @exclusivity(unchecked) var recentSyncWriters = 0
    @exclusivity(unchecked) var memtables: [UInt32: Memtable] = [:]
    @exclusivity(unchecked) var immutables: [UInt32: Memtable]?
    /// The WAL that took writes after `immutables` was frozen; once they are in segments, WALs
    /// older than it can go.
    @exclusivity(unchecked) var immutableLogNumber: UInt64 = 0
    @exclusivity(unchecked) var flushRunning = false
    @exclusivity(unchecked) var backgroundError: StorageError?
    /// Last sequence number handed out (may run ahead of `visibleSequence` while a group commits).
    @exclusivity(unchecked) var lastSequence: UInt64 = 0
    /// nil when the engine is read-only.
    @exclusivity(unchecked) var wal: LogWriter?
    @exclusivity(unchecked) var walNumber: UInt64
    @exclusivity(unchecked) var walNeedsRotation = false
    /// Set when a WAL sync failed (or a failed append could not be taken back): every later
    /// write throws it, until the store is reopened. Guarded by `commitLock`.
    @exclusivity(unchecked) var writesStopped: StorageError?
    /// Set when a manifest record's fate became unknown (``VersionSet/unknownState``): writes
    /// stop, and flush and compaction outputs are kept (a durable record may name them). An
    /// atomic, because the manifest lock is taken after the commit lock, never before.
    let stoppedByManifest = Atomic<Bool>(false)
    /// WALs replaced by a newer one, still open because their last non-durable writes are not
    /// yet synced. The next durable write syncs them before its own record (so that no durable
    /// write outlives a non-durable one logged before it), unless a flush made them obsolete
    /// first; most rotations then cost no `fdatasync` at all. Guarded by `commitLock`.
    @exclusivity(unchecked) var retiredWals: [(number: UInt64, log: LogWriter)] = []
    /// Whether the active WAL's directory entry may not be durable yet (an open left its sync to
    /// the first durable write, SPEC.md §8). Guarded by `commitLock`.
    @exclusivity(unchecked) var walEntryNeedsSync = false
    /// The commit leader's buffer for WAL records (used by one leader at a time).
    @exclusivity(unchecked) var walScratch = ByteWriter(capacity: 64 << 10)
    var keySpacesByName: [String: KeySpace] = [:]
    /// What the write path checks on every write, kept current by `publishView()` so the check
    /// costs no lock and no dictionary walk: the active memtables, the largest level-0 count.
    @exclusivity(unchecked) var memtableList: [Memtable] = []
    /// The active memtables indexed by key-space id (ids are dense), for the commit leader.
    @exclusivity(unchecked) var memtablesById: [Memtable?] = []
    @exclusivity(unchecked) var level0Segments = 0
    @exclusivity(unchecked) var compactionScheduled = false
    var compactionError: StorageError?
    /// Segment files the open found that no manifest record names (``Recovery/Result/leftoverSegments``),
    /// until ``removeLeftoverSegments()`` runs. Guarded by `commitLock`.
    var leftoverSegments: [String] = []
    /// Per key space and level, the largest key of the last segment compacted there.
    var compactionCursors: [UInt32: [Int: [UInt8]]] = [:]
    private var fileLock: (any FileLock)?
    /// Ships the store to its archive (``EngineOptions/archive``); set once at open.
    private(set) var archiver: Archiver?
    /// Set by ``openReplica(following:directoryPath:options:)`` before the engine is handed out:
    /// public writes are refused; the follower commits the primary's batches.
    var isReplica = false
    /// The replica's follower, when this is one.
    var follower: ArchiveFollower?

    // Guarded by `manifestLock`: the version set (manifest edits are applied one at a time).
    let manifestLock = ConditionLock()
    let versions: VersionSet
    /// No write in a live segment has a higher sequence number: raised by each flush (guarded
    /// by `manifestLock`). An archive state's sequence (SPEC.md §3.3).
    var segmentsSequence: UInt64 = 0

    /// Opens (or creates) the store in `directory`.
    ///
    /// Recovery replays the write-ahead log: a torn last record is dropped; damage before the
    /// end is an error. Throws ``StorageError/locked(path:)`` if the store is open elsewhere.
    public static func open(directory: String, options: EngineOptions = EngineOptions()) throws -> Engine {
        try Engine(directory: directory, options: options)
    }

    private init(directory: String, options: EngineOptions) throws {
        if options.archive != nil && options.readOnly {
            throw StorageError.invalidOption(name: "archive", reason: "a read-only open writes nothing, to an archive neither")
        }
        if let a = options.archive, !(a.interval > 0 && a.interval <= 3600) {
            throw StorageError.invalidOption(name: "archive.interval", reason: "\(a.interval) is outside (0, 3600] seconds")
        }
        // NaN and infinities compare false or overflow a conversion to microseconds: refused
        // here, where the app sees the error, rather than on the archiver's thread.
        if let a = options.archive, !(a.stateInterval.isFinite && a.stateInterval >= 0) {
            throw StorageError.invalidOption(name: "archive.stateInterval", reason: "\(a.stateInterval) is not a finite number of seconds ≥ 0")
        }
        if let a = options.archive, case let .seconds(age) = a.retention, !(age.isFinite && age >= 0) {
            throw StorageError.invalidOption(name: "archive.retention", reason: "\(age) is not a finite number of seconds ≥ 0")
        }
        if !(options.compactionDelayAfterOpen.isFinite && (0...3600).contains(options.compactionDelayAfterOpen)) {
            throw StorageError.invalidOption(name: "compactionDelayAfterOpen",
                                             reason: "\(options.compactionDelayAfterOpen) is not a finite number of seconds in 0...3600")
        }
        for (name, n) in options.prefixFilters where !(1...StorageLimits.maxKeyBytes).contains(n) {
            throw StorageError.invalidOption(name: "prefixFilters[\"\(name)\"]",
                                             reason: "\(n) is outside 1...\(StorageLimits.maxKeyBytes)")
        }
        self.directory = directory
        self.options = options
        cipher = try options.encryptionKey.map { try StoreCipher(key: $0) }
        fileSystem = options.fileSystem
        layout = options.segmentLayout
        cache = BlockCache(capacityBytes: max(1 << 20, options.blockCacheBytes))
        let (stats, cache, cipher) = (stats, cache, cipher)
        let recovered = try OpensInProgress.during {
            try Recovery.run(directory: directory, options: options, cipher: cipher, stats: stats, cache: cache)
        }
        fileLock = recovered.lock
        versions = recovered.versions
        segmentsSequence = recovered.segmentsSequence
        memtables = recovered.memtables
        lastSequence = recovered.lastSequence
        visibleSequence.store(recovered.lastSequence, ordering: .releasing)
        wal = recovered.wal
        walNumber = recovered.walNumber
        retiredWals = recovered.unsyncedLogs
        walEntryNeedsSync = recovered.walEntryNeedsSync
        leftoverSegments = recovered.leftoverSegments
        for ks in versions.keySpaces { keySpacesByName[ks.name] = ks }
        viewBox = LockedValue(ReadView(memtables: recovered.memtables, immutables: nil, version: recovered.versions.current))
        memtableList = Array(recovered.memtables.values)
        memtablesById = Self.indexById(recovered.memtables)
        level0Segments = level0Count(currentView())
        // Advisory counters: a damaged STATS file must not keep the store from opening.
        if let earlier = try? StatsFile.read(directory: directory, fileSystem: fileSystem, cipher: cipher) {
            stats.base.withLock { $0 = earlier }
        }
        let settings = Dictionary(uniqueKeysWithValues: versions.keySpaces.map { ks in
            (ks.id, KeySpaceWriteSettings(name: ks.name, options: options))
        })
        writeSettings.withLock { $0 = settings }
        for name in options.keySpaces { _ = try keySpace(named: name) }
        if let archive = options.archive { archiver = try startArchiver(archive) }
        scheduleCompactionAfterOpen()
    }

    deinit { close() }

    /// Whether flushes of a key space put the blocks they write into the block cache.
    func fillsCacheOnFlush(_ keySpaceId: UInt32) -> Bool {
        writeSettings.withLock { $0[keySpaceId]?.fillsCacheOnFlush } ?? false
    }

    /// How segments of a key space are written.
    func layout(forKeySpace id: UInt32) -> SegmentLayout {
        var l = layout
        let settings = writeSettings.withLock { $0[id] }
        l.filterPrefixSuffixBytes = settings?.filterPrefixSuffixBytes ?? 0
        l.idBlocks = IdBlockLayout.isAllowed(inSegmentFormat: l.formatVersion) && settings?.idBlocks == true
        return l
    }

    /// Closes the store: waits for a running flush, closes the files, releases the lock, empties
    /// the block cache (its memory is freed on a background thread). Data in the memtable stays
    /// in the write-ahead log and is replayed at the next open. Further calls throw
    /// ``StorageError/closed``. Closing twice is harmless.
    public func close() {
        // From inside a callback, close() would wait for the work that runs the callback: it
        // closes once the callback has returned instead.
        if CallbackScope.current != nil {
            DispatchQueue.global().async { [self] in close() }
            return
        }
        // A replica's follower first: it ends its round (and saves its position) while the
        // store is still open.
        follower?.stop(timeout: 30)
        guard isClosed.exchange(true, ordering: .acquiringAndReleasing) == false else { return }
        commitLock.lock()
        commitLock.broadcast()   // stalled writers wake, see the engine closed, and leave
        while flushRunning || compactionScheduled || !writers.isEmpty { commitLock.wait() }
        // A log closed cleanly says it ends there (SPEC.md §5.1): the next open replays the
        // log it creates after this one.
        try? wal?.appendEndOfLog()
        try? wal?.close()
        for r in retiredWals { try? r.log.close() }
        retiredWals = []
        commitLock.unlock()
        // What the open left for background work that never ran (normally nothing): no
        // background work starts once the engine is closed.
        removeLeftoverSegments()
        // One last shipment of what was committed (skipped while the target is failing), for at
        // most the archive's close timeout: a hung target must not keep the store locked.
        if let archiver {
            let (finished, status) = archiver.stop(timeout: archiver.closeTimeout)
            if !finished {
                report(.archiveUnfinished(archivedSequence: status.archivedSequence, latestSequence: status.latestSequence))
            }
        }
        if !options.readOnly {
            try? StatsFile.write(stats.lifetime, directory: directory, fileSystem: fileSystem, cipher: cipher)
        }
        manifestLock.withLock { versions.close() }
        fileLock?.release()
        fileLock = nil
        // Nothing reads through the cache any more (reads check `isClosed` first; one already
        // past the check holds its block).
        cache.removeAllReleasingInBackground()
    }

    @inline(__always) func checkOpen() throws {
        if isClosed.load(ordering: .relaxed) { throw StorageError.closed }
        try CallbackScope.check()
    }

    /// Reports `event` to the app's listener, marked as a callback (``CallbackScope``).
    func report(_ event: EngineEvent) {
        guard let listener = options.eventListener else { return }
        CallbackScope.run("the engine's event listener") { listener(event) }
    }

    /// Whether ``close()`` was called.
    public var isOpen: Bool { !isClosed.load(ordering: .relaxed) }

    /// Whether the engine was opened with ``EngineOptions/readOnly``.
    public var isReadOnly: Bool { options.readOnly }

    /// For operations that write: open and not read-only.
    @inline(__always) func checkWritable() throws {
        try checkOpen()
        if options.readOnly { throw StorageError.readOnly(path: directory) }
    }

    // MARK: Key spaces

    /// The default key space, present in every store.
    public var defaultKeySpace: KeySpace { keySpacesByNameLocked("default")! }

    /// All key spaces of the store, in creation order.
    public var keySpaces: [KeySpace] {
        commitLock.withLock { keySpacesByName.values.sorted { $0.id < $1.id } }
    }

    private func keySpacesByNameLocked(_ name: String) -> KeySpace? {
        commitLock.withLock { keySpacesByName[name] }
    }

    /// The key space called `name`, created (durably, through the manifest) if it does not exist.
    public func keySpace(named name: String) throws -> KeySpace {
        try checkOpen()
        let nameBytes = name.utf8.count
        guard nameBytes > 0, nameBytes <= StorageLimits.maxKeySpaceNameBytes else {
            throw StorageError.invalidKeySpaceName(name)
        }
        commitLock.lock()
        defer { commitLock.unlock() }
        if let ks = keySpacesByName[name] { return ks }
        if options.readOnly { throw StorageError.readOnly(path: directory) }
        guard keySpacesByName.count < StorageLimits.maxKeySpaces else { throw StorageError.invalidKeySpaceName(name) }
        let ks = KeySpace(id: UInt32(keySpacesByName.count), name: name)
        var edit = VersionEdit()
        edit.addedKeySpaces = [ks]
        try logManifest(edit)
        keySpacesByName[name] = ks
        writeSettings.withLock { $0[ks.id] = KeySpaceWriteSettings(name: name, options: options) }
        memtables[ks.id] = Memtable(keySpaceId: ks.id, expectedBytes: options.memtableBytes)
        publishView()
        return ks
    }

    /// The key space called `name` if it exists.
    public func existingKeySpace(named name: String) -> KeySpace? { keySpacesByNameLocked(name) }

    // MARK: Read view

    /// REQUIRES: `commitLock` held.
    func publishView() {
        let version = manifestLock.withLock { versions.current }
        let view = ReadView(memtables: memtables, immutables: immutables, version: version)
        memtableList = Array(memtables.values)
        memtablesById = Self.indexById(memtables)
        level0Segments = level0Count(view)
        viewBox.withLock { $0 = view }
    }

    static func indexById(_ tables: [UInt32: Memtable]) -> [Memtable?] {
        var out = [Memtable?](repeating: nil, count: (tables.keys.max().map { Int($0) } ?? -1) + 1)
        for (id, m) in tables { out[Int(id)] = m }
        return out
    }

    @inline(__always) func currentView() -> ReadView { viewBox.withLock { $0 } }

    /// The view and the sequence number a read uses, taken together under the view lock: a
    /// compaction computes the oldest sequence any reader may use under the same lock
    /// (`oldestReadableSequence`), so it never drops a version a read in flight still needs.
    @inline(__always) func readState(_ snapshot: Snapshot?) -> (ReadView, UInt64) {
        viewBox.withLock { view in (view, snapshot?.sequence ?? visibleSequence.load(ordering: .acquiring)) }
    }

    /// The oldest sequence number a current or future read can ask for.
    func oldestReadableSequence() -> UInt64 {
        viewBox.withLock { _ in
            let latest = visibleSequence.load(ordering: .acquiring)
            return min(latest, snapshots.oldest ?? latest)
        }
    }

    // MARK: Snapshots and statistics

    /// Logs a manifest edit; a record whose fate is unknown stops writes (see
    /// ``stoppedByManifest``).
    func logManifest(_ edit: VersionEdit, segmentsSequence flushed: UInt64? = nil) throws {
        try manifestLock.withLock {
            do {
                try versions.logAndApply(edit)
                if let flushed { segmentsSequence = max(segmentsSequence, flushed) }
                archiver?.noteState(versions.current, archivedState())
            } catch {
                if versions.unknownState != nil { stoppedByManifest.store(true, ordering: .releasing) }
                throw error
            }
        }
    }

    /// Pins the current state for consistent reads.
    public func snapshot() throws -> Snapshot {
        try checkOpen()
        return viewBox.withLock { _ in Snapshot(sequence: visibleSequence.load(ordering: .acquiring), list: snapshots) }
    }

    /// The store format version the manifest records (SPEC.md §7); a writable open of an
    /// older store rewrites the manifest in this build's version.
    public var formatVersion: UInt32 { manifestLock.withLock { versions.formatVersion } }

    /// The store's identity: random, set when the store is created (or at the first writable
    /// open of a store an older build made; 0 until then), and kept by its backups and by a
    /// restore from its archive. Every object its archive holds is named with it (SPEC.md §3.3).
    ///
    /// ```swift
    /// print(String(engine.storeId, radix: 16))
    /// ```
    public var storeId: UInt64 { manifestLock.withLock { versions.storeId } }

    /// The last committed sequence number.
    public var latestSequence: UInt64 { visibleSequence.load(ordering: .acquiring) }

    /// Bytes of the WAL files recovery would replay (the current one and any older ones whose
    /// memtable is not flushed yet), as on disk: an open WAL counts the space reserved ahead of
    /// its appends (SPEC.md §5.1).
    func walFileBytes() -> UInt64 {
        let logNumber = manifestLock.withLock { versions.logNumber }
        guard let names = try? fileSystem.listDirectory(directory) else { return 0 }
        var total: UInt64 = 0
        for name in names {
            guard case let .wal(n)? = StoreFile.parse(name), n >= logNumber,
                  let file = try? fileSystem.openReadable(joinPath(directory, name)) else { continue }
            total += file.size
            file.close()
        }
        return total
    }

    /// Counters and the shape of the tree.
    public func statistics() -> EngineStatistics {
        let view = currentView()
        var spaces: [KeySpaceStatistics] = []
        for ks in keySpaces {
            let levels = view.version.keySpaces[ks.id]?.levels ?? Array(repeating: [], count: Version.levelCount)
            let bytes = levels.map { level in level.lazy.map(\.meta.fileSize).saturatingSum() }
            // Entry counts come from the segments' properties, which a crafted store may set
            // near 2^64: the sums saturate instead of trapping.
            spaces.append(KeySpaceStatistics(
                name: ks.name, id: ks.id, segmentsPerLevel: levels.map(\.count), bytesPerLevel: bytes,
                liveSegmentBytes: bytes.saturatingSum(),
                segmentEntries: levels.joined().lazy.map(\.meta.entryCount).saturatingSum()))
        }
        let memBytes = view.memtables.values.reduce(0) { $0 + $1.approximateBytes }
            + (view.immutables?.values.reduce(0) { $0 + $1.approximateBytes } ?? 0)
        var s = EngineStatistics(sinceOpen: stats.sinceOpen, lifetime: stats.lifetime, keySpaces: spaces,
                                 memtableBytes: memBytes, blockCacheBytes: cache.usageBytes, walFileBytes: walFileBytes())
        s.openedIdBlocks = cache.opened.blockCount
        s.openedIdBlockBytes = cache.opened.usedBytes
        return s
    }
}

/// What ``EngineOptions`` asks of one key space's segments (``EngineOptions/prefixFilters``,
/// ``EngineOptions/idKeySpaces``, ``EngineOptions/cacheFillingKeySpaces``).
private struct KeySpaceWriteSettings {
    var filterPrefixSuffixBytes: Int
    var idBlocks: Bool
    var fillsCacheOnFlush: Bool

    init(name: String, options: EngineOptions) {
        filterPrefixSuffixBytes = options.prefixFilters[name] ?? 0
        idBlocks = options.idKeySpaces.contains(name)
        fillsCacheOnFlush = options.cacheFillingKeySpaces.contains(name)
    }
}
