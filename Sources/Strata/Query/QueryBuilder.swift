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
    /// The other entities the query's orderings read: a commit that changes them may change
    /// its results (links name theirs in the condition).
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
        let related = RelatedValues(valid: property.field.map { R._strataSchema.properties[$0].type != .toMany } ?? false) { ids, store, t throws(StrataError) in
            try QueryRun.fieldValues(of: R.self, ids: ids, slot: property.slot, store: store, in: t)
        }
        b.orderings.append(QueryOrdering(slot: relation.slot, related: related, descending: direction == .descending))
        b.relatedEntities.insert(R._strataSchema.name)
        return b
    }

    /// Sorts by the number of elements of a to-many or a backlink (`ordered(by:
    /// Customer.orders.count, .descending)`), read from the relation's edges.
    public func ordered(by count: RelationCount<T>, _ direction: SortDirection = .ascending) -> QueryBuilder {
        var b = self
        b.orderings.append(QueryOrdering(slot: count.slot, related: nil, descending: direction == .descending, byCount: true))
        return b
    }

    /// A to-many or a backlink has no single value to sort by: order by its `count`.
    @available(*, unavailable, message: "order by the relation's count: ordered(by: Owner.relation.count)")
    public func ordered<R: Entity>(by relation: Property<T, ToMany<R>>, _ direction: SortDirection = .ascending) -> QueryBuilder {
        self
    }

    /// Keeps objects whose to-one target matches `condition`: the same as
    /// `&& relation.matches(condition)` (``Property/matches(_:)``), which also combines with `||`
    /// and nests.
    public func link<R: Entity>(_ relation: Property<T, ToOne<R>>, _ condition: () -> QueryCondition<R>) -> QueryBuilder {
        var b = self
        b.condition = .and([b.condition, relation.matches(condition).node])
        return b
    }

    /// Keeps objects with at least one element of a to-many or backlink matching `condition`:
    /// the same as `&& relation.any(condition)` (``Property/any(_:)``). Resolved through the
    /// edge key space, never by scanning the other entity's owners.
    public func link<R: Entity>(_ relation: Property<T, ToMany<R>>, _ condition: () -> QueryCondition<R>) -> QueryBuilder {
        var b = self
        b.condition = .and([b.condition, relation.any(condition).node])
        return b
    }

    /// The query, ready to run any number of times.
    /// Throws ``StrataError/invalidQuery(reason:)`` for an ordering no run could follow (by a
    /// to-many or backlink itself rather than its count).
    public func build() throws(StrataError) -> Query<T> {
        _ = try box.store.binding(for: T.self).get()
        for o in orderings where !o.byCount {
            guard case let .field(f) = o.slot, T._strataSchema.properties[f].type != .toMany, o.related?.valid ?? true else {
                throw .invalidQuery(reason: "a query orders by stored properties, to-one relations and relation counts only")
            }
        }
        return Query(box: box, condition: condition, orderings: orderings,
                     readEntities: relatedEntities.union(condition.linkedEntities).union([T._strataSchema.name]))
    }
}

struct QueryOrdering {
    let slot: PropertySlot
    /// For an ordering by a target's property: that property's values per target id.
    let related: RelatedValues?
    let descending: Bool
    /// Sorts by the number of elements of the to-many or backlink at `slot`.
    var byCount = false
}

struct RelatedValues {
    /// Whether the target's property has one value to sort by (not a to-many).
    let valid: Bool
    let values: (Set<Id>, Store, Transaction) throws(StrataError) -> [Id: QueryValue]
    init(valid: Bool, _ values: @escaping (Set<Id>, Store, Transaction) throws(StrataError) -> [Id: QueryValue]) {
        self.valid = valid
        self.values = values
    }
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
