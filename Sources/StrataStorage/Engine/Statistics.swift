import Synchronization

/// Engine counters, updated with relaxed atomics on the hot paths. Write amplification is
/// `bytesWrittenToDisk / userBytesWritten`.
final class StatisticsCounters: Sendable {
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
}

/// A snapshot of the engine's counters and shape, from ``Engine/statistics()``.
///
/// ```swift
/// let s = engine.statistics()
/// print("write amplification", s.writeAmplification)
/// ```
public struct EngineStatistics: Sendable, Equatable {
    /// Key and value bytes handed to `write`.
    public var userBytesWritten: UInt64
    /// Bytes appended to the write-ahead log.
    public var walBytesWritten: UInt64
    /// Bytes written into segment files (flushes, later compactions).
    public var segmentBytesWritten: UInt64
    /// Bytes written to manifests.
    public var manifestBytesWritten: UInt64
    /// Bytes read from segment files.
    public var bytesRead: UInt64
    public var blockCacheHits: UInt64
    public var blockCacheMisses: UInt64
    /// Point reads that a segment's bloom filter answered "absent" without reading a block.
    public var bloomFilterNegatives: UInt64
    public var flushes: UInt64
    public var writeBatches: UInt64
    /// fdatasync calls on the WAL (group commit makes this smaller than the durable writes).
    public var walSyncs: UInt64
    /// Times a writer waited: the previous memtable was still being flushed, or level 0 had
    /// ``CompactionPolicy`` stop-writes segments.
    public var writeStalls: UInt64
    /// Writes delayed by 1 ms because level 0 was filling up.
    public var writeSlowdowns: UInt64
    public var compactions: UInt64
    /// Bytes of segments read by compactions.
    public var compactionBytesRead: UInt64
    /// Time spent compacting, in seconds.
    public var compactionSeconds: Double
    /// Per key space: segments per level and live bytes.
    public var keySpaces: [KeySpaceStatistics]
    /// Bytes held by memtables.
    public var memtableBytes: Int
    public var blockCacheBytes: Int

    /// Total bytes written to disk.
    public var bytesWrittenToDisk: UInt64 { walBytesWritten + segmentBytesWritten + manifestBytesWritten }

    /// Live bytes on disk (segments of every key space).
    public var liveSegmentBytes: UInt64 { keySpaces.reduce(0) { $0 + $1.liveSegmentBytes } }

    /// Bytes written to disk per user byte (0 before any write).
    public var writeAmplification: Double {
        userBytesWritten == 0 ? 0 : Double(bytesWrittenToDisk) / Double(userBytesWritten)
    }
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
