import CStrataSupport
import Dispatch

/// A sized cache of decoded blocks, shared by all segments of an engine, evicting by CLOCK
/// (second chance). Sharded by key so that readers on different threads rarely contend on one
/// lock.
///
/// CLOCK rather than an LRU list: a hit on an LRU list unlinks its entry and pushes it to the
/// front, writing the two neighbours' links and the list head, which in a cache of tens of
/// thousands of blocks are memory misses on every point read. A hit here sets one flag in the
/// entry it has just read; eviction pays instead, sweeping a hand over the entries and giving
/// each one that was used since the last sweep a second chance.
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
        /// Used since the hand last passed: the hand clears it instead of evicting the entry.
        var referenced: Bool
        /// Where `block`'s object and restart array lie, for ``BlockCache/prefetch(_:)``: read
        /// from the block itself, they would cost the memory miss the prefetch is meant to hide.
        private(set) var object: UnsafeRawPointer?
        private(set) var restarts: UnsafeRawPointer?

        /// A new entry starts unmarked: a block read once (a scan passing through) is the first
        /// to go, while one read again before the hand comes by has earned its mark.
        init(key: Key, block: Block?) {
            self.key = key
            self.block = block
            referenced = false
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

    /// One shard: entries in a slot array (a free slot holds no block), found through the index,
    /// evicted by a hand that sweeps the slots in order.
    private struct Shard {
        var index = KeyIndex()
        var entries: [Entry] = []
        var free: [Int] = []
        /// The next slot the hand looks at.
        var hand = 0
        var usage = 0
        let capacity: Int

        init(capacity: Int) { self.capacity = capacity }

        mutating func get(_ key: Key) -> Block? {
            guard let i = index.find(key, in: entries) else { return nil }
            // Written only when clear: a hot block's entry is then only read.
            if !entries[i].referenced { entries[i].referenced = true }
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
                entries[i].referenced = true
                usage += block.charge
            } else {
                let i: Int
                if let f = free.popLast() {
                    i = f
                    entries[i] = Entry(key: key, block: block)
                } else {
                    i = entries.count
                    entries.append(Entry(key: key, block: block))
                }
                index.insert(key, position: i, in: entries)
                usage += block.charge
            }
            evictOverCapacity()
        }

        /// Sweeps the hand until the shard fits: an entry used since the last pass loses its
        /// mark and stays; one that was not is evicted. Two passes at most, since the first
        /// clears every mark.
        private mutating func evictOverCapacity() {
            var steps = 0
            while usage > capacity, steps < 2 * entries.count + 1 {
                steps += 1
                if hand >= entries.count { hand = 0 }
                let i = hand
                hand += 1
                guard entries[i].block != nil else { continue }
                if entries[i].referenced {
                    entries[i].referenced = false
                    continue
                }
                drop(i)
            }
        }

        private mutating func drop(_ i: Int) {
            usage -= entries[i].block!.charge
            index.remove(entries[i].key, in: entries)
            entries[i].block = nil
            free.append(i)
        }

        mutating func removeAll(segmentId: UInt64) {
            for i in entries.indices where entries[i].block != nil && entries[i].key.segmentId == segmentId { drop(i) }
        }

        /// Entries holding a block, for tests: (key, index finds it at its position).
        func check() -> (live: Int, indexed: Int, allFound: Bool) {
            var live = 0, allFound = true
            for i in entries.indices where entries[i].block != nil {
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

    /// Empties the cache, for a closing engine, and frees the blocks on a background thread.
    ///
    /// A full cache holds tens of thousands of blocks, each an object and a buffer that have
    /// long left the CPU caches: freeing them one by one took about 7 ms of a 21 ms close and
    /// reopen of the object-graph benchmark's store, time the closing caller does not need to
    /// wait for. The shards are emptied before this returns; only the freeing is deferred.
    func removeAllReleasingInBackground() {
        let released = ReleasedShards()
        for s in shards {
            s.mutex.withLock { shard in
                var empty = Shard(capacity: shard.capacity)
                swap(&empty, &shard)
                released.shards.append(empty)
            }
        }
        guard released.shards.contains(where: { $0.usage > 0 }) else { return }
        DispatchQueue.global(qos: .utility).async { released.shards = [] }
    }

    /// Emptied shards on their way to the background thread that frees their blocks: owned by
    /// one thread at a time (the closing one, then the releasing one).
    private final class ReleasedShards: @unchecked Sendable {
        var shards: [Shard] = []
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
