/// Maps the object keys a write transaction touched to their slot in its pending list.
///
/// An open-addressing table with linear probing: a transaction that puts a million
/// objects looks keys up a million times, and `Dictionary`'s seeded SipHash was the largest
/// single cost of `put` (8% of a bulk put, measured with perf). One 16-byte bucket holds the
/// whole entry, so a probe touches one cache line.
struct PendingIndex {
    private struct Bucket {
        var id: Id
        var entityId: UInt32
        /// Slot in the pending list + 1; 0 marks an empty bucket.
        var slot: UInt32
    }

    private var buckets: [Bucket] = []
    private var used = 0
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
        let mask = buckets.count - 1
        var b = bucket(key)
        return buckets.withUnsafeBufferPointer { table in
            while true {
                let entry = table[b]
                if entry.slot == 0 { return nil }
                if entry.id == key.id && entry.entityId == key.entityId { return Int(entry.slot) - 1 }
                b = (b + 1) & mask
            }
        }
    }

    /// Records that `key` lives in pending slot `slot` (a key is inserted once).
    mutating func insert(_ key: ObjectKey, slot: Int) {
        if (used + 1) * 4 > buckets.count * 3 { grow() }
        let mask = buckets.count - 1
        var b = bucket(key)
        buckets.withUnsafeMutableBufferPointer { table in
            while table[b].slot != 0 { b = (b + 1) & mask }
            table[b] = Bucket(id: key.id, entityId: key.entityId, slot: UInt32(slot + 1))
        }
        used += 1
    }

    mutating func removeAll() {
        self = PendingIndex()
    }

    private mutating func grow() {
        let old = buckets
        let capacity = max(64, buckets.count * 2)
        buckets = [Bucket](repeating: Bucket(id: 0, entityId: 0, slot: 0), count: capacity)
        shift = UInt64(64 - capacity.trailingZeroBitCount)
        used = 0
        for entry in old where entry.slot != 0 {
            insert(ObjectKey(entityId: entry.entityId, id: entry.id), slot: Int(entry.slot) - 1)
        }
    }
}
