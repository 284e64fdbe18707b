/// A named, independent sorted key space (like a RocksDB column family). Key spaces share the
/// write-ahead log and the sequence counter, so one ``WriteBatch`` can change several atomically.
///
/// ```swift
/// let objects = try engine.keySpace(named: "objects")   // created on first use
/// let edges = try engine.keySpace(named: "edges")
/// ```
public struct KeySpace: Hashable, Sendable, CustomStringConvertible {
    /// Stable number that identifies the key space on disk.
    public let id: UInt32
    public let name: String

    public var description: String { name }
}
