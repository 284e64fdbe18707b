import Synchronization

/// Engine counters, updated with relaxed atomics on the hot paths. `base` holds what earlier
/// sessions of the store counted (the `STATS` file, SPEC.md §3.1): counters since open plus
/// `base` are the store's lifetime figures.
package final class StatisticsCounters: Sendable {
    package init() {}

    let userBytesWritten = Atomic<UInt64>(0)
    let walBytesWritten = Atomic<UInt64>(0)
    let segmentBytesWritten = Atomic<UInt64>(0)
    let manifestBytesWritten = Atomic<UInt64>(0)
    let bytesRead = Atomic<UInt64>(0)
    let blockCacheHits = Atomic<UInt64>(0)
    let blockCacheMisses = Atomic<UInt64>(0)
    let bloomNegatives = Atomic<UInt64>(0)
    let flushes = Atomic<UInt64>(0)
    let writeBatches = Atomic<UInt64>(0)
    let walSyncs = Atomic<UInt64>(0)
    let writeStalls = Atomic<UInt64>(0)
    let writeSlowdowns = Atomic<UInt64>(0)
    let compactions = Atomic<UInt64>(0)
    let compactionBytesRead = Atomic<UInt64>(0)
    let compactionMicros = Atomic<UInt64>(0)
    /// Lifetime counters of the store before this open.
    let base = Mutex(EngineCounters())

    var sinceOpen: EngineCounters {
        EngineCounters(
            userBytesWritten: userBytesWritten.load(ordering: .relaxed),
            walBytesWritten: walBytesWritten.load(ordering: .relaxed),
            segmentBytesWritten: segmentBytesWritten.load(ordering: .relaxed),
            manifestBytesWritten: manifestBytesWritten.load(ordering: .relaxed),
            bytesRead: bytesRead.load(ordering: .relaxed),
            blockCacheHits: blockCacheHits.load(ordering: .relaxed),
            blockCacheMisses: blockCacheMisses.load(ordering: .relaxed),
            bloomFilterNegatives: bloomNegatives.load(ordering: .relaxed),
            flushes: flushes.load(ordering: .relaxed),
            writeBatches: writeBatches.load(ordering: .relaxed),
            walSyncs: walSyncs.load(ordering: .relaxed),
            writeStalls: writeStalls.load(ordering: .relaxed),
            writeSlowdowns: writeSlowdowns.load(ordering: .relaxed),
            compactions: compactions.load(ordering: .relaxed),
            compactionBytesRead: compactionBytesRead.load(ordering: .relaxed),
            compactionMicros: compactionMicros.load(ordering: .relaxed))
    }

    var lifetime: EngineCounters { base.withLock { $0 } + sinceOpen }
}

/// The engine's activity counters. ``EngineStatistics`` carries two sets: since the engine was
/// opened, and over the store's whole life (persisted in the `STATS` file at each close).
///
/// ```swift
/// let life = engine.statistics().lifetime
/// print("write amplification over the store's life:", life.writeAmplification)
/// ```
public struct EngineCounters: Sendable, Equatable {
    /// Key and value bytes handed to `write`.
    public var userBytesWritten: UInt64 = 0
    /// Bytes appended to the write-ahead log.
    public var walBytesWritten: UInt64 = 0
    /// Bytes written into segment files (flushes, later compactions).
    public var segmentBytesWritten: UInt64 = 0
    /// Bytes written to manifests.
    public var manifestBytesWritten: UInt64 = 0
    /// Bytes read from segment files.
    public var bytesRead: UInt64 = 0
    public var blockCacheHits: UInt64 = 0
    public var blockCacheMisses: UInt64 = 0
    /// Point reads that a segment's bloom filter answered "absent" without reading a block.
    public var bloomFilterNegatives: UInt64 = 0
    public var flushes: UInt64 = 0
    public var writeBatches: UInt64 = 0
    /// fdatasync calls on the WAL (group commit makes this smaller than the durable writes).
    public var walSyncs: UInt64 = 0
    /// Times a writer waited: the previous memtable was still being flushed, or level 0 had
    /// ``CompactionPolicy`` stop-writes segments.
    public var writeStalls: UInt64 = 0
    /// Writes delayed by 1 ms because level 0 was filling up.
    public var writeSlowdowns: UInt64 = 0
    public var compactions: UInt64 = 0
    /// Bytes of segments read by compactions.
    public var compactionBytesRead: UInt64 = 0
    /// Time spent compacting, in microseconds.
    public var compactionMicros: UInt64 = 0

    public init() {}

    init(userBytesWritten: UInt64, walBytesWritten: UInt64, segmentBytesWritten: UInt64, manifestBytesWritten: UInt64,
         bytesRead: UInt64, blockCacheHits: UInt64, blockCacheMisses: UInt64, bloomFilterNegatives: UInt64,
         flushes: UInt64, writeBatches: UInt64, walSyncs: UInt64, writeStalls: UInt64, writeSlowdowns: UInt64,
         compactions: UInt64, compactionBytesRead: UInt64, compactionMicros: UInt64) {
        self.userBytesWritten = userBytesWritten
        self.walBytesWritten = walBytesWritten
        self.segmentBytesWritten = segmentBytesWritten
        self.manifestBytesWritten = manifestBytesWritten
        self.bytesRead = bytesRead
        self.blockCacheHits = blockCacheHits
        self.blockCacheMisses = blockCacheMisses
        self.bloomFilterNegatives = bloomFilterNegatives
        self.flushes = flushes
        self.writeBatches = writeBatches
        self.walSyncs = walSyncs
        self.writeStalls = writeStalls
        self.writeSlowdowns = writeSlowdowns
        self.compactions = compactions
        self.compactionBytesRead = compactionBytesRead
        self.compactionMicros = compactionMicros
    }

    /// Every counter by name, in the order the `STATS` file stores them (SPEC.md §3.1): append
    /// new counters at the end, never reorder.
    public static var fields: [(name: String, keyPath: WritableKeyPath<EngineCounters, UInt64>)] { [
        ("userBytesWritten", \.userBytesWritten), ("walBytesWritten", \.walBytesWritten),
        ("segmentBytesWritten", \.segmentBytesWritten), ("manifestBytesWritten", \.manifestBytesWritten),
        ("bytesRead", \.bytesRead), ("blockCacheHits", \.blockCacheHits), ("blockCacheMisses", \.blockCacheMisses),
        ("bloomFilterNegatives", \.bloomFilterNegatives), ("flushes", \.flushes), ("writeBatches", \.writeBatches),
        ("walSyncs", \.walSyncs), ("writeStalls", \.writeStalls), ("writeSlowdowns", \.writeSlowdowns),
        ("compactions", \.compactions), ("compactionBytesRead", \.compactionBytesRead),
        ("compactionMicros", \.compactionMicros),
    ] }

    /// Time spent compacting, in seconds.
    public var compactionSeconds: Double { Double(compactionMicros) / 1e6 }

    /// Total bytes written to disk.
    public var bytesWrittenToDisk: UInt64 { Self.saturatingSum(walBytesWritten, segmentBytesWritten, manifestBytesWritten) }

    /// Bytes written to disk per user byte (0 before any write).
    public var writeAmplification: Double {
        userBytesWritten == 0 ? 0 : Double(bytesWrittenToDisk) / Double(userBytesWritten)
    }

    /// Counter by counter, saturating: the lifetime counters come from the `STATS` file, which
    /// a crafted store can fill with any value, and a sum must not trap.
    static func + (a: EngineCounters, b: EngineCounters) -> EngineCounters {
        var out = a
        for f in fields { out[keyPath: f.keyPath] = saturatingSum(a[keyPath: f.keyPath], b[keyPath: f.keyPath]) }
        return out
    }

    static func saturatingSum(_ values: UInt64...) -> UInt64 { values.saturatingSum() }
}

/// A snapshot of the engine's counters and shape, from ``Engine/statistics()``. The counters
/// read directly from it (`s.flushes`) are those since the engine was opened; `lifetime` holds
/// the store's whole history.
///
/// ```swift
/// let s = engine.statistics()
/// print("write amplification since open", s.writeAmplification)
/// print("segments per level", s.keySpaces.map(\.segmentsPerLevel))
/// ```
@dynamicMemberLookup
public struct EngineStatistics: Sendable, Equatable {
    /// Counters since this engine was opened.
    public var sinceOpen: EngineCounters
    /// Counters over the store's life: earlier sessions (as of their last clean close) plus
    /// this one.
    public var lifetime: EngineCounters
    /// Per key space: segments per level and live bytes.
    public var keySpaces: [KeySpaceStatistics]
    /// Bytes held by memtables.
    public var memtableBytes: Int
    public var blockCacheBytes: Int
    /// Id blocks of an encrypted store's segments that point reads have read often enough to
    /// keep opened (decrypted), and the bytes they hold (SPEC.md §14.3). They count against the
    /// block cache's capacity, half of which they may take, and are freed with their segment
    /// (after a compaction, or at close). Zero in a plaintext store.
    public var openedIdBlocks: Int = 0
    public var openedIdBlockBytes: Int = 0
    /// Bytes of the write-ahead log files still needed by recovery.
    public var walFileBytes: UInt64

    public subscript<T>(dynamicMember keyPath: KeyPath<EngineCounters, T>) -> T { sinceOpen[keyPath: keyPath] }

    /// Live bytes on disk (segments of every key space).
    public var liveSegmentBytes: UInt64 { keySpaces.reduce(0) { $0 + $1.liveSegmentBytes } }
}

/// Shape of one key space.
public struct KeySpaceStatistics: Sendable, Equatable {
    public var name: String
    public var id: UInt32
    /// `segmentsPerLevel[i]` is the number of segments at level i.
    public var segmentsPerLevel: [Int]
    public var bytesPerLevel: [UInt64]
    /// Bytes of the live segment files.
    public var liveSegmentBytes: UInt64
    /// Entries (including tombstones and old versions) in live segments.
    public var segmentEntries: UInt64
}

extension Sequence<UInt64> {
    /// The sum, or `UInt64.max` when it would overflow: for figures read from disk (counters,
    /// entry counts), which a crafted file may set to anything.
    func saturatingSum() -> UInt64 {
        var total: UInt64 = 0
        for v in self {
            let (sum, overflow) = total.addingReportingOverflow(v)
            if overflow { return .max }
            total = sum
        }
        return total
    }
}
