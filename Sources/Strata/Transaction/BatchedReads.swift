import StrataStorage

/// Batched reads of objects by id (`get([Id])`, a backlink's or a query's objects, a prefetch),
/// as a transaction sees them. Outside a write transaction, the engine's batched point read
/// (which overlaps the lookups of many keys), or, for ids that lie close together
/// (`get(Array(1...1000))`, a prefetch of most of an entity's objects), one ordered scan of
/// their key range: a point lookup pays the level search, the bloom filter, the index block
/// search, a block cache probe and a search in the block for each key; a scan pays them once
/// per segment and per block and then steps from entry to entry. When at least half of the
/// keys in the range are asked for, the scan reads less even counting the keys it steps over.
extension Transaction {
    /// How many objects a batched read asks the engine for at once: enough for the engine to
    /// overlap their lookups, few enough that a caller that stops early wastes little.
    private static var batchReadChunk: Int { 64 }

    /// The objects of `T` with `ids` that are stored, decoded, in the order of `ids`.
    func objects<T: Entity>(_ type: T.Type, _ ids: [Id], binding b: EntityBinding) throws -> [T] {
        let store = self.store
        // Filled in place, not appended to: in unspecialised generic code each append asks
        // the runtime for `Array<T>`'s metadata, while a typed pointer needs only `T`'s.
        return try [T](unsafeUninitializedCapacity: ids.count) { buffer, count in
            let base = buffer.baseAddress
            try forEachObject(ids, binding: b) { id, v in
                (base! + count).initialize(to: try b.decode(T.self, id: id, from: v, store: store))
                count += 1
                return true
            }
        }
    }

    /// The object of `T` with `id` as the transaction sees it, decoded; nil when not stored.
    func object<T: Entity>(_ type: T.Type, _ id: Id, binding b: EntityBinding) throws -> T? {
        var found: T?
        let store = self.store
        try withObject(ObjectKey(entityId: b.entityId, id: id)) { v in found = try b.decode(T.self, id: id, from: v, store: store) }
        return found
    }

    /// Calls `body` with the stored bytes of each of `ids` that is stored, in the order of
    /// `ids`, until `body` returns false. A write transaction's reads are looked up one by one,
    /// since its own changes come first.
    func forEachObject(_ ids: [Id], binding b: EntityBinding, _ body: (Id, UnsafeRawBufferPointer) throws -> Bool) throws {
        // One object gains nothing from batching, which has buffers to set up.
        if ids.count == 1 || isWrite {
            for id in ids {
                var more = true
                _ = try withObject(ObjectKey(entityId: b.entityId, id: id)) { v in more = try body(id, v) }
                if !more { return }
            }
            return
        }
        if Self.isDense(ids) {
            try forEachObjectInRange(ids, binding: b, body)
            return
        }
        var keys = KeyList(reservingCapacity: min(ids.count, Self.batchReadChunk), keyBytes: ObjectFormat.objectKeyBytes)
        var start = 0
        var more = true
        while start < ids.count && more {
            let end = min(start + Self.batchReadChunk, ids.count)
            keys.removeAll()
            for id in ids[start..<end] { ObjectKey(entityId: b.entityId, id: id).withBytes { keys.append($0) } }
            try engine.visitValues(forKeys: keys, in: objects, snapshot: snapshot) { i, v in
                if more, let v { more = try body(ids[start + i], v) }
            }
            start = end
        }
    }

    /// The fewest ids read by a scan: below this, setting up an iterator over every level costs
    /// more than the point lookups it replaces.
    static var denseReadMinimum: Int { 16 }

    /// Whether `ids` are strictly increasing and fill at least half of the range they span.
    static func isDense(_ ids: [Id]) -> Bool {
        guard ids.count >= denseReadMinimum, let first = ids.first, let last = ids.last, first < last else { return false }
        let span = last - first
        guard span < UInt64(ids.count) * 2 else { return false }
        var previous = first
        for id in ids.dropFirst() {
            guard id > previous else { return false }
            previous = id
        }
        return true
    }

    /// ``forEachObject(_:binding:_:)`` for dense, strictly increasing `ids`, read outside a
    /// write transaction (no overlay to merge): one engine scan from the first id to the last,
    /// in the transaction's snapshot when it has one.
    private func forEachObjectInRange(_ ids: [Id], binding b: EntityBinding, _ body: (Id, UnsafeRawBufferPointer) throws -> Bool) throws {
        let lower = ObjectKey(entityId: b.entityId, id: ids[0]).withBytes { Array($0) }
        let last = ids[ids.count - 1]
        // The key after the last id; past the entity's largest id, the next entity's prefix.
        let upper = last == Id.max
            ? Engine.prefixSuccessor(ObjectKey.prefix(entityId: b.entityId))
            : ObjectKey(entityId: b.entityId, id: last + 1).withBytes { Array($0) }
        let it = try engine.makeIterator(in: objects, lowerBound: lower, upperBound: upper, snapshot: snapshot)
        try it.seekToFirst()
        var next = 0
        while it.isValid {
            let key = it.key
            // Every key between two object keys of one entity is one (a damaged or crafted
            // file aside, which is refused rather than read past the key's end).
            guard key.count == ObjectFormat.objectKeyBytes else {
                throw StrataError.corruptObject(entity: b.name, id: 0, reason: "an object key of \(key.count) bytes")
            }
            let id = ObjectKey.id(fromKey: key)
            // Ids asked for and not stored have no key: step over them.
            while next < ids.count && ids[next] < id { next += 1 }
            if next == ids.count { return }
            if ids[next] == id {
                guard try body(id, it.value) else { return }
                next += 1
                if next == ids.count { return }
            }
            try it.next()
        }
    }
}
