import Synchronization

/// What a store has read since it was opened: lets code (and tests) check that relations load
/// lazily and that a prefetch replaced per-object reads.
///
/// ```swift
/// let before = store.statistics()
/// _ = order.customer.target
/// print(store.statistics().objectsRead - before.objectsRead)   // 1
/// ```
public struct StoreStatistics: Sendable, Equatable {
    /// Objects decoded from stored bytes.
    public var objectsRead: UInt64
    /// Relation edges read (backlink entries and to-many lists).
    public var edgesRead: UInt64
    /// Objects written (puts and rewrites) by committed transactions.
    public var objectsWritten: UInt64
    /// Edges written or removed by committed transactions.
    public var edgesWritten: UInt64
    /// Secondary index entries read by queries and `@Unique` checks.
    public var indexEntriesRead: UInt64 = 0
}

/// The live counters behind ``StoreStatistics``.
final class StoreCounters: Sendable {
    let objectsRead = Atomic<UInt64>(0)
    let edgesRead = Atomic<UInt64>(0)
    let objectsWritten = Atomic<UInt64>(0)
    let edgesWritten = Atomic<UInt64>(0)
    let indexEntriesRead = Atomic<UInt64>(0)

    var snapshot: StoreStatistics {
        StoreStatistics(objectsRead: objectsRead.load(ordering: .relaxed), edgesRead: edgesRead.load(ordering: .relaxed),
                        objectsWritten: objectsWritten.load(ordering: .relaxed),
                        edgesWritten: edgesWritten.load(ordering: .relaxed),
                        indexEntriesRead: indexEntriesRead.load(ordering: .relaxed))
    }
}
