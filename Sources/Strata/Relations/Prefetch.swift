/// Loading the relations of many objects at once, without one read per object (N+1).
extension Box {
    /// Loads the to-one targets of all `objects` in one pass: distinct target ids are read in
    /// increasing order from one consistent snapshot; afterwards `.target` does no store read.
    ///
    /// ```swift
    /// let firstOrders = try orders.get(Array(1...1000))
    /// try orders.prefetch(\.customer, for: firstOrders)
    /// for o in firstOrders { print(o.customer.target?.name ?? "-") }   // no further reads
    /// ```
    @inlinable
    public func prefetch<Target: Entity>(_ relation: KeyPath<T, ToOne<Target>>, for objects: [T]) throws(StrataError) {
        // Inlinable, so that the caller's specialised code applies the key path: applied by
        // generic code, it costs more than the rest of the prefetch per object (4 k
        // instructions of an order's 5 k in the graph benchmark's prefetch).
        var relations: [ToOne<Target>] = []
        relations.reserveCapacity(objects.count)
        var ids = Set<Id>()
        for object in objects {
            let r = object[keyPath: relation]
            relations.append(r)
            if let id = r.targetId { ids.insert(id) }
        }
        let loaded = try store.box(for: Target.self).get(ids.sorted())
        var byId = [Id: Target](minimumCapacity: loaded.count)
        for t in loaded { byId[t.id] = t }
        for r in relations { r.prefetched(r.targetId.flatMap { byId[$0] }, store: store) }
    }

    /// Loads a to-many or backlink of all `objects` in one pass: the edges of every owner, then
    /// every distinct element in increasing id order, from one consistent snapshot; afterwards
    /// iterating the relations does no store read.
    ///
    /// ```swift
    /// try customers.prefetch(\.orders, for: someCustomers)
    /// ```
    public func prefetch<Element: Entity>(_ relation: KeyPath<T, ToMany<Element>>, for objects: [T]) throws(StrataError) {
        let elements = store.box(for: Element.self)
        try store.read(consistent: true) { t in
            // nil for a relation with unapplied changes: the prefetch leaves it alone.
            var idsPerOwner: [[Id]?] = []
            idsPerOwner.reserveCapacity(objects.count)
            for object in objects {
                idsPerOwner.append(try object[keyPath: relation].storedIdsForPrefetch(in: t))
            }
            let loaded = try elements.get(Set(idsPerOwner.compactMap { $0 }.joined()).sorted())
            var byId: [Id: Element] = [:]
            byId.reserveCapacity(loaded.count)
            for e in loaded { byId[e.id] = e }
            for (object, ids) in zip(objects, idsPerOwner) {
                if let ids { object[keyPath: relation].prefetched(ids.compactMap { byId[$0] }) }
            }
        }
    }
}
