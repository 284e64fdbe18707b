import StrataStorage

/// Everything a write transaction has written and not committed, in one place: objects, relation
/// edges and index entries, each in an ordered ``OverlaySpace``, and the object counts those
/// writes move. The model is Pebble's indexed batch: reads inside the transaction look here
/// first and fall through to the engine (``TransactionReads`` merges the two), and the commit
/// encodes the overlay into one `WriteBatch`.
///
/// Savepoints: every write logs what it replaced; ``rollback(to:)`` restores those states
/// newest first, so a nested transaction or a failed put leaves the overlay exactly as it found
/// it, in time proportional to what it undoes.
final class WriteOverlay {
    enum Space: UInt8 {
        case objects, edges, indexes
    }

    let objects = OverlaySpace()
    let edges = OverlaySpace()
    let indexes = OverlaySpace()
    /// Net objects added (positive) or removed per entity, as the overlay's states stand:
    /// derived from each object write's visibility before and after, so a rollback moves
    /// them back with the states.
    @exclusivity(unchecked) private(set) var countDeltas = CountDeltas()
    @exclusivity(unchecked) private var undoLog: [(space: Space, undo: OverlaySpace.Undo)] = []

    var isEmpty: Bool { objects.isEmpty && edges.isEmpty && indexes.isEmpty }

    func space(_ s: Space) -> OverlaySpace {
        switch s {
        case .objects: objects
        case .edges: edges
        case .indexes: indexes
        }
    }

    // MARK: savepoints

    /// A point to roll back to.
    var mark: Int { undoLog.count }

    /// Restores every state written since `mark`, newest first.
    func rollback(to mark: Int) {
        while undoLog.count > mark {
            let (s, undo) = undoLog.removeLast()
            if s == .objects {
                let before = visible(undo.node)
                objects.restore(undo)
                adjustCount(ofNode: undo.node, by: (visible(undo.node) ? 1 : 0) - (before ? 1 : 0))
            } else {
                space(s).restore(undo)
            }
        }
    }

    // MARK: objects

    /// Whether the object at `node` exists as the transaction sees it.
    @inline(__always)
    private func visible(_ node: Int32) -> Bool {
        switch objects.state(of: node) {
        case .value: true
        case .removed: false
        case .absent: objects.committedPresent(of: node)
        }
    }

    private func adjustCount(ofNode node: Int32, by delta: Int) {
        guard delta != 0 else { return }
        let key = objects.key(of: node)
        let entityId = ObjectKey.entityId(fromKey: key)
        countDeltas.add(Int64(delta), to: entityId)
    }

    /// Net objects added per entity. A transaction touches few entities, and a bulk put writes
    /// one entity over and over: a short list, searched from the last one hit, costs less than
    /// hashing the entity id on every object write.
    struct CountDeltas {
        private(set) var entries: [(entityId: UInt32, delta: Int64)] = []
        private var last = 0

        subscript(entityId: UInt32) -> Int64? {
            entries.first { $0.entityId == entityId }?.delta
        }

        mutating func add(_ delta: Int64, to entityId: UInt32) {
            if last < entries.count && entries[last].entityId == entityId {
                entries[last].delta += delta
            } else if let i = entries.firstIndex(where: { $0.entityId == entityId }) {
                entries[i].delta += delta
                last = i
            } else {
                entries.append((entityId, delta))
                last = entries.count - 1
            }
        }
    }

    /// Writes an object (`value` nil: removes it). `committedPresent`: whether the engine holds
    /// it, used only the first time the transaction writes the key (the caller has just read it).
    func writeObject(_ key: ObjectKey, value: UnsafeRawBufferPointer?, committedPresent: Bool) {
        key.withBytes { k in
            let (node, undo) = objects.write(k, value: value, committedPresent: committedPresent)
            undoLog.append((.objects, undo))
            // Visible before: what the write replaced, or the engine's state for a new node.
            let before = undo.state == .value || (undo.state == .absent && objects.committedPresent(of: node))
            adjustCount(ofNode: node, by: (value != nil ? 1 : 0) - (before ? 1 : 0))
        }
    }

    // MARK: edges and index entries

    func write(_ s: Space, key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer?) {
        precondition(s != .objects, "objects are written with writeObject")
        let (_, undo) = space(s).write(key, value: value, committedPresent: false)
        undoLog.append((s, undo))
    }

    func write(_ s: Space, key: [UInt8], value: [UInt8]?) {
        key.withUnsafeBytes { k in
            if let value {
                value.withUnsafeBytes { v in write(s, key: k, value: v) }
            } else {
                write(s, key: k, value: nil)
            }
        }
    }

    // MARK: commit

    /// Adds every live entry to `batch`, key space by key space in key order (the engine's
    /// memtable inserts ascending keys fastest).
    func encode(into batch: inout WriteBatch, objects objectSpace: KeySpace, edges edgeSpace: KeySpace?, indexes indexSpace: KeySpace?) {
        func add(_ s: OverlaySpace, _ target: KeySpace?) {
            guard let target, !s.isEmpty else { return }
            var node = s.first()
            while node >= 0 {
                switch s.state(of: node) {
                case .absent: break
                case .value: batch.put(s.key(of: node), s.value(of: node), in: target)
                case .removed: batch.delete(s.key(of: node), in: target)
                }
                node = s.successor(node)
            }
        }
        batch.reserveCapacity(objects.encodedBytesBound + edges.encodedBytesBound + indexes.encodedBytesBound)
        add(objects, objectSpace)
        add(edges, edgeSpace)
        add(indexes, indexSpace)
    }

    /// What the overlay changes, for the commit's observers.
    func changeSet() -> ChangeSet {
        var changes = ChangeSet()
        // Keys come in order, so each entity's ids come together: gathered in `current`, then
        // stored once, instead of a dictionary update per object.
        var currentEntity: UInt32?
        var current = ChangeSet.EntityChanges()
        func flush() {
            if let currentEntity, !current.isEmpty { changes.entities[currentEntity] = current }
        }
        var node = objects.first()
        while node >= 0 {
            let state = objects.state(of: node)
            if state != .absent {
                let key = objects.key(of: node)
                let entityId = ObjectKey.entityId(fromKey: key)
                if entityId != currentEntity {
                    flush()
                    currentEntity = entityId
                    current = ChangeSet.EntityChanges()
                }
                let id = ObjectKey.id(fromKey: key)
                switch (objects.committedPresent(of: node), state == .value) {
                case (false, true): current.inserted.append(id)
                case (true, true): current.updated.append(id)
                case (true, false): current.removed.append(id)
                case (false, false): break
                }
            }
            node = objects.successor(node)
        }
        flush()
        node = edges.first()
        while node >= 0 {
            if edges.state(of: node) != .absent, let key = EdgeKey(bytes: edges.key(of: node)) {
                let relation = ChangeSet.Relation(entityId: key.entityId, propertyId: key.propertyId)
                // The object whose relation changed: the list's owner, or the source of a
                // reverse entry (its `b`).
                changes.relations[relation, default: []].insert(key.kind == .toManyList ? key.a : key.b)
                // A backlink or reverse entry names the target whose backlinks changed.
                if key.kind != .toManyList { changes.relationTargets[relation, default: []].insert(key.a) }
            }
            node = edges.successor(node)
        }
        return changes
    }
}
