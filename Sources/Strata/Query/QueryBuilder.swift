/// Sort order of a query.
public enum SortDirection: Sendable {
    case ascending, descending
}

/// Collects a query's condition, ordering and relation links; ``build()`` makes the
/// ``Query``. Get one with ``Box/query(_:)``.
///
/// ```swift
/// let q = try orders.query { Order.amount > 10 }
///     .link(Order.customer) { Customer.name == "Joe" }
///     .ordered(by: Order.customer, Customer.name)
///     .ordered(by: Order.amount, .descending)
///     .build()
/// ```
public struct QueryBuilder<T: Entity> {
    let box: Box<T>
    var condition: ConditionNode
    var orderings: [QueryOrdering] = []
    var links: [QueryLink] = []
    /// The other entities the query reads (through links and orderings): a commit that
    /// changes them may change its results.
    var relatedEntities: Set<String> = []

    /// Sorts by `property` (ties by the next ordering, finally by id). Nil sorts first.
    public func ordered<V>(by property: Property<T, V>, _ direction: SortDirection = .ascending) -> QueryBuilder {
        var b = self
        b.orderings.append(QueryOrdering(slot: property.slot, related: nil, descending: direction == .descending))
        return b
    }

    /// Sorts by a property of each object's to-one target (`ordered(by: Order.customer,
    /// Customer.name)`); objects without a target sort first.
    public func ordered<R: Entity, V>(by relation: Property<T, ToOne<R>>, _ property: Property<R, V>,
                                      _ direction: SortDirection = .ascending) -> QueryBuilder {
        var b = self
        let related = RelatedValues { ids, store, t throws(StrataError) in
            try QueryRun.fieldValues(of: R.self, ids: ids, slot: property.slot, store: store, in: t)
        }
        b.orderings.append(QueryOrdering(slot: relation.slot, related: related, descending: direction == .descending))
        b.relatedEntities.insert(R._strataSchema.name)
        return b
    }

    /// Keeps objects whose to-one target matches `condition`. Resolved through the edge key
    /// space: the targets that match, then their backlink edges.
    public func link<R: Entity>(_ relation: Property<T, ToOne<R>>, _ condition: () -> QueryCondition<R>) -> QueryBuilder {
        var b = self
        let inner = condition().node
        let field = relation.field
        b.relatedEntities.insert(R._strataSchema.name)
        b.links.append(QueryLink { source, store, t throws(StrataError) in
            guard let field else { throw .invalidQuery(reason: "\(relation.name) is not a stored relation") }
            let targets = try QueryRun.matchingIds(of: R.self, condition: inner, store: store, in: t)
            return try QueryRun.sources(pointingAt: targets, kind: .toOneBacklink, entityId: source.entityId,
                                        propertyId: source.propertyIds[field], store: store, in: t)
        })
        return b
    }

    /// Keeps objects with at least one element of a to-many or backlink matching `condition`.
    /// Resolved through the edge key space, never by scanning the other entity's owners.
    public func link<R: Entity>(_ relation: Property<T, ToMany<R>>, _ condition: () -> QueryCondition<R>) -> QueryBuilder {
        var b = self
        let inner = condition().node
        let slot = relation.slot
        b.relatedEntities.insert(R._strataSchema.name)
        b.links.append(QueryLink { source, store, t throws(StrataError) in
            switch slot {
            case let .field(field):
                // Standalone to-many: targets that match, then who holds them.
                let targets = try QueryRun.matchingIds(of: R.self, condition: inner, store: store, in: t)
                return try QueryRun.sources(pointingAt: targets, kind: .toManyBacklink, entityId: source.entityId,
                                            propertyId: source.propertyIds[field], store: store, in: t)
            case let .backlink(index):
                // A backlink: the sources (R) that match name their targets (T) themselves.
                let schema = T._strataSchema.backlinks[index]
                guard let sourceField = R._strataSchema.properties.firstIndex(where: { $0.name == schema.sourceProperty }) else {
                    throw .unknownRelation(entity: schema.source, property: schema.sourceProperty)
                }
                let kind = R._strataSchema.properties[sourceField].type
                var ids = Set<Id>()
                try QueryRun.scan(R.self, condition: inner, fieldsNeeded: kind == .toOne ? [sourceField] : [], store: store, in: t) { id, m throws(StrataError) in
                    if kind == .toOne {
                        if case let .uint(target) = m.field(sourceField) { ids.insert(target) }
                    } else {
                        ids.formUnion(try m.relatedIds(.field(sourceField), id: id))
                    }
                }
                return ids
            }
        })
        return b
    }

    /// The query, ready to run any number of times.
    public func build() throws(StrataError) -> Query<T> {
        _ = try box.store.binding(for: T.self).get()
        return Query(box: box, condition: condition, orderings: orderings, links: links,
                     readEntities: relatedEntities.union([T._strataSchema.name]))
    }
}

struct QueryOrdering {
    let slot: PropertySlot
    /// For an ordering by a target's property: that property's values per target id.
    let related: RelatedValues?
    let descending: Bool
}

struct RelatedValues {
    let values: (Set<Id>, Store, Transaction?) throws(StrataError) -> [Id: QueryValue]
    init(_ values: @escaping (Set<Id>, Store, Transaction?) throws(StrataError) -> [Id: QueryValue]) { self.values = values }
}

struct QueryLink {
    /// The ids of the outer entity's objects the link allows.
    let candidates: (EntityBinding, Store, Transaction?) throws(StrataError) -> Set<Id>
    init(_ candidates: @escaping (EntityBinding, Store, Transaction?) throws(StrataError) -> Set<Id>) { self.candidates = candidates }
}

extension Box {
    /// Starts a query over this box's objects that satisfy `condition`.
    ///
    /// ```swift
    /// let big = try orders.query { Order.amount > 100 }.ordered(by: Order.amount).build().find()
    /// ```
    public func query(_ condition: () -> QueryCondition<T>) -> QueryBuilder<T> {
        QueryBuilder(box: self, condition: condition().node)
    }

    /// Starts a query over all of this box's objects (add links, orderings).
    public func query() -> QueryBuilder<T> {
        QueryBuilder(box: self, condition: .all)
    }
}
