import StrataStorage

/// What removing an object does to the graph, inside the removing transaction: its outgoing
/// edges go; every to-one elsewhere that pointed at it becomes nil and every to-many that held
/// it no longer does. Objects at the other ends are never removed, except embedded objects the
/// removed one owns. Works from the catalog and the stored bytes, so it covers entities this
/// session never opened a box for.
enum InverseMaintenance {
    static func removeObject(entityName: String, id: Id, in t: Transaction) throws(StrataError) {
        let store = t.store
        guard let overlay = t.overlay else { throw .readOnly }
        guard let record = store.record(named: entityName) else { return }
        let key = ObjectKey(entityId: record.entityId, id: id)
        guard let bytes = try t.objectBytes(key) else { return }

        // Outgoing to-ones: their backlink entries.
        let toOnes = record.properties.filter { !$0.isRemoved && $0.type == .toOne }.map(\.id)
        let targets = try decoding(entityName, id) {
            try bytes.withUnsafeBytes { try ObjectBytes.toOneTargets(in: $0, propertyIds: toOnes) }
        }
        // Embedded objects this one owns are removed with it (after its own edges are gone).
        var owned: [(entity: String, id: Id)] = []
        func embeddedTarget(_ property: EntityRecord.Property) -> String? {
            guard let target = property.target, store.record(named: target)?.isEmbedded == true else { return nil }
            return target
        }
        for (propertyId, target) in targets where target != 0 {
            t.removeEdge(EdgeKey(kind: .toOneBacklink, entityId: record.entityId, propertyId: propertyId, a: target, b: id))
            if let property = record.properties.first(where: { $0.id == propertyId }), let entity = embeddedTarget(property) {
                owned.append((entity, target))
            }
        }
        // Outgoing standalone to-manys: the list and each target's reverse entry.
        for property in record.properties where !property.isRemoved && property.type == .toMany {
            let embedded = embeddedTarget(property)
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
                        let cleared = try decoding(entityName, source) { try ObjectBytes.clearingField(property.id, in: sourceBytes) }
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
                    let list = try t.toManyList(entityId: sourceEntity, propertyId: property.id, source: source)
                        .filter { $0 != id }
                    let listKey = EdgeKey(kind: .toManyList, entityId: sourceEntity, propertyId: property.id, a: source, b: 0)
                    if list.isEmpty { t.removeEdge(listKey) } else { t.putEdge(listKey, EdgeList.encode(list)) }
                    t.removeEdge(EdgeKey(kind: .toManyBacklink, entityId: sourceEntity, propertyId: property.id, a: id, b: source))
                }
            }
        }
        try deleteObject(key, oldBytes: bytes, entityName: entityName, in: t)
        for (entity, ownedId) in owned { try removeObject(entityName: entity, id: ownedId, in: t) }
    }

    /// Removes an object of an entity that no relation involves: the object and its index entries.
    static func removeUnrelated(_ key: ObjectKey, entityName: String, indexes: EntityIndexes?, in t: Transaction) throws(StrataError) {
        guard let indexes else {
            t.overlay?.writeObject(key, value: nil, committedPresent: true)
            return
        }
        guard let bytes = try t.objectBytes(key) else { return }
        try deleteObject(key, oldBytes: bytes, entityName: entityName, indexes: indexes, in: t)
    }

    /// Writes the removal of the object at `key`, whose stored bytes are `oldBytes`, and of its
    /// index entries.
    private static func deleteObject(_ key: ObjectKey, oldBytes: [UInt8], entityName: String, indexes: EntityIndexes? = nil,
                                     in t: Transaction) throws(StrataError) {
        if let ix = indexes ?? t.store.indexes(entityId: key.entityId) {
            let old = try t.indexValues(of: oldBytes, id: key.id, indexes: ix)
            defer { t.recycle(old) }
            try t.updateIndexEntries(ix, id: key.id, old: old, new: nil)
        }
        // The caller has just read the object, so it exists as the transaction sees it.
        t.overlay?.writeObject(key, value: nil, committedPresent: true)
    }

    private static func decoding<R>(_ entity: String, _ id: Id, _ body: () throws -> R) throws(StrataError) -> R {
        do { return try body() } catch let failure as CodecFailure {
            throw .corruptObject(entity: entity, id: id, reason: failure.reason)
        } catch {
            throw StrataError(error)
        }
    }
}
