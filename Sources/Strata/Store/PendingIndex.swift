/// Maps the object keys a write transaction touched to their slot in its pending list.
///
/// An open-addressing table with linear probing: a transaction that puts a million
/// objects looks keys up a million times, and `Dictionary`'s seeded SipHash was the largest
/// single cost of `put` (8% of a bulk put, measured with perf).
struct PendingIndex {
    private var entityIds: [UInt32] = []
    private var ids: [Id] = []
    /// Slot in the pending list + 1; 0 marks an empty bucket.
    private var slots: [Int] = []
    private var used = 0
    private var mask = 0
    /// 64 − log2(capacity): the hash keeps the product's top bits.
    private var shift: UInt64 = 64

    /// Fibonacci hashing (multiply, keep the top bits). An earlier hash placed consecutive ids
    /// in consecutive buckets for cache locality, but then one entity's ids formed a single
    /// long run, and every lookup of a key of another entity whose bucket fell inside the run
    /// (a related object's existence check) probed the whole run: a put of n orders with a
    /// to-one each cost O(n²) (20,000 orders took 9.6 s in debug, 5,000 took 0.64 s).
    @inline(__always)
    private func bucket(_ key: ObjectKey) -> Int {
        let mixed = (key.id ^ (UInt64(key.entityId) &* 0xD6E8_FEB8_6659_FD93)) &* 0x9E37_79B9_7F4A_7C15
        return Int(truncatingIfNeeded: mixed >> shift)
    }

    /// The pending slot of `key`, if the transaction touched it.
    func slot(of key: ObjectKey) -> Int? {
        guard used > 0 else { return nil }
        var b = bucket(key)
        while true {
            let s = slots[b]
            if s == 0 { return nil }
            if ids[b] == key.id && entityIds[b] == key.entityId { return s - 1 }
            b = (b + 1) & mask
        }
    }

    /// Records that `key` lives in pending slot `slot` (a key is inserted once).
    mutating func insert(_ key: ObjectKey, slot: Int) {
        if (used + 1) * 4 > slots.count * 3 { grow() }
        var b = bucket(key)
        while slots[b] != 0 { b = (b + 1) & mask }
        slots[b] = slot + 1
        ids[b] = key.id
        entityIds[b] = key.entityId
        used += 1
    }

    mutating func removeAll() {
        self = PendingIndex()
    }

    private mutating func grow() {
        let old = (entityIds, ids, slots)
        let capacity = max(64, slots.count * 2)
        entityIds = [UInt32](repeating: 0, count: capacity)
        ids = [Id](repeating: 0, count: capacity)
        slots = [Int](repeating: 0, count: capacity)
        mask = capacity - 1
        shift = UInt64(64 - capacity.trailingZeroBitCount)
        used = 0
        for i in old.2.indices where old.2[i] != 0 {
            insert(ObjectKey(entityId: old.0[i], id: old.1[i]), slot: old.2[i] - 1)
        }
    }
}
