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
    let transaction: Transaction?
    let binding: EntityBinding
    let ownerId: Id

    /// Visits a to-one.
    public mutating func visit<T: Entity>(_ relation: ToOne<T>, field: Int) throws {
        switch phase {
        case .beforeWrite:
            guard let t = transaction else { return }
            if var target = relation.assignedTarget, target.id == 0 {
                try store.box(for: T.self).put(&target, in: t)
                relation.assignedTarget = target
            } else if let targetId = relation.targetId, try !store.box(for: T.self).contains(targetId) {
                // A relation must point at a stored object (one removed since it was assigned,
                // or an id that never existed, would dangle).
                throw StrataError.objectNotFound(entity: T._strataEntityName, id: targetId)
            }
        case let .afterWrite(oldTargets):
            guard let t = transaction else { return }
            relation.attach(store)
            let propertyId = binding.propertyIds[field]
            let old = oldTargets[propertyId] ?? 0
            let new = relation.idToStore
            guard old != new else { return }
            if old != 0 {
                t.removeEdge(EdgeKey(kind: .toOneBacklink, entityId: binding.entityId, propertyId: propertyId, a: old, b: ownerId))
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
            relation.attachStandalone(store: store, entityId: binding.entityId, propertyId: binding.propertyIds[field], ownerId: ownerId)
            if case .afterWrite = phase, let t = transaction { try relation.apply(in: t, store: store) }
        }
    }

    /// Visits a backlink.
    public mutating func visit<T: Entity>(_ relation: ToMany<T>, backlink: Int) throws {
        switch phase {
        case .beforeWrite, .assignToOne:
            return
        case .afterWrite, .attach:
            relation.attachBacklink(store: store, schema: binding.backlinks[backlink], ownerId: ownerId)
            if case .afterWrite = phase, let t = transaction { try relation.apply(in: t, store: store) }
        }
    }

    /// Sets the to-one at `field` of `object` to `target`.
    static func assignToOne<T: Entity>(of object: inout T, field: Int, to target: Id?, store: Store) throws(StrataError) {
        var visitor = RelationVisitor(phase: .assignToOne(field: field, target: target), store: store, transaction: nil,
                                      binding: try store.binding(for: T.self).get(), ownerId: object.id)
        do { try object._strataVisitRelations(&visitor) } catch { throw StrataError(error) }
    }
}
