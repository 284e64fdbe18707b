/// Walks an object's relations for the store (generated `_strataVisitRelations` calls it once
/// per relation). Before the object is written, it puts new to-one targets, so that their ids
/// can be stored; after, it maintains edges and applies pending to-many changes.
public struct RelationVisitor {
    enum Phase {
        /// Put new to-one targets (the owner already has its id).
        case beforeWrite
        /// Maintain edges. `oldTargets`: the to-one targets stored before this put, by property id.
        case afterWrite(oldTargets: [UInt32: Id])
        /// Attach relations to the store and owner without writing (after a read).
        case attach
        /// Set the to-one at `field` to `target`.
        case assignToOne(field: Int, target: Id?)
    }

    let phase: Phase
    let store: Store
    /// The write transaction of the put phases; nil when attaching or assigning.
    let transaction: Transaction?
    let binding: EntityBinding
    let ownerId: Id

    /// Visits a to-one.
    public mutating func visit<T: Entity>(_ relation: ToOne<T>, field: Int) throws {
        switch phase {
        case .beforeWrite:
            guard let t = transaction else { return }
            let box = store.box(for: T.self)
            if var target = relation.assignedTarget, target.id == 0 {
                try box.put(&target, in: t)
                // A class target got its id in place; a struct target's copy carries it.
                if !(T.self is AnyObject.Type) { relation.replaceAssignedTarget(target, in: t) }
            } else if let targetId = relation.targetId {
                guard try box.isStoredOrBeingPut(targetId, in: t) else {
                    // A relation must point at a stored object. One the user assigned (removed
                    // since, or an id that never existed) is refused; one read from the store
                    // whose target was removed since (a stale copy) is stored as the store holds
                    // it now: empty. Either way no reference dangles.
                    if relation.isAssigned { throw StrataError.objectNotFound(entity: T._strataEntityName, id: targetId) }
                    relation.clearRemovedTarget(in: t)
                    return
                }
                if box.isEmbedded {
                    if var target = relation.assignedTarget { try box.put(&target, in: t) }   // an edited embedded object
                    try Self.checkOwnership(of: T._strataEntityName, id: targetId, owner: (binding.entityId, ownerId), store: store, in: t)
                }
            }
        case let .afterWrite(oldTargets):
            guard let t = transaction else { return }
            relation.attach(store)
            let propertyId = binding.propertyIds[field]
            let old = oldTargets[propertyId] ?? 0
            let new = relation.idToStore
            relation.settle(in: t)
            guard old != new else { return }
            if old != 0 {
                t.removeEdge(EdgeKey(kind: .toOneBacklink, entityId: binding.entityId, propertyId: propertyId, a: old, b: ownerId))
                // A replaced embedded object goes with the reference its parent dropped.
                if store.box(for: T.self).isEmbedded {
                    try InverseMaintenance.removeObject(entityName: T._strataEntityName, id: old, in: t)
                }
            }
            if new != 0 {
                t.putEdge(EdgeKey(kind: .toOneBacklink, entityId: binding.entityId, propertyId: propertyId, a: new, b: ownerId))
            }
        case .attach:
            relation.attach(store)
        case let .assignToOne(target, id):
            if target == field { relation.targetId = id }
        }
    }

    /// Visits a standalone to-many.
    public mutating func visit<T: Entity>(_ relation: ToMany<T>, field: Int) throws {
        switch phase {
        case .beforeWrite, .assignToOne:
            return
        case .afterWrite, .attach:
            if case .afterWrite = phase, let t = transaction { relation.logAttachment(in: t) }
            relation.attachStandalone(store: store, entityId: binding.entityId, propertyId: binding.propertyIds[field], ownerId: ownerId)
            // Checked here: entering the generic `apply` costs runtime metadata lookups.
            if case .afterWrite = phase, relation.hasChanges, let t = transaction { try relation.apply(in: t, store: store) }
        }
    }

    /// Visits a backlink.
    public mutating func visit<T: Entity>(_ relation: ToMany<T>, backlink: Int) throws {
        switch phase {
        case .beforeWrite, .assignToOne:
            return
        case .afterWrite, .attach:
            if case .afterWrite = phase, let t = transaction { relation.logAttachment(in: t) }
            relation.attachBacklink(store: store, owner: binding, index: backlink, ownerId: ownerId)
            if case .afterWrite = phase, relation.hasChanges, let t = transaction { try relation.apply(in: t, store: store) }
        }
    }

    /// An embedded object has one parent: refuses `owner` (entity id, object id) if any other
    /// object refers to the embedded object `id` through any relation.
    static func checkOwnership(of entity: String, id: Id, owner: (UInt32, Id), store: Store, in t: Transaction) throws(StrataError) {
        for (sourceEntity, property) in store.relations(targeting: entity) {
            let kind: EdgeKey.Kind = property.type == .toOne ? .toOneBacklink : .toManyBacklink
            let prefix = EdgeKey(kind: kind, entityId: sourceEntity, propertyId: property.id, a: id, b: 0)
            for source in try t.edgeSources(sharingPrefixWith: prefix) where (sourceEntity, source) != owner {
                throw .invalidRelation(reason: "embedded \(entity) \(id) already belongs to another object; an embedded object has one parent")
            }
        }
    }

    /// Sets the to-one at `field` of `object` to `target`.
    static func assignToOne<T: Entity>(of object: inout T, field: Int, to target: Id?, store: Store) throws(StrataError) {
        var visitor = RelationVisitor(phase: .assignToOne(field: field, target: target), store: store, transaction: nil,
                                      binding: try store.binding(for: T.self).get(), ownerId: object.id)
        do { try object._strataVisitRelations(&visitor) } catch { throw StrataError(error) }
    }
}
