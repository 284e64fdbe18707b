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
            let target = try store.binding(for: T.self).get()
            if var assigned = relation.assignedTarget, assigned._strataId == 0 {
                try t.put(&assigned, binding: target)
                // A class target got its id in place; a struct target's copy carries it.
                if !(T.self is AnyObject.Type) { relation.replaceAssignedTarget(assigned, in: t) }
            } else if let targetId = relation.targetId {
                guard try t.isStoredOrBeingPut(ObjectKey(entityId: target.entityId, id: targetId)) else {
                    // A relation must point at a stored object. One the user assigned (removed
                    // since, or an id that never existed) is refused; one read from the store
                    // whose target was removed since (a stale copy) is stored as the store holds
                    // it now: empty. Either way no reference dangles.
                    if relation.isAssigned { throw StrataError.objectNotFound(entity: T._strataEntityName, id: targetId) }
                    relation.clearRemovedTarget(in: t)
                    return
                }
                if target.isEmbedded {
                    if var assigned = relation.assignedTarget { try t.put(&assigned, binding: target) }   // an edited embedded object
                    try t.edgeRules.checkOwnership(of: T._strataEntityName, id: targetId, owner: (binding.entityId, ownerId))
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
            let embedded = try old != 0 && store.binding(for: T.self).get().isEmbedded
            try t.edgeRules.setToOne(entityId: binding.entityId, propertyId: propertyId, owner: ownerId, from: old, to: new,
                                     embeddedTarget: embedded ? T._strataEntityName : nil)
        case .attach:
            relation.attach(store)
        case let .assignToOne(target, id):
            if target == field { relation.targetId = id }
        }
    }

    /// Visits a standalone to-many.
    public mutating func visit<T: Entity>(_ relation: ToMany<T>, field: Int) throws {
        let (store, entityId, propertyId, ownerId) = (store, binding.entityId, binding.propertyIds[field], ownerId)
        try visitToMany(relation) { $0.attachStandalone(store: store, entityId: entityId, propertyId: propertyId, ownerId: ownerId) }
    }

    /// Visits a backlink.
    public mutating func visit<T: Entity>(_ relation: ToMany<T>, backlink: Int) throws {
        let (store, owner, ownerId) = (store, binding, ownerId)
        try visitToMany(relation) { $0.attachBacklink(store: store, owner: owner, index: backlink, ownerId: ownerId) }
    }

    /// Attaches a to-many (either role) to its owner after a read or a put; after a put, applies
    /// its pending changes.
    @inline(__always)
    private func visitToMany<T: Entity>(_ relation: ToMany<T>, attach: (ToMany<T>) -> Void) throws {
        switch phase {
        case .beforeWrite, .assignToOne:
            return
        case .afterWrite, .attach:
            if case .afterWrite = phase, let t = transaction { relation.logAttachment(in: t) }
            attach(relation)
            // Checked here: entering the generic `apply` costs runtime metadata lookups. A loaded
            // list without changes may still hold embedded elements edited in place.
            if case .afterWrite = phase, relation.hasChanges || relation.mayHoldEditedElements, let t = transaction {
                try relation.apply(in: t, store: store)
            }
        }
    }

    /// Sets the to-one at `field` of `object` to `target`.
    static func assignToOne<T: Entity>(of object: inout T, field: Int, to target: Id?, store: Store) throws(StrataError) {
        var visitor = RelationVisitor(phase: .assignToOne(field: field, target: target), store: store, transaction: nil,
                                      binding: try store.binding(for: T.self).get(), ownerId: object._strataId)
        do { try object._strataVisitRelations(&visitor) } catch { throw StrataError(error) }
    }
}
