import CStrataSupport

/// A sized LRU cache of decoded blocks, shared by all segments of an engine. Sharded by key so
/// that readers on different threads rarely contend on one lock.
final class BlockCache: Sendable {
    struct Key: Hashable {
        var segmentId: UInt64
        var offset: UInt64
    }

    private struct Entry {
        var key: Key
        var block: Block? {
            didSet { (object, restarts) = Self.addresses(of: block) }
        }
        var prev: Int
        var next: Int
        /// Where `block`'s object and restart array lie, for ``BlockCache/prefetch(_:)``: read
        /// from the block itself, they would cost the memory miss the prefetch is meant to hide.
        private(set) var object: UnsafeRawPointer?
        private(set) var restarts: UnsafeRawPointer?

        init(key: Key, block: Block?, prev: Int, next: Int) {
            self.key = key
            self.block = block
            self.prev = prev
            self.next = next
            (object, restarts) = Self.addresses(of: block)
        }

        private static func addresses(of block: Block?) -> (UnsafeRawPointer?, UnsafeRawPointer?) {
            guard let block else { return (nil, nil) }
            return (UnsafeRawPointer(Unmanaged.passUnretained(block).toOpaque()), block.contents.baseAddress! + block.restartsOffset)
        }
    }

    /// Key → entry position, by linear probing with a multiplicative hash of the two words.
    /// A `Dictionary` hashed each key with SipHash: with its lookups and removals, a quarter of
    /// a random point read.
    private struct KeyIndex {
        /// Entry position + 1; 0 is an empty slot.
        private var slots = [Int32](repeating: 0, count: 64)
        private var mask = 63
        private(set) var count = 0

        @inline(__always) private func ideal(_ key: Key) -> Int {
            let h = (key.segmentId &* 0x9E37_79B9_7F4A_7C15) ^ (key.offset &* 0xC2B2_AE3D_27D4_EB4F)
            return Int(truncatingIfNeeded: (h ^ (h >> 29)) & UInt64(mask))
        }

        func find(_ key: Key, in entries: [Entry]) -> Int? {
            var i = ideal(key)
            while true {
                let s = Int(slots[i])
                if s == 0 { return nil }
                if entries[s - 1].key == key { return s - 1 }
                i = (i + 1) & mask
            }
        }

        /// REQUIRES: `key` (the key of `entries[position]`) is not in the index.
        mutating func insert(_ key: Key, position: Int, in entries: [Entry]) {
            if (count + 1) * 2 > slots.count { grow(entries) }
            var i = ideal(key)
            while slots[i] != 0 { i = (i + 1) & mask }
            slots[i] = Int32(position + 1)
            count += 1
        }

        mutating func remove(_ key: Key, in entries: [Entry]) {
            var i = ideal(key)
            while true {
                let s = Int(slots[i])
                if s == 0 { return }
                if entries[s - 1].key == key { break }
                i = (i + 1) & mask
            }
            // Backward-shift deletion: move later members of the probe run into the hole, so
            // that lookups never need tombstones.
            var j = i
            while true {
                j = (j + 1) & mask
                let s = Int(slots[j])
                if s == 0 { break }
                let k = ideal(entries[s - 1].key)
                let staysPut = i <= j ? (i < k && k <= j) : (i < k || k <= j)
                if !staysPut {
                    slots[i] = slots[j]
                    i = j
                }
            }
            slots[i] = 0
            count -= 1
        }

        private mutating func grow(_ entries: [Entry]) {
            let old = slots
            slots = [Int32](repeating: 0, count: old.count * 2)
            mask = slots.count - 1
            for s in old where s != 0 {
                var i = ideal(entries[Int(s) - 1].key)
                while slots[i] != 0 { i = (i + 1) & mask }
                slots[i] = s
            }
        }
    }

    /// One LRU list: a slot array with intrusive links; slot 0 is the sentinel.
    private struct Shard {
        var index = KeyIndex()
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
            guard let i = index.find(key, in: entries) else { return nil }
            unlink(i)
            pushFront(i)
            return entries[i].block
        }

        func prefetch(_ key: Key) {
            guard let i = index.find(key, in: entries), let object = entries[i].object else { return }
            strata_prefetch(object)
            strata_prefetch(entries[i].restarts)
        }

        mutating func insert(_ key: Key, _ block: Block) {
            if let i = index.find(key, in: entries) {
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
                index.insert(key, position: i, in: entries)
                pushFront(i)
                usage += block.charge
            }
            while usage > capacity, entries[0].prev != 0 {
                let victim = entries[0].prev
                unlink(victim)
                usage -= entries[victim].block!.charge
                index.remove(entries[victim].key, in: entries)
                entries[victim].block = nil
                free.append(victim)
            }
        }

        mutating func removeAll(segmentId: UInt64) {
            for i in entries.indices.dropFirst() where entries[i].block != nil && entries[i].key.segmentId == segmentId {
                unlink(i)
                usage -= entries[i].block!.charge
                index.remove(entries[i].key, in: entries)
                entries[i].block = nil
                free.append(i)
            }
        }

        /// Entries holding a block, for tests: (key, index finds it at its position).
        func check() -> (live: Int, indexed: Int, allFound: Bool) {
            var live = 0, allFound = true
            for i in entries.indices.dropFirst() where entries[i].block != nil {
                live += 1
                if index.find(entries[i].key, in: entries) != i { allFound = false }
            }
            return (live, index.count, allFound)
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

    /// Starts loading the cached block for `key`, if any, into the CPU cache: its object (which
    /// a hit retains) and its restart array (which a lookup reads first). A batched read calls
    /// this for a group of keys before fetching any of their blocks.
    func prefetch(_ key: Key) {
        shards[shard(key)].mutex.withLock { $0.prefetch(key) }
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

    /// For tests: whether every cached block is found through the index and nothing else is
    /// indexed.
    var isConsistent: Bool {
        shards.allSatisfy { s in s.mutex.withLock { let c = $0.check(); return c.allFound && c.live == c.indexed } }
    }
}
