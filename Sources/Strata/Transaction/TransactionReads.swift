import StrataStorage

/// Every read of the store as a transaction sees it: a write transaction's ``WriteOverlay`` over
/// the engine's latest state, a read transaction's snapshot, or (no transaction) the latest
/// committed state. The only place that knows the overlay comes first: point reads look it up
/// and fall through to the engine; ordered reads merge it with an engine iterator.
extension Store {
    // MARK: objects

    /// Calls `body` with the stored bytes of the object at `key` as `t` sees them; false when
    /// there is none. `body` must not write.
    @discardableResult
    func withObject(_ key: ObjectKey, in t: Transaction?, _ body: (UnsafeRawBufferPointer) throws -> Void) throws -> Bool {
        if let overlay = t?.overlay {
            switch key.withBytes({ overlay.objects.lookup($0) }) {
            case .removed: return false
            case let .value(v):
                try body(v)
                return true
            case .absent: break
            }
        }
        return try key.withBytes { k in try engine.visitValue(forKey: k, in: objects, snapshot: t?.snapshot, body) }
    }

    /// A copy of the object's stored bytes as `t` sees them.
    func objectBytes(_ key: ObjectKey, in t: Transaction?) throws(StrataError) -> [UInt8]? {
        var out: [UInt8]?
        do { try withObject(key, in: t) { out = Array($0) } } catch { throw StrataError(error) }
        return out
    }

    /// Whether the object at `key` exists as `t` sees it.
    func objectExists(_ key: ObjectKey, in t: Transaction?) throws(StrataError) -> Bool {
        if let overlay = t?.overlay {
            switch key.withBytes({ overlay.objects.lookup($0) }) {
            case .removed: return false
            case .value: return true
            case .absent: break
            }
        }
        do {
            return try key.withBytes { k in try engine.withValue(forKey: k, in: objects, snapshot: t?.snapshot) { _ in true } } ?? false
        } catch {
            throw StrataError(error)
        }
    }

    /// Visits the objects of one entity by increasing id as `t` sees them, until `body` returns
    /// false. `body` must not write.
    func forEachObject(entityId: UInt32, in t: Transaction?, _ body: (Id, UnsafeRawBufferPointer) throws -> Bool) throws {
        let prefix = ObjectKey.prefix(entityId: entityId)
        let it = try engine.makeIterator(in: objects, prefix: prefix, snapshot: t?.snapshot)
        try Self.merge(t?.overlay?.objects, over: it, lower: prefix, upper: Engine.prefixSuccessor(prefix)) { k, v in
            try body(ObjectKey.id(fromKey: k), v)
        }
    }

    // MARK: edges

    /// The value of one edge, or nil.
    func edgeValue(_ key: EdgeKey, in t: Transaction?) throws(StrataError) -> [UInt8]? {
        let bytes = key.bytes
        if let overlay = t?.overlay {
            switch bytes.withUnsafeBytes({ overlay.edges.lookup($0) }) {
            case .removed: return nil
            case let .value(v): return Array(v)
            case .absent: break
            }
        }
        guard let edges else { return nil }
        counters.edgesRead.add(1, ordering: .relaxed)
        do { return try engine.get(bytes, in: edges, snapshot: t?.snapshot) } catch { throw StrataError(error) }
    }

    /// The `b` ids of every edge sharing `prefix`'s kind, relation and `a`, in increasing order:
    /// one prefix scan, O(log n + k).
    func edgeSources(sharingPrefixWith prefix: EdgeKey, in t: Transaction?) throws(StrataError) -> [Id] {
        guard let edges else { return [] }
        var ids: [Id] = []
        let lower = prefix.prefixBytes
        do {
            let it = try engine.makeIterator(in: edges, prefix: lower, suffixBytes: EdgeKey.byteCount - EdgeKey.prefixByteCount,
                                             snapshot: t?.snapshot)
            try Self.merge(t?.overlay?.edges, over: it, lower: lower, upper: Engine.prefixSuccessor(lower)) { k, _ in
                if let key = EdgeKey(bytes: k) { ids.append(key.b) }
                return true
            }
        } catch {
            throw StrataError(error)
        }
        counters.edgesRead.add(UInt64(ids.count), ordering: .relaxed)
        return ids
    }

    // MARK: index entries

    /// The object ids of the index entries of one value as `t` sees them: `entry` is the header
    /// and the encoded value. In an index `keyedByValue`, one point read of that key; otherwise a
    /// scan of the keys it begins, skipping the segments whose filter rules the value out.
    func indexedIds(ofValue entry: [UInt8], keyedByValue: Bool, in t: Transaction?) throws(StrataError) -> [Id] {
        guard let indexSpace else { return [] }
        var ids: [Id] = []
        do {
            if keyedByValue {
                try entry.withUnsafeBytes { k in
                    if let overlay = t?.overlay {
                        switch overlay.indexes.lookup(k) {
                        case .removed: return
                        case let .value(v):
                            ids.append(try IndexKey.id(key: k, value: v, keyedByValue: true))
                            return
                        case .absent: break
                        }
                    }
                    _ = try engine.visitValue(forKey: k, in: indexSpace, snapshot: t?.snapshot) { v in
                        ids.append(try IndexKey.id(key: k, value: v, keyedByValue: true))
                    }
                }
            } else {
                let it = try engine.makeIterator(in: indexSpace, prefix: entry, suffixBytes: IndexKey.idBytes, snapshot: t?.snapshot)
                try Self.merge(t?.overlay?.indexes, over: it, lower: entry, upper: Engine.prefixSuccessor(entry)) { k, v in
                    ids.append(try IndexKey.id(key: k, value: v, keyedByValue: false))
                    return true
                }
            }
        } catch {
            throw StrataError(error)
        }
        counters.indexEntriesRead.add(UInt64(ids.count), ordering: .relaxed)
        return ids
    }

    /// The object ids of the index entries with keys in `lower..<upper` as `t` sees them, in
    /// key order.
    func indexedIds(from lower: [UInt8], to upper: [UInt8]?, keyedByValue: Bool, in t: Transaction?) throws(StrataError) -> [Id] {
        guard let indexSpace else { return [] }
        if let upper, !lower.lexicographicallyPrecedes(upper) { return [] }
        var ids: [Id] = []
        do {
            let it = try engine.makeIterator(in: indexSpace, lowerBound: lower, upperBound: upper, snapshot: t?.snapshot)
            try Self.merge(t?.overlay?.indexes, over: it, lower: lower, upper: upper) { k, v in
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
    /// `space` shows them over the engine iterator `it` (bounded to the same range): an overlay
    /// value replaces the engine's, an overlay removal hides it. Stops when `body` returns
    /// false. `body` must not write.
    static func merge(_ space: OverlaySpace?, over it: EngineIterator, lower: [UInt8]?, upper: [UInt8]?,
                      _ body: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> Bool) throws {
        try it.seekToFirst()
        guard let space, !space.isEmpty else {
            while it.isValid {
                guard try body(it.key, it.value) else { return }
                try it.next()
            }
            return
        }
        var node = lower.map { l in l.withUnsafeBytes { space.seek($0) } } ?? space.first()
        func inRange(_ n: Int32) -> Bool {
            guard n >= 0 else { return false }
            guard let upper else { return true }
            let k = space.key(of: n)
            return upper.withUnsafeBytes { u in compareBytes(k, u) < 0 }
        }
        while true {
            while node >= 0 && space.state(of: node) == .absent { node = space.successor(node) }
            guard inRange(node) else {
                while it.isValid {
                    guard try body(it.key, it.value) else { return }
                    try it.next()
                }
                return
            }
            let order = it.isValid ? compareBytes(it.key, space.key(of: node)) : 1
            if order < 0 {
                guard try body(it.key, it.value) else { return }
                try it.next()
                continue
            }
            // The overlay's entry replaces the engine's one at the same key.
            if order == 0 { try it.next() }
            if space.state(of: node) == .value {
                guard try body(space.key(of: node), space.value(of: node)) else { return }
            }
            node = space.successor(node)
        }
    }
}
