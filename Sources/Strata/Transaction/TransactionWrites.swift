import StrataStorage

/// The writes of the object layer, on the transaction they write into: a put and a removal.
/// Every caller calls these directly — `Box`, a relation putting its new targets (``RelationVisitor``,
/// ``ToMany``), ``Store/putStoredObjects(_:of:)`` — once it has found its transaction and checked
/// the store is open (``Store/write(in:_:)``); nothing below climbs back out to the store.
extension Transaction {
    /// Puts `object` (see ``PutMode``) and returns its id, given to it when it had none.
    @discardableResult
    func put<T: Entity>(_ object: inout T, mode: PutMode = .put, binding: EntityBinding) throws(StrataError) -> Id {
        try PutOperation<T>(binding: binding, transaction: self).run(&object, mode: mode)
    }

    /// Puts an object a relation refers to (a new target, an edited embedded one): its binding
    /// from the store's table, embedded entities included.
    @discardableResult
    func putRelated<T: Entity>(_ object: inout T) throws(StrataError) -> Id {
        try put(&object, binding: try store.binding(for: T.self).get())
    }

    /// Whether the object at `key` is stored as the transaction sees it, or its put is under way
    /// here (an object of a cycle of new objects, referred to before it is written).
    func isStoredOrBeingPut(_ key: ObjectKey) throws(StrataError) -> Bool {
        isBeingPut(key) ? true : try objectExists(key)
    }

    /// Removes the objects with `ids` that are stored; returns how many were. Edges that name
    /// them go (``EdgeMaintenance/removeObject(entityName:id:)``), and so do the objects the
    /// delete rules cascade to (``RemovalPlan``; a `.deny` rule refuses before anything is
    /// written). `listed`: the caller has just read them from this transaction, so each is
    /// stored without asking again.
    func remove(_ ids: some Sequence<Id>, binding b: EntityBinding, listed: Bool = false) throws(StrataError) -> Int {
        // Whether removing needs the relation rules: the entity has relations, or other
        // entities' relations point at it. Asked once for all the ids.
        let store = self.store
        let graph = b.hasRelations || !store.relations(targeting: b.name).isEmpty
            || store.record(named: b.name)?.properties.contains { !$0.isRemoved && $0.type.isRelation } == true
        var stored: [Id] = []
        for id in ids {
            if !listed { guard try objectExists(ObjectKey(entityId: b.entityId, id: id)) else { continue } }
            stored.append(id)
        }
        let rules = graph ? store.deleteRules() : DeleteRuleTable()
        let plan = rules.isEmpty ? nil : try RemovalPlan(removing: stored, of: b.name, rules: rules, transaction: self)
        // What the rules reach goes first, last found first: a removed object's sources are
        // then gone already, rather than rewritten with a cleared reference and removed after.
        for (entity, id) in (plan?.cascaded ?? []).reversed() { try edgeRules.removeObject(entityName: entity, id: id) }
        for id in stored {
            if graph {
                try edgeRules.removeObject(entityName: b.name, id: id)
            } else {
                try edgeRules.removeUnrelated(ObjectKey(entityId: b.entityId, id: id), indexes: b.indexes)
            }
        }
        return stored.count
    }
}
