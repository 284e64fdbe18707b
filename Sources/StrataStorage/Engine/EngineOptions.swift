/// When a write is durable.
public enum Durability: Sendable, Equatable {
    /// The write reaches the OS before `write` returns: it survives a process crash, not a power
    /// cut. The fastest mode.
    case none
    /// Every write is followed by its own fdatasync before `write` returns.
    case sync
    /// Durable like `.sync`, but writers that arrive while a sync is under way are committed
    /// together and share the next fdatasync (group commit).
    case groupCommit
}

/// How an ``Engine`` is opened.
///
/// ```swift
/// var options = EngineOptions()
/// options.durability = .groupCommit
/// options.memtableBytes = 32 << 20
/// let engine = try Engine.open(directory: "/var/lib/app/db", options: options)
/// ```
public struct EngineOptions: Sendable {
    /// All file access goes through this; tests pass an ``InMemoryFileSystem``.
    public var fileSystem: any FileSystem = PosixFileSystem()
    /// Create the directory and an empty store when missing (default true).
    public var createIfMissing = true
    /// Default durability of `write` (default `.none`, like LevelDB's default).
    public var durability: Durability = .none
    /// Memtable size (all key spaces together) at which it is frozen and flushed to segments.
    /// 4 MiB by measurement: random inserts of 1M entries ran at 1.54M/s with 4 MiB, 0.65M/s
    /// with 16 MiB and 0.53M/s with 64 MiB (skip-list nodes stop fitting in the CPU caches).
    public var memtableBytes = 4 << 20
    /// Size of the cache of decoded blocks (evicting by CLOCK, an approximation of LRU).
    public var blockCacheBytes = 64 << 20
    /// Target size of a data block before compression. 2 KiB by measurement (SPEC.md §6.1):
    /// random point reads ran 20% faster than with 4 KiB, for 5% more space on disk.
    public var blockBytes = 2048
    /// Size at which compaction cuts its output into a new segment (default 2 MiB).
    public var targetSegmentBytes = Int(CompactionPolicy.targetSegmentBytes)
    /// Key spaces whose flushes also put the blocks they write into the block cache, as
    /// RocksDB's `prepopulate_block_cache` does for flushes: what was just written is what an app
    /// reads next (the objects it saved), and a read then finds it decoded instead of reading,
    /// checking and decompressing the block again. It costs the flush a copy and a cache insert
    /// per block (a quarter of a flush-bound bulk load's speed, measured on db_bench's
    /// fillseq-batch1000), so it is off unless a key space is named. Compactions never fill the
    /// cache: their output is mostly data nobody has asked for.
    ///
    /// ```swift
    /// options.cacheFillingKeySpaces = ["objects"]
    /// ```
    public var cacheFillingKeySpaces: Set<String> = []
    /// Bloom filter bits per key (0 disables the filter's effect: every key "may" be there).
    public var bloomBitsPerKey = 10
    /// lz4-compress blocks when that saves at least an eighth.
    public var compression = true
    /// Open without writing anything: reads (including data still in the WAL) work, writes,
    /// flushes, compactions and new key spaces throw ``StorageError/readOnly(path:)``. Several
    /// read-only openers may share a store; a writer excludes them and they exclude a writer.
    /// Works in a directory the process cannot write.
    public var readOnly = false
    /// Key spaces to create at open if they do not exist yet (besides "default").
    public var keySpaces: [String] = []
    /// Key spaces whose keys are a prefix followed by a fixed number of bytes (an id, say),
    /// with that number: their segments' bloom filters also hold each key's prefix, so that
    /// ``Engine/makeIterator(in:prefix:suffixBytes:snapshot:)`` skips the segments that hold
    /// no key with the prefix. Segments written before the option was set are never skipped.
    /// Values must lie in 1...``StorageLimits/maxKeyBytes``.
    ///
    /// ```swift
    /// options.prefixFilters = ["edges": 8]   // edge key = source · kind · target id (8 bytes)
    /// ```
    public var prefixFilters: [String: Int] = [:]
    /// Key spaces whose keys end in an 8-byte big-endian id after a head that many keys share
    /// (an entity's objects: entity id, object id). Their segments store such runs of keys in
    /// id-addressed blocks (SPEC.md §6.1.1), where a read finds its entry by arithmetic on the
    /// id instead of searching restart points. Keys of any other shape are still stored, in
    /// ordinary blocks.
    ///
    /// ```swift
    /// options.idKeySpaces = ["objects"]   // key = entity id (4 bytes) · object id (8 bytes)
    /// ```
    public var idKeySpaces: Set<String> = []
    /// Called on the engine's background threads when a flush or compaction begins and ends.
    /// Keep it short: the work waits for it. A call into the engine from inside it throws
    /// ``StorageError/calledFromCallback(_:)`` (it would wait for itself); ``Engine/close()``
    /// from inside it closes once it has returned. Hand such work to another queue.
    ///
    /// ```swift
    /// options.eventListener = { event in if case .flushBegan = event { print("flushing") } }
    /// ```
    public var eventListener: (@Sendable (EngineEvent) -> Void)?
    /// A continuous archive to ship the store to (SPEC.md §3.3), for point-in-time restore
    /// with ``Engine/restoreArchive(from:toDirectoryPath:at:options:)``. Not with ``readOnly``.
    public var archive: ArchiveOptions?
    /// Encrypts the store at rest (SPEC.md §14): 32 bytes, the AES-256 master key. Every file
    /// the engine writes (WAL, segments, manifests, `STATS`, and what backups and the archive
    /// write) is sealed with AES-256-GCM under a key derived from this one and the file's own
    /// random salt. An encrypted store opened without its key fails with
    /// ``StorageError/encryptionKeyRequired(file:)``, with another key with
    /// ``StorageError/wrongEncryptionKey(file:)``; a plaintext store opened with a key with
    /// ``StorageError/notEncrypted(file:)``. The key is never written anywhere.
    ///
    /// ```swift
    /// options.encryptionKey = try Array(Data(contentsOf: keyFileURL))
    /// ```
    public var encryptionKey: [UInt8]?
    /// How long after an open the engine waits before it compacts what the last session left
    /// due, in seconds (0 starts at once). An open and the app's first reads then have the CPU
    /// and the disk to themselves: a compaction that close cancelled starts again from the
    /// beginning, and for an encrypted store it opens and seals every block it merges. The wait
    /// ends early at the first flush, at a write held back by level 0 and at
    /// ``Engine/waitForBackgroundWork()``. Must be finite and in 0...3600.
    ///
    /// ```swift
    /// options.compactionDelayAfterOpen = 0   // compact at once, as before
    /// ```
    public var compactionDelayAfterOpen: Double = 1

    public init() {}

    /// The segment format new segments are written in. Only tests of reading older stores
    /// set it (to 1).
    var segmentFormatVersion = FormatConstants.segmentFormatVersion

    /// When the manifest is rewritten as a snapshot of the live state (``ManifestRollRule``,
    /// SPEC.md §8). Only tests change them, to make a short workload roll its manifest often.
    /// Plain integers, not the rule itself: an internal type stored in this public struct made
    /// the compiler copy `StoreOptions` wrongly in a module that imports this one without
    /// `@testable` (a crash in `IndexTests`, Swift 6.3.1).
    var manifestRollMinimumBytes = ManifestRollRule().minimumBytes
    var manifestRollLiveMultiple = ManifestRollRule().liveMultiple

    var segmentLayout: SegmentLayout {
        SegmentLayout(blockBytes: max(256, blockBytes), restartInterval: 8,
                      bloomBitsPerKey: max(1, bloomBitsPerKey), compress: compression, formatVersion: segmentFormatVersion)
    }
}
