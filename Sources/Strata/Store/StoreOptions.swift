import StrataStorage

/// How commits reach the disk: `.sync` (each transaction is durable when it returns),
/// `.groupCommit` (durable, with concurrent commits sharing one sync) or `.none` (survives a
/// process crash, not a power cut).
public typealias Durability = StrataStorage.Durability

/// Tuning of the storage engine under a store.
public typealias EngineOptions = StrataStorage.EngineOptions

/// How a ``Store`` opens.
///
/// ```swift
/// var options = StoreOptions()
/// options.durability = .none           // bulk import: fast, not power-cut safe
/// let store = try Store(directoryPath: path, options: options)
/// ```
public struct StoreOptions: Sendable {
    /// Durability of every transaction. Default `.sync`: a transaction that returned is on disk.
    public var durability: Durability = .sync
    /// Open without writing anything (inspection tools). Writes throw ``StrataError/readOnly``;
    /// read-only openers share a store, and exclude a writer.
    public var readOnly = false
    /// Engine tuning (memtable and cache sizes, compression, file system). Its durability,
    /// read-only flag and key spaces are set from the store's.
    public var engine = EngineOptions()

    public init() {}
}

/// Sizes and time of a full compaction (``Store/compact()``).
public typealias CompactionReport = StrataStorage.CompactionReport
