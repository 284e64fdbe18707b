/// A set of object keys with a cheap hash: the objects a write transaction found in the engine
/// (``Transaction/knownCommittedObjects``). A bulk put that links thousands of objects to the
/// same few targets asks it thousands of times; Swift's `Set` hashes each key with SipHash,
/// here one multiply does. Open addressing, linear probing, never shrinks; bounded by its caller.
struct KnownObjects {
    private var entityIds: [UInt32] = []
    /// Id + 1 per slot; 0 marks an empty slot. `Id.max` (whose + 1 is 0) is never stored.
    private var ids: [UInt64] = []
    private(set) var count = 0
    private var mask = -1

    @inline(__always)
    private func slot(_ key: ObjectKey) -> Int {
        let h = (key.id ^ UInt64(key.entityId) << 40) &* 0x9E37_79B9_7F4A_7C15
        return Int(truncatingIfNeeded: h >> 32) & mask
    }

    func contains(_ key: ObjectKey) -> Bool {
        guard count > 0 else { return false }
        var i = slot(key)
        while ids[i] != 0 {
            if ids[i] == key.id &+ 1 && entityIds[i] == key.entityId { return true }
            i = (i + 1) & mask
        }
        return false
    }

    mutating func insert(_ key: ObjectKey) {
        // Id.max would be stored as 0 (empty): not worth a slot of its own, it is read again.
        guard key.id != .max, !contains(key) else { return }
        if (count + 1) * 4 > (mask + 1) * 3 { grow() }
        var i = slot(key)
        while ids[i] != 0 { i = (i + 1) & mask }
        ids[i] = key.id &+ 1
        entityIds[i] = key.entityId
        count += 1
    }

    private mutating func grow() {
        let old = zip(entityIds, ids).filter { $0.1 != 0 }
        let size = max(64, (mask + 1) * 2)
        entityIds = Array(repeating: 0, count: size)
        ids = Array(repeating: 0, count: size)
        mask = size - 1
        for (entityId, idPlusOne) in old {
            var i = slot(ObjectKey(entityId: entityId, id: idPlusOne &- 1))
            while ids[i] != 0 { i = (i + 1) & mask }
            ids[i] = idPlusOne
            entityIds[i] = entityId
        }
    }
}
