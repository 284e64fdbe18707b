import StrataStorage

/// Every read of the store, as the transaction it runs in sees it: a write transaction's
/// ``WriteOverlay`` over the engine's latest state, a read transaction's snapshot, or (the
/// store's ``Store/latest`` transaction) the latest committed state. The only place that knows
/// the overlay comes first: point reads look it up and fall through to the engine; ordered
/// reads merge it with an engine iterator.
extension Transaction {
    /// Larger stored object counts are damage (``storedCount(entityId:)``).
    static let maxObjectCount: UInt64 = 1 << 62

    /// The committed object count of an entity, as the transaction sees it.
    func storedCount(entityId: UInt32) throws(StrataError) -> UInt64 {
        do {
            guard let raw = try engine.get(MetaKey.count.key(entity: entityId), in: meta, snapshot: snapshot) else { return 0 }
            guard raw.count == 8 else { throw StrataError.corruptCatalog(reason: "object count of entity \(entityId)") }
            let n = raw.withUnsafeBytes { UInt64(littleEndian: $0.loadUnaligned(as: UInt64.self)) }
            // Callers add a transaction's delta as Int64: a crafted count near 2^64 must be an
            // error here, not a trap there. No store holds 2^62 objects of one entity.
            guard n < Self.maxObjectCount else {
                throw StrataError.corruptCatalog(reason: "object count of entity \(entityId) is \(n), past the limit")
            }
            return n
        } catch {
            throw StrataError(error)
        }
    }

    // MARK: objects

    /// Calls `body` with the stored bytes of the object at `key` as the transaction sees them; false when
    /// there is none. `body` must not write.
    @discardableResult
    func withObject(_ key: ObjectKey, _ body: (UnsafeRawBufferPointer) throws -> Void) throws -> Bool {
        if let overlay = overlay {
            switch key.withBytes({ overlay.objects.lookup($0) }) {
            case .removed: return false
            case let .value(v):
                try body(v)
                return true
            case .absent: break
            }
        }
        return try key.withBytes { k in try engine.visitValue(forKey: k, in: objects, snapshot: snapshot, body) }
    }

    /// A copy of the object's stored bytes as the transaction sees them.
    func objectBytes(_ key: ObjectKey) throws(StrataError) -> [UInt8]? {
        var out: [UInt8]?
        do { try withObject(key) { out = Array($0) } } catch { throw StrataError(error) }
        return out
    }

    /// Whether the object at `key` exists as the transaction sees it.
    func objectExists(_ key: ObjectKey) throws(StrataError) -> Bool {
        if let overlay = overlay {
            switch key.withBytes({ overlay.objects.lookup($0) }) {
            case .removed: return false
            case .value: return true
            case .absent: break
            }
        }
        if isWrite {
            if knownCommittedObjects.contains(key) { return true }
            if isNewInTransaction(entityId: key.entityId, id: key.id) { return false }
        }
        let found: Bool
        do {
            found = try key.withBytes { k in try engine.withValue(forKey: k, in: objects, snapshot: snapshot) { _ in true } } ?? false
        } catch {
            throw StrataError(error)
        }
        if found { noteCommittedObject(key) }
        return found
    }

    /// Visits the objects of one entity by increasing id as the transaction sees them, until `body` returns
    /// false. `body` must not write.
    func forEachObject(entityId: UInt32, _ body: (Id, UnsafeRawBufferPointer) throws -> Bool) throws {
        let prefix = ObjectKey.prefix(entityId: entityId)
        let it = try engine.makeIterator(in: objects, prefix: prefix, snapshot: snapshot)
        try Self.merge(overlay?.objects, over: it, lower: prefix, upper: Engine.prefixSuccessor(prefix)) { k, v in
            try body(ObjectKey.id(fromKey: k), v)
        }
    }

    // MARK: edges

    /// The value of one edge, or nil. `engineHoldsNone`: the caller knows the engine has no
    /// such edge (its source got its id in this transaction), so only the overlay is read.
    func edgeValue(_ key: EdgeKey, engineHoldsNone: Bool = false) throws(StrataError) -> [UInt8]? {
        let bytes = key.bytes
        if let overlay = overlay {
            switch bytes.withUnsafeBytes({ overlay.edges.lookup($0) }) {
            case .removed: return nil
            case let .value(v): return Array(v)
            case .absent: if engineHoldsNone { return nil }
            }
        }
        guard let edges else { return nil }
        counters.edgesRead.add(1, ordering: .relaxed)
        do { return try engine.get(bytes, in: edges, snapshot: snapshot) } catch { throw StrataError(error) }
    }

    /// The `b` ids of every edge sharing `prefix`'s kind, relation and `a`, in increasing order:
    /// one prefix scan, O(log n + k).
    func edgeSources(sharingPrefixWith prefix: EdgeKey) throws(StrataError) -> [Id] {
        guard let edges else { return [] }
        var ids: [Id] = []
        let lower = prefix.prefixBytes
        let suffixBytes = EdgeKey.byteCount - EdgeKey.prefixByteCount
        func collect(_ k: UnsafeRawBufferPointer) {
            if let key = EdgeKey(bytes: k) { ids.append(key.b) }
        }
        do {
            if overlay?.edges.isEmpty ?? true {
                // With no write of its own to merge, the keys come from the engine's prefix
                // read, which resolves versions once instead of merging at every step.
                // Room for 120 ids: under 1 KiB with the array's header. A request of 1 KiB or
                // more makes glibc's malloc consolidate its fast bins, full of the objects the
                // previous read freed: 120 instead of 128 saved 1.4% of the backlink phase's
                // instructions (callgrind, scale 0.1: 19.74 G -> 19.47 G).
                ids.reserveCapacity(120)
                try engine.forEachKey(in: edges, prefix: lower, suffixBytes: suffixBytes, snapshot: snapshot, collect)
            } else {
                let it = try engine.makeIterator(in: edges, prefix: lower, suffixBytes: suffixBytes, snapshot: snapshot)
                try Self.merge(overlay?.edges, over: it, lower: lower, upper: Engine.prefixSuccessor(lower)) { k, _ in
                    collect(k)
                    return true
                }
            }
        } catch {
            throw StrataError(error)
        }
        counters.edgesRead.add(UInt64(ids.count), ordering: .relaxed)
        return ids
    }

    // MARK: index entries

    /// The object ids of the index entries of one value as the transaction sees them: `entry` is the header
    /// and the encoded value. In an index `keyedByValue`, one point read of that key; otherwise a
    /// scan of the keys it begins, skipping the segments whose filter rules the value out.
    func indexedIds(ofValue entry: [UInt8], keyedByValue: Bool) throws(StrataError) -> [Id] {
        guard let indexSpace else { return [] }
        if keyedByValue {
            do { return try entry.withUnsafeBytes { try indexHolder(ofKey: $0) }.map { [$0] } ?? [] } catch { throw StrataError(error) }
        }
        var ids: [Id] = []
        do {
            let it = try engine.makeIterator(in: indexSpace, prefix: entry, suffixBytes: IndexKey.idBytes, snapshot: snapshot)
            try Self.merge(overlay?.indexes, over: it, lower: entry, upper: Engine.prefixSuccessor(entry)) { k, v in
                ids.append(try IndexKey.id(key: k, value: v, keyedByValue: false))
                return true
            }
        } catch {
            throw StrataError(error)
        }
        counters.indexEntriesRead.add(UInt64(ids.count), ordering: .relaxed)
        return ids
    }

    /// The object id of the entry at `key` of a unique index keyed by value, as the transaction sees it:
    /// one point read, no allocation.
    func indexHolder(ofKey key: UnsafeRawBufferPointer) throws(StrataError) -> Id? {
        guard let indexSpace else { return nil }
        if let overlay = overlay {
            switch overlay.indexes.lookup(key) {
            case .removed: return nil
            case let .value(v): return try IndexKey.id(key: key, value: v, keyedByValue: true)
            case .absent: break
            }
        }
        var id: Id?
        do {
            _ = try engine.visitValue(forKey: key, in: indexSpace, snapshot: snapshot) { v in
                id = try IndexKey.id(key: key, value: v, keyedByValue: true)
            }
        } catch {
            throw StrataError(error)
        }
        if id != nil { counters.indexEntriesRead.add(1, ordering: .relaxed) }
        return id
    }

    /// The value of the index entry at `key` as the transaction sees it, or nil when there is none.
    func indexEntry(ofKey key: [UInt8]) throws(StrataError) -> [UInt8]? {
        guard let indexSpace else { return nil }
        if let overlay = overlay {
            switch key.withUnsafeBytes({ overlay.indexes.lookup($0) }) {
            case .removed: return nil
            case let .value(v): return Array(v)
            case .absent: break
            }
        }
        do { return try engine.get(key, in: indexSpace, snapshot: snapshot) } catch { throw StrataError(error) }
    }

    /// The object ids of the index entries with keys in `lower..<upper` as the transaction sees them, in
    /// key order.
    func indexedIds(from lower: [UInt8], to upper: [UInt8]?, keyedByValue: Bool) throws(StrataError) -> [Id] {
        guard let indexSpace else { return [] }
        if let upper, !lower.lexicographicallyPrecedes(upper) { return [] }
        var ids: [Id] = []
        do {
            let it = try engine.makeIterator(in: indexSpace, lowerBound: lower, upperBound: upper, snapshot: snapshot)
            try Self.merge(overlay?.indexes, over: it, lower: lower, upper: upper) { k, v in
                ids.append(try IndexKey.id(key: k, value: v, keyedByValue: keyedByValue))
                return true
            }
        } catch {
            throw StrataError(error)
        }
        counters.indexEntriesRead.add(UInt64(ids.count), ordering: .relaxed)
        return ids
    }

    // MARK: the merge

    /// Visits, in key order, the entries of `lower..<upper` (nil: no upper bound) as the overlay
    /// `space` shows them over the engine iterator `it` (bounded to the same range), until
    /// `body` returns false. `body` must not write.
    static func merge(_ space: OverlaySpace?, over it: EngineIterator, lower: [UInt8]?, upper: [UInt8]?,
                      _ body: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> Bool) throws {
        let merged = TransactionIterator(space: space, over: it, lower: lower, upper: upper)
        try merged.seekToFirst()
        while merged.isValid {
            guard try body(merged.key, merged.value) else { return }
            try merged.next()
        }
    }

    /// Visits, in key order, the entries of `space` in `lower..<upper` (nil: no bound) as the transaction sees
    /// them (its own writes over the committed state), until `body` returns false.
    func forEachEntry(in space: WriteOverlay.Space, from lower: [UInt8], to upper: [UInt8]?,
                      _ body: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> Bool) throws {
        let keySpace: KeySpace?
        switch space {
        case .objects: keySpace = objects
        case .edges: keySpace = edges
        case .indexes: keySpace = indexSpace
        }
        guard let keySpace else { return }
        let it = try engine.makeIterator(in: keySpace, lowerBound: lower, upperBound: upper, snapshot: snapshot)
        try Self.merge(overlay?.space(space), over: it, lower: lower, upper: upper, body)
    }

    /// An iterator over a whole key space as the transaction sees it.
    func makeIterator(_ space: WriteOverlay.Space) throws -> TransactionIterator? {
        let keySpace: KeySpace?
        switch space {
        case .objects: keySpace = objects
        case .edges: keySpace = edges
        case .indexes: keySpace = indexSpace
        }
        guard let keySpace else { return nil }
        let it = try engine.makeIterator(in: keySpace, snapshot: snapshot)
        return TransactionIterator(space: overlay?.space(space), over: it, lower: nil, upper: nil)
    }
}
