/// A sized LRU cache of decoded blocks, shared by all segments of an engine. Sharded by key so
/// that readers on different threads rarely contend on one lock.
final class BlockCache: Sendable {
    struct Key: Hashable {
        var segmentId: UInt64
        var offset: UInt64
    }

    private struct Entry {
        var key: Key
        var block: Block?
        var prev: Int
        var next: Int
    }

    /// One LRU list: a slot array with intrusive links; slot 0 is the sentinel.
    private struct Shard {
        var index: [Key: Int] = [:]
        var entries: [Entry] = [Entry(key: Key(segmentId: 0, offset: 0), block: nil, prev: 0, next: 0)]
        var free: [Int] = []
        var usage = 0
        let capacity: Int

        init(capacity: Int) { self.capacity = capacity }

        mutating func unlink(_ i: Int) {
            let p = entries[i].prev, n = entries[i].next
            entries[p].next = n
            entries[n].prev = p
        }

        mutating func pushFront(_ i: Int) {
            let first = entries[0].next
            entries[i].prev = 0
            entries[i].next = first
            entries[first].prev = i
            entries[0].next = i
        }

        mutating func get(_ key: Key) -> Block? {
            guard let i = index[key] else { return nil }
            unlink(i)
            pushFront(i)
            return entries[i].block
        }

        mutating func insert(_ key: Key, _ block: Block) {
            if let i = index[key] {
                usage -= entries[i].block!.charge
                entries[i].block = block
                usage += block.charge
                unlink(i)
                pushFront(i)
            } else {
                let i: Int
                if let f = free.popLast() {
                    i = f
                    entries[i] = Entry(key: key, block: block, prev: 0, next: 0)
                } else {
                    i = entries.count
                    entries.append(Entry(key: key, block: block, prev: 0, next: 0))
                }
                index[key] = i
                pushFront(i)
                usage += block.charge
            }
            while usage > capacity, entries[0].prev != 0 {
                let victim = entries[0].prev
                unlink(victim)
                usage -= entries[victim].block!.charge
                index[entries[victim].key] = nil
                entries[victim].block = nil
                free.append(victim)
            }
        }

        mutating func removeAll(segmentId: UInt64) {
            for (key, i) in index where key.segmentId == segmentId {
                unlink(i)
                usage -= entries[i].block!.charge
                entries[i].block = nil
                index[key] = nil
                free.append(i)
            }
        }
    }

    private final class ShardBox: Sendable {
        let mutex: LockedValue<Shard>
        init(capacity: Int) { mutex = LockedValue(Shard(capacity: capacity)) }
    }

    private static let shardCount = 16
    private let shards: [ShardBox]
    let capacityBytes: Int

    init(capacityBytes: Int) {
        self.capacityBytes = capacityBytes
        let per = max(1, capacityBytes / Self.shardCount)
        shards = (0..<Self.shardCount).map { _ in ShardBox(capacity: per) }
    }

    @inline(__always) private func shard(_ key: Key) -> Int {
        Int(truncatingIfNeeded: (key.segmentId &* 0x9E37_79B9_7F4A_7C15 ^ (key.offset >> 10)) % UInt64(Self.shardCount))
    }

    func get(_ key: Key) -> Block? {
        shards[shard(key)].mutex.withLock { $0.get(key) }
    }

    func insert(_ key: Key, _ block: Block) {
        guard block.charge <= capacityBytes / Self.shardCount else { return }
        shards[shard(key)].mutex.withLock { $0.insert(key, block) }
    }

    /// Drops the blocks of a segment that is going away.
    func evict(segmentId: UInt64) {
        for s in shards { s.mutex.withLock { $0.removeAll(segmentId: segmentId) } }
    }

    var usageBytes: Int { shards.reduce(0) { acc, s in acc + s.mutex.withLock { $0.usage } } }
}
