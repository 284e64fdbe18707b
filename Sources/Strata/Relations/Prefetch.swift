/// Loading the relations of many objects at once, without one read per object (N+1).
extension Box {
    /// Loads the to-one targets of all `objects` in one pass: distinct target ids are read in
    /// increasing order from one consistent snapshot; afterwards `.target` does no store read.
    /// A relation set since it was read and not put yet keeps what was set.
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
        for object in objects { relations.append(object[keyPath: relation]) }
        try ToOne<Target>.prefetch(relations, store: store)
    }

    /// Loads a to-many or backlink of all `objects` at once: the edges of every owner (one
    /// prefix scan each), then every distinct element in one batched read in increasing id
    /// order, all from one consistent snapshot; afterwards iterating the relations does no
    /// store read.
    ///
    /// ```swift
    /// try customers.prefetch(\.orders, for: someCustomers)
    /// ```
    public func prefetch<Element: Entity>(_ relation: KeyPath<T, ToMany<Element>>, for objects: [T]) throws(StrataError) {
        let elements = sibling(for: Element.self)
        try read(consistent: true) { t in
            // nil for a relation with unapplied changes: the prefetch leaves it alone.
            var idsPerOwner: [[Id]?] = []
            idsPerOwner.reserveCapacity(objects.count)
            for object in objects {
                idsPerOwner.append(try object[keyPath: relation].storedIdsForPrefetch(in: t))
            }
            let loaded = try elements.get(Set(idsPerOwner.compactMap { $0 }.joined()).sorted())
            var byId: [Id: Element] = [:]
            byId.reserveCapacity(loaded.count)
            for e in loaded { byId[e._strataId] = e }
            for (object, ids) in zip(objects, idsPerOwner) {
                if let ids { object[keyPath: relation].prefetched(ids.compactMap { byId[$0] }) }
            }
        }
    }
}

extension ToOne {
    /// The second half of a to-one's `Box.prefetch(_:for:)`: reads the distinct stored targets
    /// of `relations` in increasing id order and hands each relation its own. Relations that
    /// hold an assignment not put yet are left alone: the next put stores what the app set (a
    /// new target in particular, which has no id yet). Inlinable like its caller: in
    /// unspecialised code, each use of a relation's target asks the runtime for
    /// `Optional<Target>`'s metadata.
    @inlinable
    static func prefetch(_ relations: [ToOne], store: Store) throws(StrataError) {
        var ids: [Id] = []
        ids.reserveCapacity(relations.count)
        var low = Id.max, high: Id = 0
        for r in relations where !r.isAssigned {
            guard let id = r.targetId else { continue }
            ids.append(id)
            low = Swift.min(low, id)
            high = Swift.max(high, id)
        }
        let box = store.box(for: Target.self)
        if !ids.isEmpty && high - low < UInt64(4 * ids.count) {
            // Ids are dense (they are assigned in increasing order): a table over their span
            // sorts and deduplicates them, then finds each relation's target, without a sort
            // or a hash. `slot[id - low]` is the target's position in `loaded` plus one, 0
            // when none is wanted or stored.
            var slot = [Int](repeating: 0, count: Int(high - low) + 1)
            for id in ids { slot[Int(id - low)] = -1 }
            var distinct: [Id] = []
            for i in slot.indices where slot[i] != 0 {
                distinct.append(low + Id(i))
                slot[i] = 0
            }
            let loaded = try box.get(distinct)
            for (k, t) in loaded.enumerated() where t._strataId >= low && t._strataId <= high { slot[Int(t._strataId - low)] = k + 1 }
            for r in relations where !r.isAssigned {
                let k = r.targetId.map { slot[Int($0 - low)] } ?? 0
                r.prefetched(k > 0 ? loaded[k - 1] : nil, store: store)
            }
            return
        }
        ids.sortRemovingDuplicates()
        // In the order of `ids`, those that are stored.
        let loaded = try box.get(ids)
        let loadedIds = loaded.map { $0._strataId }
        for r in relations where !r.isAssigned {
            var target: Target?
            if let id = r.targetId {
                // The first position whose id is >= `id`, without branches on the data.
                var base = 0, n = loadedIds.count
                while n > 1 {
                    let half = n / 2
                    base = loadedIds[base + half - 1] < id ? base + half : base
                    n -= half
                }
                if n == 1 && loadedIds[base] == id { target = loaded[base] }
            }
            r.prefetched(target, store: store)
        }
    }
}
