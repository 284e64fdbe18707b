import StrataStorage

extension Transaction {
    /// Adds to `batch` the index entries this transaction's object writes remove and add: for
    /// each written object of an indexed entity, its values before the transaction (read from
    /// the engine: the write lock keeps the latest state ours) against its final values. Done at
    /// commit, so every path that writes objects (puts, removals, relation clean-up) is covered
    /// and intermediate states never reach the index. Every deletion goes before every addition:
    /// an entry keyed by value that one object leaves and another takes in this transaction
    /// must end up added, whatever the order of the objects.
    func addIndexChanges(to batch: inout WriteBatch) throws(StrataError) {
        guard let space = store.indexSpace else { return }
        var additions: [(key: [UInt8], value: [UInt8])] = []
        var byEntity: [UInt32: EntityIndexes?] = [:]
        for p in pending {
            let entity: EntityIndexes?
            if let known = byEntity[p.key.entityId] {
                entity = known
            } else {
                entity = store.indexes(entityId: p.key.entityId)
                byEntity[p.key.entityId] = .some(entity)
            }
            guard let ix = entity else { continue }
            do {
                let old: [[UInt8]]? = p.isFresh ? nil : try p.key.withBytes { k in
                    try store.engine.withValue(forKey: k, in: store.objects) { try ix.values(of: $0) }
                }
                let new: [[UInt8]]? = try p.value.map { r in
                    try p.indexValues ?? arena.withUnsafeBytes { try ix.values(of: UnsafeRawBufferPointer(rebasing: $0[r])) }
                }
                for i in ix.properties.indices where old?[i] != new?[i] {
                    if let v = old?[i] { batch.delete(ix.key(i, value: v, id: p.key.id), in: space) }
                    if let v = new?[i] {
                        try ix.checkSize(i, value: v)
                        additions.append((ix.key(i, value: v, id: p.key.id), ix.entryValue(i, id: p.key.id)))
                    }
                }
            } catch let e as StrataError {
                throw e
            } catch let failure as CodecFailure {
                throw .corruptObject(entity: ix.entityName, id: p.key.id, reason: failure.reason)
            } catch {
                throw StrataError(error)
            }
        }
        for (key, value) in additions { batch.put(key, value, in: space) }
    }

    /// Throws when `bytes` (the encoding of object `id` about to be put; 0 for a new object)
    /// holds a value of a `@Unique` property that another object holds, as this transaction
    /// sees the store, or a value too large to index. Runs before the put writes anything.
    /// Returns the indexed values (``EntityIndexes/values(of:)``).
    func checkIndexedValues(of bytes: UnsafeRawBufferPointer, id: Id, indexes ix: EntityIndexes) throws(StrataError) -> [[UInt8]] {
        let values: [[UInt8]]
        do { values = try ix.values(of: bytes) } catch { throw .corruptObject(entity: ix.entityName, id: id, reason: "\(error)") }
        for (i, p) in ix.properties.enumerated() {
            try ix.checkSize(i, value: values[i])
            guard p.isUnique else { continue }
            var candidates = try committedIds(holding: values[i], position: i, indexes: ix)
            candidates += pendingUnique[IndexValueDigest.of(header: p.header, value: values[i])] ?? []
            for other in candidates where other != id {
                // The entry may be stale for this transaction: the object may have changed.
                guard let current = try store.objectBytes(ObjectKey(entityId: ix.entityId, id: other), in: self) else { continue }
                let holds: Bool
                do { holds = try current.withUnsafeBytes { try ix.values(of: $0)[i] } == values[i] } catch {
                    throw .corruptObject(entity: ix.entityName, id: other, reason: "\(error)")
                }
                if holds {
                    throw .uniqueViolation(entity: ix.entityName, property: p.name, value: IndexValueText.describe(values[i], type: p.type),
                                           existing: other)
                }
            }
        }
        return values
    }

    /// The ids of the committed objects whose entries in the unique index at `position` hold
    /// `value`, on the latest state (the write lock this transaction holds keeps it what it was).
    /// For an index keyed by value, one point read. A writable store rebuilds a unique index of
    /// the older layout before a box of its type can put anything; the layout is read as it is
    /// all the same.
    private func committedIds(holding value: [UInt8], position: Int, indexes ix: EntityIndexes) throws(StrataError) -> [Id] {
        try store.indexedIds(ofValue: ix.properties[position].header + value,
                             keyedByValue: ix.properties[position].keyedByValue, snapshot: nil)
    }

    /// Remembers the unique values object `id` now holds (`values`, from
    /// ``checkIndexedValues(of:id:indexes:)``), for later checks in this transaction.
    func recordUniqueValues(_ values: [[UInt8]], id: Id, indexes ix: EntityIndexes) {
        for (i, p) in ix.properties.enumerated() where p.isUnique {
            pendingUnique[IndexValueDigest.of(header: p.header, value: values[i]), default: []].append(id)
        }
    }
}
