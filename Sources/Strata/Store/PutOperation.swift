import StrataStorage

/// The put of one object inside a write transaction: its id, its related objects, its bytes, its
/// index entries and its edges.
///
/// It reads the object's old state once (through the transaction) and encodes the object once.
/// Started by ``Transaction/put(_:mode:binding:)``, for the user's object and for each related
/// object a relation puts (``RelationVisitor``, ``ToMany``), all in the same transaction.
/// A public put runs inside a savepoint (``Store/write(in:_:)``), so a put that fails part way (a unique
/// value taken, a related object missing, an object too large) leaves nothing of itself in the
/// transaction: not its related objects, nor their ids, nor its relations' saved state.
struct PutOperation<T: Entity> {
    let binding: EntityBinding
    let transaction: Transaction

    /// What the transaction held for the object before this put.
    private struct OldState {
        var stored = false
        var toOneTargets: [UInt32: Id] = [:]
        /// From the transaction's pool: recycled when the put ends.
        var indexValues: IndexValues?
    }

    func run(_ object: inout T, mode: PutMode) throws(StrataError) -> Id {
        let b = binding, t = transaction
        var id = object._strataId
        let assigned = id == 0
        var old = OldState()
        if assigned {
            guard mode != .update else { throw .invalidId(entity: b.name) }
            guard b.lastId < Id.max else { throw .objectExists(entity: b.name, id: Id.max) }
            id = b.lastId + 1
            t.counterAdvanced(b, from: b.lastId)
            b.lastId = id
            // The id is given before relations are visited, so that a cycle of new objects sees
            // it and does not put this object again. A rollback takes it back.
            object._strataId = id
            if b.isClass { t.logUndo(.assignedId(object)) }
        } else {
            old = try readOldState(id)
            switch mode {
            case .put, .update:
                guard old.stored else { throw .objectNotFound(entity: b.name, id: id) }
            case .insert:
                guard !old.stored else { throw .objectExists(entity: b.name, id: id) }
                if id > b.lastId {
                    t.counterAdvanced(b, from: b.lastId)
                    b.lastId = id
                }
            }
        }
        defer { t.recycle(old.indexValues) }
        do {
            return try write(&object, id: id, old: old)
        } catch {
            // A struct's id is the caller's copy: no undo log reaches it.
            if assigned && !b.isClass { object._strataId = 0 }
            throw error
        }
    }

    private func write(_ object: inout T, id: Id, old: OldState) throws(StrataError) -> Id {
        let b = binding, t = transaction
        let key = ObjectKey(entityId: b.entityId, id: id)
        if !b.toOnePropertyIds.isEmpty {
            // Only to-ones act before the write (their new targets are put first, so that the
            // bytes name their ids). In progress only while those are put: after this the
            // object is written.
            t.putsInProgress.append(key)
            defer { t.putsInProgress.removeLast() }
            try visitRelations(of: &object, phase: .beforeWrite, id: id)
        }
        try b.encode(object, into: &t.scratch)
        guard t.scratch.count <= ObjectFormat.maxObjectBytes else {
            throw .objectTooLarge(entity: b.name, size: t.scratch.count, limit: ObjectFormat.maxObjectBytes)
        }
        guard let overlay = t.overlay else { throw .readOnly }
        if let ix = b.indexes {
            // Relations, which the visit above may have changed, are never indexed: the values
            // are those of the bytes written.
            let values = try t.indexValues(of: t.scratch, id: id, indexes: ix)
            defer { t.recycle(values) }
            try t.checkIndexedValues(values, old: old.indexValues, id: id, indexes: ix)
            try t.updateIndexEntries(ix, id: id, old: old.indexValues, new: values)
        }
        t.scratch.withUnsafeBytes { overlay.writeObject(key, value: $0, committedPresent: old.stored) }
        if b.hasRelations {
            try visitRelations(of: &object, phase: .afterWrite(oldTargets: old.toOneTargets), id: id)
        }
        return id
    }

    /// One read of the object as the transaction sees it: whether it is stored, and what its
    /// to-ones and indexes held.
    private func readOldState(_ id: Id) throws(StrataError) -> OldState {
        let b = binding
        var old = OldState()
        old.stored = try StrataError.decoding(entity: b.name, id: id) {
            try transaction.withObject(ObjectKey(entityId: b.entityId, id: id)) { bytes in
                if !b.toOnePropertyIds.isEmpty {
                    old.toOneTargets = try ObjectBytes.toOneTargets(in: bytes, propertyIds: b.toOnePropertyIds)
                }
                if let ix = b.indexes { old.indexValues = try transaction.indexValues(of: bytes, id: id, indexes: ix) }
            }
        }
        return old
    }

    private func visitRelations(of object: inout T, phase: RelationVisitor.Phase, id: Id) throws(StrataError) {
        var visitor = RelationVisitor(phase: phase, store: transaction.store, transaction: transaction, binding: binding, ownerId: id)
        do { try object._strataVisitRelations(&visitor) } catch { throw StrataError(error) }
    }
}
