import StrataStorage

/// One transaction of a store. A read transaction pins a snapshot. A write transaction holds
/// the store's write lock and collects its writes in memory; reads inside it see those writes
/// first; `commit` writes them all in one atomic engine batch.
final class Transaction {
    enum Kind { case read, write }

    /// One pending write: the newest value of a key in this transaction, or a removal.
    struct Pending {
        var key: ObjectKey
        /// Range in `arena`; nil for a removal.
        var value: Range<Int>?
        /// The key held nothing before this transaction (a new id): index maintenance has no
        /// old entries to read.
        var isFresh = false
        /// The indexed values of `value` (``EntityIndexes/values(of:)``), when the put that
        /// recorded it had them; index maintenance computes them otherwise.
        var indexValues: [[UInt8]]? = nil
    }

    enum Lookup {
        case absent
        case removed
        case value(Range<Int>)
    }

    let store: Store
    let kind: Kind
    /// The state reads see: a snapshot for read transactions; nil (latest) for write
    /// transactions, since the write lock keeps every other writer out.
    let snapshot: Snapshot?

    // A transaction belongs to one thread (the one running its closure), so the hot state
    // skips the runtime's exclusivity checks.
    @exclusivity(unchecked) private(set) var pending: [Pending] = []
    @exclusivity(unchecked) private var pendingIndex = PendingIndex()
    @exclusivity(unchecked) private(set) var arena: [UInt8] = []
    /// Encoding buffer, reused for every object of the transaction.
    @exclusivity(unchecked) var scratch: [UInt8] = []
    /// Pending edge writes: a value, or nil for a removal.
    @exclusivity(unchecked) private(set) var pendingEdges: [EdgeKey: [UInt8]?] = [:]
    /// Net objects added (positive) or removed per entity: the stored counts move by these.
    @exclusivity(unchecked) private(set) var countDeltas: [UInt32: Int64] = [:]
    /// Entities whose id counter moved; their counters are written with the commit.
    private var advancedCounters: [UInt32: EntityBinding] = [:]
    /// Values this transaction put in `@Unique` properties: ``IndexValueDigest`` of the index
    /// value prefix → object ids. Candidates only (an object may have changed again, a digest
    /// may collide): checks re-read the object.
    @exclusivity(unchecked) var pendingUnique: [Int: [Id]] = [:]
    /// Class objects whose id this transaction assigned: reset to 0 if it rolls back.
    /// Class instances only: resetting a copy of a struct would change nothing.
    private var assignedObjects: [any Entity] = []
    /// Set when code inside a joined (nested) transaction threw: the whole transaction rolls back.
    private(set) var abortReason: String?

    init(store: Store, kind: Kind, snapshot: Snapshot?) {
        self.store = store
        self.kind = kind
        self.snapshot = snapshot
    }

    var isWrite: Bool { kind == .write }

    func lookup(_ key: ObjectKey) -> Lookup {
        guard let i = pendingIndex.slot(of: key) else { return .absent }
        return pending[i].value.map(Lookup.value) ?? .removed
    }

    /// Records `value` as the new content of `key`; `isFresh` when the key was never stored.
    /// `indexValues`, when given, are the indexed values of exactly these bytes.
    func put(_ key: ObjectKey, value: UnsafeRawBufferPointer, isFresh: Bool = false, indexValues: [[UInt8]]? = nil) {
        let start = arena.count
        arena.append(contentsOf: value)
        record(Pending(key: key, value: start..<arena.count, isFresh: isFresh, indexValues: indexValues))
    }

    func remove(_ key: ObjectKey) {
        record(Pending(key: key, value: nil))
    }

    private func record(_ p: Pending) {
        if let i = pendingIndex.slot(of: p.key) {
            var p = p
            p.isFresh = pending[i].isFresh
            pending[i] = p
        } else {
            pendingIndex.insert(p.key, slot: pending.count)
            pending.append(p)
        }
    }

    /// Pending writes of one entity, sorted by id: what range reads merge with the engine's.
    func pendingObjects(entityId: UInt32) -> [(id: Id, value: Range<Int>?)] {
        pending.lazy.filter { $0.key.entityId == entityId }.map { ($0.key.id, $0.value) }.sorted { $0.id < $1.id }
    }

    func putEdge(_ key: EdgeKey, _ value: [UInt8] = []) {
        pendingEdges[key] = .some(value)
    }

    func removeEdge(_ key: EdgeKey) {
        pendingEdges[key] = .some(nil)
    }

    /// Records that an object of `entityId` came into being (+1) or was removed (-1).
    func adjustCount(entityId: UInt32, by delta: Int64) {
        countDeltas[entityId, default: 0] += delta
    }

    func counterAdvanced(_ binding: EntityBinding) {
        advancedCounters[binding.entityId] = binding
    }

    func assigned(_ object: any Entity) {
        assignedObjects.append(object)
    }

    func abort(reason: String) {
        if abortReason == nil { abortReason = reason }
    }

    /// Writes everything in one atomic batch, with the id counters that moved.
    func commit(durability: Durability) throws {
        if pending.isEmpty && advancedCounters.isEmpty && pendingEdges.isEmpty && countDeltas.isEmpty { return }
        var batch = WriteBatch()
        arena.withUnsafeBytes { arenaBytes in
            for p in pending {
                p.key.withBytes { k in
                    if let r = p.value {
                        batch.put(k, UnsafeRawBufferPointer(rebasing: arenaBytes[r]), in: store.objects)
                    } else {
                        batch.delete(k, in: store.objects)
                    }
                }
            }
        }
        try addIndexChanges(to: &batch)
        for (key, value) in pendingEdges {
            let k = key.bytes
            guard let edges = store.edges else { break }
            if let value { batch.put(k, value, in: edges) } else { batch.delete(k, in: edges) }
        }
        // Writers are serialised, so the latest count plus this transaction's delta is exact.
        for (entityId, delta) in countDeltas where delta != 0 {
            let now = Int64(try store.storedCount(entityId: entityId, in: nil)) + delta
            guard now >= 0 else { throw StrataError.corruptCatalog(reason: "object count of entity \(entityId) would be \(now)") }
            batch.put(MetaKey.count.key(entity: entityId), withUnsafeBytes(of: UInt64(now).littleEndian) { Array($0) }, in: store.meta)
        }
        for (entityId, binding) in advancedCounters {
            withUnsafeBytes(of: binding.lastId.littleEndian) { v in
                MetaKey.lastId.key(entity: entityId).withUnsafeBytes { batch.put($0, v, in: store.meta) }
            }
        }
        try store.engine.write(batch, durability: durability)
        store.counters.objectsWritten.add(UInt64(pending.lazy.filter { $0.value != nil }.count), ordering: .relaxed)
        store.counters.edgesWritten.add(UInt64(pendingEdges.count), ordering: .relaxed)
    }

    /// Undoes what the transaction did outside the store: ids it gave to class objects.
    func rollback() {
        for object in assignedObjects {
            var entity = object
            entity.id = 0
        }
        assignedObjects.removeAll()
        pending.removeAll()
        pendingIndex.removeAll()
        pendingEdges.removeAll()
        pendingUnique.removeAll()
        countDeltas.removeAll()
    }
}
