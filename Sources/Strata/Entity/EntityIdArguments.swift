/// Where an ``EntityId`` is taken in place of an ``Id``: a box's reads and removals, a
/// to-one's target, and conditions on a to-one. Each takes only the id of its own entity, so an
/// order's id passed where a customer's is meant does not compile. Disfavored, so that an
/// integer literal (`box.get(1)`) still means an ``Id``.
extension Box {
    /// The object with `id`, or nil.
    ///
    /// ```swift
    /// let ada = try customers.get(order.customer.targetEntityId!)
    /// ```
    @_disfavoredOverload
    public func get(_ id: EntityId<T>) throws(StrataError) -> T? { try get(id.rawValue) }

    /// The stored objects among `ids`, in their order; ids not stored are left out.
    @_disfavoredOverload
    public func get(_ ids: [EntityId<T>]) throws(StrataError) -> [T] { try get(ids.map(\.rawValue)) }

    /// Whether an object with `id` is stored.
    @_disfavoredOverload
    public func contains(_ id: EntityId<T>) throws(StrataError) -> Bool { try contains(id.rawValue) }

    /// Removes the object with `id`; returns whether it was stored.
    @discardableResult @_disfavoredOverload
    public func remove(_ id: EntityId<T>) throws(StrataError) -> Bool { try remove(id.rawValue) }

    /// Removes the objects with `ids` in one transaction; returns how many were stored.
    @discardableResult @_disfavoredOverload
    public func remove(_ ids: [EntityId<T>]) throws(StrataError) -> Int { try remove(ids.map(\.rawValue)) }
}

extension ToOne {
    /// A relation to the stored object with `targetId`.
    ///
    /// ```swift
    /// order.customer = ToOne(targetId: ada.id)   // ada.id: EntityId<Customer>
    /// ```
    @_disfavoredOverload
    public convenience init(targetId: EntityId<Target>?) { self.init(targetId: targetId?.rawValue) }

    /// ``targetId`` as the target entity's ``EntityId``: setting it takes only an id of the
    /// target's entity.
    public var targetEntityId: EntityId<Target>? {
        get { targetId.map { EntityId<Target>($0) } }
        set { targetId = newValue?.rawValue }
    }
}

extension Property {
    /// For a `ToOne`: matches objects whose target has `id`.
    @_disfavoredOverload
    public static func == <T: Entity>(p: Property, id: EntityId<T>) -> QueryCondition<Owner> where Value == ToOne<T> {
        p == id.rawValue
    }
    /// For a `ToOne`: matches objects whose target is not the one with `id`.
    @_disfavoredOverload
    public static func != <T: Entity>(p: Property, id: EntityId<T>) -> QueryCondition<Owner> where Value == ToOne<T> {
        p != id.rawValue
    }
    /// For a `ToOne`: matches objects whose target has one of `ids`.
    @_disfavoredOverload
    public func isIn<T: Entity>(_ ids: [EntityId<T>]) -> QueryCondition<Owner> where Value == ToOne<T> {
        isIn(ids.map(\.rawValue))
    }
}
