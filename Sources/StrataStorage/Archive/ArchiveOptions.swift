/// A continuous archive of a store (SPEC.md §3.3): every segment, every state of the manifest and
/// the whole write-ahead log, shipped in the background to an ``ArchiveTarget``, from which
/// ``Engine/restoreArchive(from:toDirectoryPath:at:options:)`` rebuilds the store as of any
/// commit the archive holds (point-in-time restore).
///
/// Commits never wait for the archive: a background thread ships the log written since its last
/// shipment every ``interval`` seconds, and the store's state (new segments, the manifest) at
/// most every ``stateInterval`` seconds. A failing target is retried (backing off up to 30 s) and reported by
/// ``Engine/archiveStatus()``; meanwhile the store keeps the log files the archive still lacks.
///
/// ```swift
/// var options = EngineOptions()
/// options.archive = ArchiveOptions(target: DirectoryArchiveTarget(path: "/archive/shop"))
/// let engine = try Engine.open(directory: "/data/shop", options: options)
/// ```
public struct ArchiveOptions: Sendable {
    public var target: any ArchiveTarget
    /// Seconds between shipments of the log: how far the archive lags the store at most, when
    /// the target keeps up.
    public var interval: Double = 1
    /// Seconds between shipments of the store's state (its live segments and manifest), at
    /// most: a state is where a restore starts to replay the log from. The log in between is
    /// shipped every ``interval`` all the same, so any commit can be restored; fewer states
    /// ship fewer short-lived segments (a flush's output that a compaction soon replaces),
    /// which is most of what an archive costs a busy store. ``Engine/archiveNow(timeout:)`` and
    /// a close ship the latest state at once.
    public var stateInterval: Double = 60
    /// Which states of the store the archive keeps, and so how far back a restore can go.
    public var retention: ArchiveRetention = .states(16)
    /// Whether the target may hold other stores' archives beside this one. A target holding
    /// another store's objects is refused by default (``StorageError/archiveOfAnotherStore(storeIds:reason:)``):
    /// it is most often a second store pointed at the first one's target by mistake. Each
    /// store's objects carry its id, so stores sharing a target never touch each other's.
    public var sharesTarget = false

    /// Seconds ``Engine/close()`` waits for the last shipment. Past it (a target that hangs),
    /// the close goes on and releases the store, the listener gets
    /// ``EngineEvent/archiveUnfinished(archivedSequence:latestSequence:)``, and the archive
    /// lacks the commits after `archivedSequence`. A constant: when it was made a stored option,
    /// test binaries crashed with bad pointers in copies of `StoreOptions`, which was then taken
    /// for a miscompile; the same crash after ``sharesTarget`` was added went away once every
    /// module was rebuilt (an incremental build had kept objects compiled against the old
    /// layout), which is the likelier cause of both.
    public static let closeTimeout: Double = 30

    public init(target: any ArchiveTarget) {
        self.target = target
    }
}

/// How far back an archive keeps the store's history. A restore can reach any commit from the
/// oldest state kept on; the objects only older states needed are deleted.
public enum ArchiveRetention: Sendable, Equatable {
    /// The newest `n` states (a state is shipped at each flush and compaction, and at each open).
    case states(Int)
    /// The states of the last `seconds` seconds, and always the newest one.
    case seconds(Double)
}

/// How far the archive has come (``Engine/archiveStatus()``).
public struct ArchiveStatus: Sendable, Equatable {
    /// Every commit up to this sequence number is in the archive.
    public var archivedSequence: UInt64
    /// The store's last committed sequence number.
    public var latestSequence: UInt64
    /// Log bytes committed but not yet shipped.
    public var pendingLogBytes: UInt64
    /// Shipments that failed in a row (0 when the last one succeeded).
    public var consecutiveFailures: Int
    /// The last failure, while failures go on.
    public var lastError: String?
    /// Objects put into the archive since the store was opened.
    public var objectsPut: Int
    public var bytesPut: UInt64
}
