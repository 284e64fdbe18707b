import StrataStorage

/// The relation rules of a write transaction, in one place (SPEC.md §12): what setting a
/// to-one, setting a to-many's list, adding or taking a source out of a to-many (a backlink's
/// edit) and removing an object do to the edges, and who may own an embedded object. The typed
/// put (``RelationVisitor``, ``ToMany``'s apply), ``Store/putStoredObjects(_:of:)`` and every
/// removal call these; nothing else writes an edge.
///
/// Removing an object never removes what it points to, except embedded objects it owns, and
/// never leaves a reference to it: every to-one elsewhere that pointed at it becomes nil and
/// every to-many that held it no longer does. Works from the catalog and the stored bytes, so
/// it covers entities this session never opened a box for.
struct EdgeMaintenance {
    let transaction: Transaction

    // MARK: to-ones

    /// The to-one `propertyId` of object `owner` (entity `entityId`) changes from `old` to `new`
    /// (0: none). `embeddedTarget`: the target entity, when its objects are embedded: the old
    /// one goes with the reference its parent dropped.
    func setToOne(entityId: UInt32, propertyId: UInt32, owner: Id, from old: Id, to new: Id,
                  embeddedTarget: String?) throws(StrataError) {
        guard old != new else { return }
        let t = transaction
        if old != 0 {
            t.removeEdge(EdgeKey(kind: .toOneBacklink, entityId: entityId, propertyId: propertyId, a: old, b: owner))
            if let embeddedTarget { try removeObject(entityName: embeddedTarget, id: old) }
        }
        if new != 0 {
            t.putEdge(EdgeKey(kind: .toOneBacklink, entityId: entityId, propertyId: propertyId, a: new, b: owner))
        }
    }

    // MARK: to-manys

    /// The standalone to-many `propertyId` of `owner` holds `list` from now on, in order, where
    /// it held `current`: the list entry and each target's reverse entry follow. Embedded
    /// elements that left the list (`embeddedTarget` names their entity) are removed.
    func setToManyList(entityId: UInt32, propertyId: UInt32, owner: Id, from current: [Id], to list: [Id],
                       embeddedTarget: String?) throws(StrataError) {
        let t = transaction
        let listKey = EdgeKey(kind: .toManyList, entityId: entityId, propertyId: propertyId, a: owner, b: 0)
        if list.isEmpty { t.removeEdge(listKey) } else if list != current { t.putEdge(listKey, EdgeList.encode(list)) }
        let now = Set(list), then = Set(current)
        for target in then.subtracting(now) {
            t.removeEdge(EdgeKey(kind: .toManyBacklink, entityId: entityId, propertyId: propertyId, a: target, b: owner))
            if let embeddedTarget { try removeObject(entityName: embeddedTarget, id: target) }
        }
        for target in now.subtracting(then) {
            t.putEdge(EdgeKey(kind: .toManyBacklink, entityId: entityId, propertyId: propertyId, a: target, b: owner))
        }
    }

    /// Appends `target` to the to-many `propertyId` of `source` (when not there already): a
    /// backlink that gained a source.
    func addToList(entityId: UInt32, propertyId: UInt32, source: Id, target: Id) throws(StrataError) {
        let t = transaction
        var list = try t.toManyList(entityId: entityId, propertyId: propertyId, source: source)
        if !list.contains(target) { list.append(target) }
        t.putEdge(EdgeKey(kind: .toManyList, entityId: entityId, propertyId: propertyId, a: source, b: 0), EdgeList.encode(list))
        t.putEdge(EdgeKey(kind: .toManyBacklink, entityId: entityId, propertyId: propertyId, a: target, b: source))
    }

    /// Takes `target` out of the to-many `propertyId` of `source`: a backlink that lost a
    /// source, or a target being removed.
    func removeFromList(entityId: UInt32, propertyId: UInt32, source: Id, target: Id) throws(StrataError) {
        let t = transaction
        let list = try t.toManyList(entityId: entityId, propertyId: propertyId, source: source).filter { $0 != target }
        let listKey = EdgeKey(kind: .toManyList, entityId: entityId, propertyId: propertyId, a: source, b: 0)
        if list.isEmpty { t.removeEdge(listKey) } else { t.putEdge(listKey, EdgeList.encode(list)) }
        t.removeEdge(EdgeKey(kind: .toManyBacklink, entityId: entityId, propertyId: propertyId, a: target, b: source))
    }

    // MARK: targets

    /// A relation's new target, object `id` of `entity` (its entity id `targetEntityId`), must be
    /// stored or be put in this transaction; an embedded one must have no parent but `owner`
    /// (entity id, object id).
    func checkNewTarget(entity: String, entityId targetEntityId: UInt32, id: Id, isEmbedded: Bool,
                        owner: (UInt32, Id)) throws(StrataError) {
        guard try transaction.isStoredOrBeingPut(ObjectKey(entityId: targetEntityId, id: id)) else {
            throw .objectNotFound(entity: entity, id: id)
        }
        if isEmbedded { try checkOwnership(of: entity, id: id, owner: owner) }
    }

    /// An embedded object has one parent: refuses `owner` (entity id, object id) if any other
    /// object refers to the embedded object `id` through any relation.
    func checkOwnership(of entity: String, id: Id, owner: (UInt32, Id)) throws(StrataError) {
        for (sourceEntity, property) in transaction.store.relations(targeting: entity) {
            let kind: EdgeKey.Kind = property.type == .toOne ? .toOneBacklink : .toManyBacklink
            let prefix = EdgeKey(kind: kind, entityId: sourceEntity, propertyId: property.id, a: id, b: 0)
            for source in try transaction.edgeSources(sharingPrefixWith: prefix) where (sourceEntity, source) != owner {
                throw .invalidRelation(reason: "embedded \(entity) \(id) already belongs to another object; an embedded object has one parent")
            }
        }
    }

    // MARK: removal

    /// Removes object `id` of the entity named `entityName`, its index entries and every edge
    /// that names it, and the embedded objects it owns.
    func removeObject(entityName: String, id: Id) throws(StrataError) {
        let t = transaction, store = t.store
        guard let overlay = t.overlay else { throw .readOnly }
        guard let record = store.record(named: entityName) else { return }
        let key = ObjectKey(entityId: record.entityId, id: id)
        guard let bytes = try t.objectBytes(key) else { return }

        // Outgoing to-ones: their backlink entries.
        let toOnes = record.properties.filter { !$0.isRemoved && $0.type == .toOne }.map(\.id)
        let targets = try StrataError.decoding(entity: entityName, id: id) {
            try bytes.withUnsafeBytes { try ObjectBytes.toOneTargets(in: $0, propertyIds: toOnes) }
        }
        // Embedded objects this one owns are removed with it (after its own edges are gone).
        var owned: [(entity: String, id: Id)] = []
        for (propertyId, target) in targets where target != 0 {
            t.removeEdge(EdgeKey(kind: .toOneBacklink, entityId: record.entityId, propertyId: propertyId, a: target, b: id))
            if let property = record.properties.first(where: { $0.id == propertyId }), let entity = embeddedTarget(of: property) {
                owned.append((entity, target))
            }
        }
        // Outgoing standalone to-manys: the list and each target's reverse entry.
        for property in record.properties where !property.isRemoved && property.type == .toMany {
            let embedded = embeddedTarget(of: property)
            for target in try t.toManyList(entityId: record.entityId, propertyId: property.id, source: id) {
                t.removeEdge(EdgeKey(kind: .toManyBacklink, entityId: record.entityId, propertyId: property.id, a: target, b: id))
                if let embedded { owned.append((embedded, target)) }
            }
            t.removeEdge(EdgeKey(kind: .toManyList, entityId: record.entityId, propertyId: property.id, a: id, b: 0))
        }
        // Incoming relations: clear them in their sources.
        for (sourceEntity, property) in store.relations(targeting: entityName) {
            if property.type == .toOne {
                let prefix = EdgeKey(kind: .toOneBacklink, entityId: sourceEntity, propertyId: property.id, a: id, b: 0)
                for source in try t.edgeSources(sharingPrefixWith: prefix) {
                    let sourceKey = ObjectKey(entityId: sourceEntity, id: source)
                    if let sourceBytes = try t.objectBytes(sourceKey) {
                        let cleared = try StrataError.decoding(entity: entityName, id: source) { try ObjectBytes.clearingField(property.id, in: sourceBytes) }
                        // A to-one indexed in a composite index: its entry moves to the nil target.
                        if let ix = store.indexes(entityId: sourceEntity), ix.reads(propertyId: property.id) {
                            let old = try t.indexValues(of: sourceBytes, id: source, indexes: ix)
                            let new = try t.indexValues(of: cleared, id: source, indexes: ix)
                            defer { t.recycle(old); t.recycle(new) }
                            try t.updateIndexEntries(ix, id: source, old: old, new: new)
                        }
                        cleared.withUnsafeBytes { overlay.writeObject(sourceKey, value: $0, committedPresent: true) }
                    }
                    t.removeEdge(EdgeKey(kind: .toOneBacklink, entityId: sourceEntity, propertyId: property.id, a: id, b: source))
                }
            } else {
                let prefix = EdgeKey(kind: .toManyBacklink, entityId: sourceEntity, propertyId: property.id, a: id, b: 0)
                for source in try t.edgeSources(sharingPrefixWith: prefix) {
                    try removeFromList(entityId: sourceEntity, propertyId: property.id, source: source, target: id)
                }
            }
        }
        try deleteObject(key, oldBytes: bytes)
        for (entity, ownedId) in owned { try removeObject(entityName: entity, id: ownedId) }
    }

    /// Removes an object of an entity that no relation involves: the object and its index entries.
    func removeUnrelated(_ key: ObjectKey, indexes: EntityIndexes?) throws(StrataError) {
        guard let indexes else {
            transaction.overlay?.writeObject(key, value: nil, committedPresent: true)
            return
        }
        guard let bytes = try transaction.objectBytes(key) else { return }
        try deleteObject(key, oldBytes: bytes, indexes: indexes)
    }

    /// The target entity of a relation property, when its objects are embedded.
    func embeddedTarget(of property: EntityRecord.Property) -> String? {
        guard let target = property.target, transaction.store.record(named: target)?.isEmbedded == true else { return nil }
        return target
    }

    /// Writes the removal of the object at `key`, whose stored bytes are `oldBytes`, and of its
    /// index entries.
    private func deleteObject(_ key: ObjectKey, oldBytes: [UInt8], indexes: EntityIndexes? = nil) throws(StrataError) {
        let t = transaction
        if let ix = indexes ?? t.store.indexes(entityId: key.entityId) {
            let old = try t.indexValues(of: oldBytes, id: key.id, indexes: ix)
            defer { t.recycle(old) }
            try t.updateIndexEntries(ix, id: key.id, old: old, new: nil)
        }
        // The caller has just read the object, so it exists as the transaction sees it.
        t.overlay?.writeObject(key, value: nil, committedPresent: true)
    }
}

extension Transaction {
    /// The relation rules, writing into this transaction.
    var edgeRules: EdgeMaintenance { EdgeMaintenance(transaction: self) }

    func putEdge(_ key: EdgeKey, _ value: [UInt8] = []) {
        overlay?.write(.edges, key: key.bytes, value: value)
    }

    func removeEdge(_ key: EdgeKey) {
        overlay?.write(.edges, key: key.bytes, value: nil)
    }
}
