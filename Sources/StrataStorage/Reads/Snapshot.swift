import Synchronization

/// A pinned, consistent view of the store: reads through it see exactly the writes committed
/// before it was taken, whatever is written afterwards. Released when the last reference goes
/// (or by `release()`).
///
/// ```swift
/// let snap = engine.snapshot()
/// try engine.write(batch)                       // not visible through snap
/// let old = try engine.get(key, in: ks, snapshot: snap)
/// ```
public final class Snapshot: Sendable {
    /// Every write with a sequence number up to this one is visible.
    public let sequence: UInt64
    private let list: SnapshotList
    private let released = Atomic<Bool>(false)

    init(sequence: UInt64, list: SnapshotList) {
        self.sequence = sequence
        self.list = list
        list.add(sequence)
    }

    deinit { release() }

    /// Gives up the snapshot early; later compactions may drop the versions it kept.
    public func release() {
        if released.exchange(true, ordering: .relaxed) == false { list.remove(sequence) }
    }
}

/// The sequence numbers of live snapshots, so that compaction keeps what they can see.
final class SnapshotList: Sendable {
    private let counts = LockedValue<[UInt64: Int]>([:])

    func add(_ s: UInt64) { counts.withLock { $0[s, default: 0] += 1 } }

    func remove(_ s: UInt64) {
        counts.withLock {
            if let c = $0[s] { $0[s] = c > 1 ? c - 1 : nil }
        }
    }

    /// Oldest live snapshot, if any.
    var oldest: UInt64? { counts.withLock { $0.keys.min() } }
}
