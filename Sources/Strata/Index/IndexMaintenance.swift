import StrataStorage

extension Transaction {
    /// Adds to `batch` the index entries this transaction's object writes remove and add: for
    /// each written object of an indexed entity, its values before the transaction (read from
    /// the engine: the write lock keeps the latest state ours) against its final values. Done at
    /// commit, so every path that writes objects (puts, removals, relation clean-up) is covered
    /// and intermediate states never reach the index.
    func addIndexChanges(to batch: inout WriteBatch) throws(StrataError) {
        guard let space = store.indexSpace else { return }
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
                        batch.put(ix.key(i, value: v, id: p.key.id), [], in: space)
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
            let prefix = p.header + values[i]
            var candidates = try committedIds(withPrefix: prefix, property: p.header, probe: UInt64(ix.entityId) << 32 | UInt64(i))
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

    /// The ids of the committed index entries under `prefix`, among the entries of the property
    /// whose key header is `header` (`probe` names it: entity id and position). The same as
    /// ``Store/indexedIds(from:to:valuePrefix:snapshot:)`` over the prefix on the latest state,
    /// through an iterator kept for the whole transaction instead of one opened per check: the
    /// store's write lock, which this transaction holds, keeps the committed state what it was
    /// when the iterator opened, until the commit.
    private func committedIds(withPrefix prefix: [UInt8], property header: [UInt8], probe: UInt64) throws(StrataError) -> [Id] {
        guard let space = store.indexSpace else { return [] }
        var ids: [Id] = []
        do {
            let it: EngineIterator
            if let open = uniqueProbes[probe] {
                it = open
            } else {
                it = try store.engine.makeIterator(in: space, lowerBound: header, upperBound: IndexKey.successor(header))
                uniqueProbes[probe] = it
            }
            try it.seek(prefix)
            while it.isValid, it.key.starts(with: prefix) {
                ids.append(IndexKey.id(fromKey: it.key))
                try it.next()
            }
        } catch {
            throw StrataError(error)
        }
        store.counters.indexEntriesRead.add(UInt64(ids.count), ordering: .relaxed)
        return ids
    }

    /// Remembers the unique values object `id` now holds (`values`, from
    /// ``checkIndexedValues(of:id:indexes:)``), for later checks in this transaction.
    func recordUniqueValues(_ values: [[UInt8]], id: Id, indexes ix: EntityIndexes) {
        for (i, p) in ix.properties.enumerated() where p.isUnique {
            pendingUnique[IndexValueDigest.of(header: p.header, value: values[i]), default: []].append(id)
        }
    }
}
