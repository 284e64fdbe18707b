/// Background work the engine reports to ``EngineOptions/eventListener``, like RocksDB's event
/// listener: for monitoring, and for crash tests that want to kill a process mid-flush.
public enum EngineEvent: Sendable, Equatable {
    /// A frozen memtable starts being written to level-0 segments.
    case flushBegan
    /// The flush ended; `succeeded` is false when it failed (it is retried later).
    case flushEnded(succeeded: Bool)
    /// A compaction job starts merging segments of `level` into `outputLevel`.
    case compactionBegan(level: Int, outputLevel: Int)
    case compactionEnded(succeeded: Bool)
    /// ``Engine/close()`` stopped waiting for the archive's last shipment
    /// (``ArchiveOptions/closeTimeout``): the archive holds the commits up to
    /// `archivedSequence`, not those after it, up to `latestSequence`.
    case archiveUnfinished(archivedSequence: UInt64, latestSequence: UInt64)
}
