import StrataStorage

/// Reading edges as a transaction sees them: its own pending edge writes over the engine's
/// state (its snapshot for a read transaction, the latest for a write transaction or none).
extension Store {
    /// The value of one edge, or nil.
    func edgeValue(_ key: EdgeKey, in t: Transaction?) throws(StrataError) -> [UInt8]? {
        if let t, t.isWrite, let pending = t.pendingEdges[key] { return pending }
        guard let edges else { return nil }
        counters.edgesRead.add(1, ordering: .relaxed)
        do { return try engine.get(key.bytes, in: edges, snapshot: t?.snapshot) } catch { throw StrataError(error) }
    }

    /// The `b` ids of every edge sharing `prefix`'s kind, relation and `a`, in increasing order:
    /// one prefix scan, O(log n + k).
    func edgeSources(sharingPrefixWith prefix: EdgeKey, in t: Transaction?) throws(StrataError) -> [Id] {
        var ids: [Id] = []
        if let edges {
            do {
                let it = try engine.makeIterator(in: edges, prefix: prefix.prefixBytes,
                                                 suffixBytes: EdgeKey.byteCount - EdgeKey.prefixByteCount, snapshot: t?.snapshot)
                try it.seekToFirst()
                while it.isValid {
                    if let key = EdgeKey(bytes: it.key) { ids.append(key.b) }
                    counters.edgesRead.add(1, ordering: .relaxed)
                    try it.next()
                }
            } catch {
                throw StrataError(error)
            }
        }
        guard let t, t.isWrite, !t.pendingEdges.isEmpty else { return ids }
        var set = Set(ids)
        for (key, value) in t.pendingEdges where key.sharesPrefix(with: prefix) {
            if value == nil { set.remove(key.b) } else { set.insert(key.b) }
        }
        return set.sorted()
    }

    /// The ids of the sources a backlink of `owner` shows: one prefix scan of its relation's edges.
    func backlinkSources(_ schema: BacklinkSchema, of owner: Id, in t: Transaction?) throws(StrataError) -> [Id] {
        let (kind, entityId, propertyId) = try schema.storedRelation(in: self)
        return try edgeSources(sharingPrefixWith: EdgeKey(kind: kind, entityId: entityId, propertyId: propertyId, a: owner, b: 0), in: t)
    }

    /// The ordered target ids of a standalone to-many.
    func toManyList(entityId: UInt32, propertyId: UInt32, source: Id, in t: Transaction?) throws(StrataError) -> [Id] {
        let key = EdgeKey(kind: .toManyList, entityId: entityId, propertyId: propertyId, a: source, b: 0)
        guard let raw = try edgeValue(key, in: t) else { return [] }
        return try EdgeList.decode(raw)
    }
}
