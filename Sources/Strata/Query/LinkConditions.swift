// Conditions that follow a relation to another entity: `Order.customer.matches { … }`,
// `Customer.orders.any { … }`. They are conditions like any other, so they combine with `&&`,
// `||` and parentheses, and nest: the condition on the related entity may follow a relation of
// its own (orders → customer → region).

extension Property {
    /// For a `ToOne`: matches objects whose target exists and satisfies `condition`.
    ///
    /// Resolved through the relation's edges (the matching targets, then the objects that point
    /// at them), never by reading every object's target:
    ///
    /// ```swift
    /// // Orders of customers in Europe, or over 1,000 whoever placed them.
    /// let q = try orders.query {
    ///     Order.customer.matches { Customer.region.matches { Region.name == "Europe" } }
    ///         || Order.amount > 1_000
    /// }.build()
    /// ```
    public func matches<R: Entity>(_ condition: () -> QueryCondition<R>) -> QueryCondition<Owner> where Value == ToOne<R> {
        let inner = condition().node
        let field = field, name = name
        let link = QueryLink(entities: inner.linkedEntities.union([R._strataSchema.name])) { source, store, t throws(StrataError) in
            guard let field else { throw .invalidQuery(reason: "\(name) is not a stored relation") }
            let targets = try QueryRun.matchingIds(of: R.self, condition: inner, store: store, in: t)
            return try QueryRun.sources(pointingAt: targets, kind: .toOneBacklink, entityId: source.entityId,
                                        propertyId: source.propertyIds[field], store: store, in: t)
        }
        return QueryCondition(node: .link(link))
    }

    /// For a `ToMany` or a backlink: matches objects with at least one element that satisfies
    /// `condition`.
    ///
    /// ```swift
    /// // Customers with a large order, or with none at all.
    /// let q = try customers.query { Customer.orders.any { Order.amount > 500 } || Customer.orders.count == 0 }.build()
    /// ```
    public func any<R: Entity>(_ condition: () -> QueryCondition<R>) -> QueryCondition<Owner> where Value == ToMany<R> {
        let inner = condition().node
        let slot = slot
        let link = QueryLink(entities: inner.linkedEntities.union([R._strataSchema.name])) { source, store, t throws(StrataError) in
            switch slot {
            case let .field(field):
                // A standalone to-many: the elements that match, then who holds them.
                let targets = try QueryRun.matchingIds(of: R.self, condition: inner, store: store, in: t)
                return try QueryRun.sources(pointingAt: targets, kind: .toManyBacklink, entityId: source.entityId,
                                            propertyId: source.propertyIds[field], store: store, in: t)
            case let .backlink(index):
                // A backlink: the sources (R) that match name their targets (Owner) themselves.
                let schema = Owner._strataSchema.backlinks[index]
                guard let sourceField = R._strataSchema.properties.firstIndex(where: { $0.name == schema.sourceProperty }) else {
                    throw .unknownRelation(entity: schema.source, property: schema.sourceProperty)
                }
                let kind = R._strataSchema.properties[sourceField].type
                var ids: [Id] = []
                try QueryRun.scan(R.self, condition: inner, fieldsNeeded: kind == .toOne ? [sourceField] : [], store: store, in: t) { id, m throws(StrataError) in
                    if kind == .toOne {
                        if case let .uint(target) = m.field(sourceField) { ids.append(target) }
                    } else {
                        ids.append(contentsOf: try m.relatedIds(.field(sourceField), id: id))
                    }
                }
                return SortedIds(ids)
            }
        }
        return QueryCondition(node: .link(link))
    }
}

/// A condition through a relation: which of the outer entity's objects it allows, found anew
/// at each run.
struct QueryLink: Sendable {
    /// The entities the link reads (the related one and those its own links read).
    let entities: Set<String>
    /// The ids of the outer entity's objects the link allows.
    let candidates: @Sendable (EntityBinding, Store, Transaction) throws(StrataError) -> SortedIds

    init(entities: Set<String>,
         _ candidates: @escaping @Sendable (EntityBinding, Store, Transaction) throws(StrataError) -> SortedIds) {
        self.entities = entities
        self.candidates = candidates
    }
}
