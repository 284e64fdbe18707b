import CStrataSupport

/// A sized cache of decoded blocks, shared by all segments of an engine, evicting by CLOCK
/// (second chance). Sharded by key so that readers on different threads rarely contend on one
/// lock.
///
/// CLOCK rather than an LRU list: a hit on an LRU list unlinks its entry and pushes it to the
/// front, writing the two neighbours' links and the list head, which in a cache of tens of
/// thousands of blocks are memory misses on every point read. A hit here sets one flag in the
/// slot it has just read; eviction pays instead, sweeping a hand over the slots and giving each
/// block that was used since the last sweep a second chance.
package final class BlockCache: Sendable {
    struct Key: Hashable {
        var segmentId: UInt64
        var offset: UInt64
    }

    /// One slot of a shard's table: a key and its block, or empty (`block` nil).
    private struct Slot {
        var key: Key
        var block: Block?
        /// What a lookup in `block` reads first (``Block/lookupStart``), for
        /// ``BlockCache/prefetch(_:)``: read from the block itself, it would cost the memory miss
        /// the prefetch is meant to hide. (The block's object is `block` itself.)
        var restarts: UnsafeRawPointer?
        /// Used since the hand last passed: the hand clears it instead of evicting the block.
        var referenced: Bool

        static var empty: Slot { Slot(key: Key(segmentId: 0, offset: 0), block: nil, restarts: nil, referenced: false) }

        /// A new block starts unmarked: a block read once (a scan passing through) is the first
        /// to go, while one read again before the hand comes by has earned its mark.
        init(key: Key, block: Block?, restarts: UnsafeRawPointer?, referenced: Bool) {
            self.key = key
            self.block = block
            self.restarts = restarts
            self.referenced = referenced
        }

        init(key: Key, block: Block) {
            self.init(key: key, block: block, restarts: block.lookupStart, referenced: false)
        }
    }

    /// One shard: an open-addressing table (linear probing, a multiplicative hash of the key's
    /// two words) whose slots hold the blocks themselves, so that a lookup reads one slot where
    /// a table of positions into a separate entry array read two, one after the other (the
    /// second's address comes from the first: no prefetch or speculation overlaps them). The
    /// CLOCK hand sweeps the table's slots. At most half the slots are in use.
    ///
    /// A `Dictionary` hashed each key with SipHash: with its lookups and removals, a quarter of
    /// a random point read.
    private struct Shard {
        var slots = [Slot](repeating: .empty, count: 64)
        var mask = 63
        var count = 0
        /// The next slot the hand looks at.
        var hand = 0
        var usage = 0
        let capacity: Int

        init(capacity: Int) { self.capacity = capacity }

        @inline(__always) private func ideal(_ key: Key) -> Int {
            let h = (key.segmentId &* 0x9E37_79B9_7F4A_7C15) ^ (key.offset &* 0xC2B2_AE3D_27D4_EB4F)
            return Int(truncatingIfNeeded: (h ^ (h >> 29)) & UInt64(mask))
        }

        private func find(_ key: Key) -> Int? {
            var i = ideal(key)
            while slots[i].block != nil {
                if slots[i].key == key { return i }
                i = (i + 1) & mask
            }
            return nil
        }

        mutating func get(_ key: Key) -> Block? {
            guard let i = find(key) else { return nil }
            // Written only when clear: a hot block's slot is then only read.
            if !slots[i].referenced { slots[i].referenced = true }
            return slots[i].block
        }

        func prefetch(_ key: Key) {
            guard let i = find(key) else { return }
            slots.withUnsafeBufferPointer { buffer in
                // The block's address, read as bits: taking the reference would retain it, a
                // write to the object whose memory miss this prefetch is meant to hide.
                let object = UnsafeRawPointer(buffer.baseAddress! + i).load(fromByteOffset: MemoryLayout<Slot>.offset(of: \Slot.block)!, as: UnsafeRawPointer?.self)
                strata_prefetch(object)
                strata_prefetch(buffer[i].restarts)
            }
        }

        /// - Parameter reserved: bytes of the shard's capacity that opened id blocks hold now.
        mutating func insert(_ key: Key, _ block: Block, reserved: Int = 0) {
            if let i = find(key) {
                usage -= slots[i].block!.charge
                slots[i] = Slot(key: key, block: block)
                slots[i].referenced = true
                usage += block.charge
            } else {
                if (count + 1) * 2 > slots.count { grow() }
                place(Slot(key: key, block: block))
                count += 1
                usage += block.charge
            }
            evictOverCapacity(limit: capacity - reserved)
        }

        /// Sweeps the hand until the shard fits: a block used since the last pass loses its
        /// mark and stays; one that was not is evicted. Two passes at most, since the first
        /// clears every mark.
        private mutating func evictOverCapacity(limit: Int) {
            var steps = 0
            while usage > limit, steps < 2 * slots.count + 1 {
                steps += 1
                let i = hand
                hand = (hand + 1) & mask
                guard slots[i].block != nil else { continue }
                if slots[i].referenced {
                    slots[i].referenced = false
                    continue
                }
                remove(at: i)
                // The removal may have shifted a later slot into this one: look at it next.
                hand = i
            }
        }

        /// Empties slot `i` by backward-shift deletion: later members of its probe run move
        /// into the hole, so that lookups never need tombstones.
        private mutating func remove(at position: Int) {
            usage -= slots[position].block!.charge
            var i = position
            var j = position
            while true {
                j = (j + 1) & mask
                if slots[j].block == nil { break }
                let k = ideal(slots[j].key)
                let staysPut = i <= j ? (i < k && k <= j) : (i < k || k <= j)
                if !staysPut {
                    slots[i] = slots[j]
                    i = j
                }
            }
            slots[i] = .empty
            count -= 1
        }

        private mutating func grow() {
            let old = slots
            slots = [Slot](repeating: .empty, count: old.count * 2)
            mask = slots.count - 1
            hand = 0
            for s in old where s.block != nil { place(s) }
        }

        /// Puts `slot` in the first empty slot of its probe run. REQUIRES: its key is not in the
        /// table, and the table has an empty slot.
        private mutating func place(_ slot: Slot) {
            var i = ideal(slot.key)
            while slots[i].block != nil { i = (i + 1) & mask }
            slots[i] = slot
        }

        mutating func removeAll(segmentId: UInt64) {
            // Not advancing past a removal: the shift may have moved another slot into it.
            // Slots shifted from before `i` (a probe run wrapping around the end) were looked
            // at already, and kept.
            var i = 0
            while i < slots.count {
                if slots[i].block != nil && slots[i].key.segmentId == segmentId {
                    remove(at: i)
                } else {
                    i += 1
                }
            }
        }

        /// Slots holding a block, for tests: (count, the count kept, each found at its slot).
        func check() -> (live: Int, indexed: Int, allFound: Bool) {
            var live = 0, allFound = true
            for i in slots.indices where slots[i].block != nil {
                live += 1
                if find(slots[i].key) != i { allFound = false }
            }
            return (live, count, allFound)
        }
    }

    private final class ShardBox: Sendable {
        let mutex: LockedValue<Shard>
        init(capacity: Int) { mutex = LockedValue(Shard(capacity: capacity)) }
    }

    private static let shardCount = 16
    private let shards: [ShardBox]
    let capacityBytes: Int
    /// The bytes of id blocks that encrypted segments' point reads keep opened, outside the
    /// slots and never evicted (``IdBlockReads``): at most half the capacity, which the slots
    /// give up as they grow, so that both together stay within it.
    let opened: OpenedBlockBudget

    package init(capacityBytes: Int) {
        self.capacityBytes = capacityBytes
        opened = OpenedBlockBudget(limit: capacityBytes / 2)
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
        let reserved = opened.usedBytes / Self.shardCount
        shards[shard(key)].mutex.withLock { $0.insert(key, block, reserved: reserved) }
    }

    /// Empties the cache, for a closing engine, and frees the blocks on a background thread.
    ///
    /// A full cache holds tens of thousands of blocks, each an object and a buffer that have
    /// long left the CPU caches: freeing them one by one took about 7 ms of a 21 ms close and
    /// reopen of the object-graph benchmark's store, time the closing caller does not need to
    /// wait for. The shards are emptied before this returns; only the freeing is deferred, and
    /// it yields to engine opens.
    func removeAllReleasingInBackground() {
        var released: [Shard] = []
        for s in shards {
            s.mutex.withLock { shard in
                var empty = Shard(capacity: shard.capacity)
                swap(&empty, &shard)
                if empty.usage > 0 { released.append(empty) }
            }
        }
        // A shard at a time (``BackgroundRelease``): the closing caller is often about to open
        // the store again.
        BackgroundRelease.drop(released, chunk: 1)
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
