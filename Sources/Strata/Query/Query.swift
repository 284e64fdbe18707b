/// A built query: run it with ``find()``, ``findIds()``, ``count()``, ``findFirst()`` or
/// ``remove()``, as often as needed; `setParameter(_:to:)` changes its values without
/// rebuilding. Each run sees one consistent snapshot, or, inside a write transaction, the
/// transaction's own writes.
///
/// ```swift
/// let q = try orders.query { Order.amount > 100 }.ordered(by: Order.amount, .descending).build()
/// let top = try q.find(offset: 0, limit: 10)
/// try q.setParameter(Order.amount, to: 1_000)
/// let n = try q.count()
/// ```
///
/// Equality, range, `isIn`, `isNil` and case-sensitive `startsWith` conditions on an `@Index`
/// property read the index (O(log n + k)); other conditions scan the entity's objects once,
/// reading only the fields they need; relation conditions (``Property/matches(_:)``,
/// ``Property/any(_:)``, the builder's `link`) narrow the objects through the relation edges first.
/// A ``find()`` that is one equality on a `@Unique` property, outside a transaction, is two
/// point reads (the index entry, then the object, checked to still hold the value).
///
/// A built query keeps its index plan and matcher between runs, so it is used by one thread at
/// a time (it is not `Sendable`); build one per thread to query from several.
public final class Query<T: Entity> {
    @usableFromInline let box: Box<T>
    private(set) var condition: ConditionNode
    let orderings: [QueryOrdering]
    /// Every entity whose changes can change the results (its own, those its links and
    /// orderings read): what an observation of the query watches.
    let readEntities: Set<String>
    /// What stays the same from run to run: the index plan (until a parameter changes) and
    /// the matcher.
    let reuse = QueryRun.Reuse()
    /// The box's store and binding, kept apart from `box`: the query's unspecialised code
    /// (a unique lookup) reads them without asking the runtime for `Box<T>`'s metadata.
    @usableFromInline let store: Store
    private let resolvedBinding: Result<EntityBinding, StrataError>

    init(box: Box<T>, condition: ConditionNode, orderings: [QueryOrdering], readEntities: Set<String>) {
        self.box = box
        store = box.store
        resolvedBinding = box.resolved
        self.readEntities = readEntities
        self.condition = condition
        self.orderings = orderings
    }

    /// The binding of `T`, as ``Box/binding()`` gives it (the store must be open).
    func binding() throws(StrataError) -> EntityBinding {
        try store.checkOpen()
        return try resolvedBinding.get()
    }

    /// The matching objects, in the query's order (by id when it has none).
    public func find() throws(StrataError) -> [T] { try find(offset: 0, limit: nil) }

    /// One page of the matching objects: `limit` of them after skipping `offset`.
    public func find(offset: Int, limit: Int?) throws(StrataError) -> [T] {
        try checkPage(offset: offset, limit: limit)
        if limit == 0 { return [] }
        // One equality on a unique value: at most one match, found by two point reads.
        if offset == 0 {
            var found: [T] = []
            let store = self.store
            if try visitUniqueMatch({ b, id, bytes in found.append(try b.decode(T.self, id: id, from: bytes, store: store)) }) {
                return found
            }
        }
        return try box.read(consistent: true) { t in
            guard orderings.isEmpty else { return try box.get(try ids(in: t, offset: offset, limit: limit)) }
            // Matches come by increasing id, the order asked for: decode each while its bytes
            // are at hand instead of reading it again, and stop at the end of the page.
            var out: [T] = []
            if let limit { out.reserveCapacity(min(limit, 1_024)) }
            var skipped = 0
            let store = self.store
            let b = try store.binding(for: T.self).get()
            try QueryRun.scan(T.self, condition: condition, fieldsNeeded: [],
                              store: store, binding: b, in: t, reuse: reuse, bytes: { id, bytes throws(StrataError) in
                if skipped < offset {
                    skipped += 1
                    return true
                }
                out.append(try b.decode(T.self, id: id, from: bytes, store: store))
                return limit.map { out.count < $0 } ?? true
            })
            return out
        }
    }

    /// The ids of the matching objects, in the query's order.
    public func findIds() throws(StrataError) -> [Id] { try findIds(offset: 0, limit: nil) }

    /// One page of the matching ids.
    public func findIds(offset: Int, limit: Int?) throws(StrataError) -> [Id] {
        try checkPage(offset: offset, limit: limit)
        return try box.read(consistent: true) { t in try ids(in: t, offset: offset, limit: limit) }
    }

    /// The first matching object in the query's order, or nil.
    @inlinable
    public func findFirst() throws(StrataError) -> T? {
        // Inlinable, so that callers specialise it: a lookup on a unique value is two point
        // reads, and unspecialised code would add a runtime metadata lookup for `T?` or `[T]`.
        var found: T?
        let store = self.store
        if try visitUniqueMatch({ b, id, bytes in found = try b.decode(T.self, id: id, from: bytes, store: store) }) {
            return found
        }
        return try find(offset: 0, limit: 1).first
    }

    /// The one matching object, or nil when none matches; throws ``StrataError/notUnique(entity:)``
    /// when more than one does.
    ///
    /// ```swift
    /// let alice = try customers.query { Customer.name == "Alice" }.build().findUnique()
    /// ```
    public func findUnique() throws(StrataError) -> T? {
        let found = try find(offset: 0, limit: 2)
        guard found.count < 2 else { throw .notUnique(entity: T._strataSchema.name) }
        return found.first
    }

    /// Calls `body` with each matching object in the query's order until it returns false,
    /// without keeping the objects: a scan of any size in the memory of one object.
    ///
    /// ```swift
    /// try q.forEach { order in
    ///     total += order.amount
    ///     return total < budget   // false stops the scan
    /// }
    /// ```
    public func forEach(_ body: (T) throws -> Bool) throws(StrataError) {
        try box.read(consistent: true) { t in
            let b = try store.binding(for: T.self).get()
            let store = self.store
            if !orderings.isEmpty {
                for id in try ids(in: t, offset: 0, limit: nil) {
                    guard let object = try box.get(id) else { continue }
                    guard try QueryRun.call(body, object) else { return }
                }
                return
            }
            // The scan's visitor is stored as an optional, so formally escaping; it never
            // outlives the scan.
            try withoutActuallyEscaping(body) { body in
                try QueryRun.scan(T.self, condition: condition, fieldsNeeded: [],
                                  store: store, binding: b, in: t, reuse: reuse, bytes: { id, bytes throws(StrataError) in
                    try QueryRun.call(body, try b.decode(T.self, id: id, from: bytes, store: store))
                })
            }
        }
    }

    /// The number of matching objects.
    public func count() throws(StrataError) -> Int {
        try box.read(consistent: true) { t in try matches(in: t).count }
    }

    /// Removes the matching objects in one transaction (with inverse maintenance: references
    /// to them are cleared, their targets stay) and returns how many there were.
    @discardableResult
    public func remove() throws(StrataError) -> Int {
        try box.write { t in
            let ids = try ids(in: t, offset: 0, limit: nil)
            try box.remove(ids)
            return ids.count
        }
    }

    // MARK: parameters

    /// Replaces the value of the conditions on `property` (`==`, `<`, …, string conditions).
    /// Throws ``StrataError/invalidQuery(reason:)`` when the query has no such condition.
    public func setParameter<V: PersistableValue>(_ property: Property<T, V>, to value: V) throws(StrataError) {
        // Metatype tests, not `as?` casts, which cost as much as the rest of the call.
        if V.self == String.self { return try replace(property, .text(unsafeBitCast(value, to: String.self))) }
        if V.self == String?.self, let s = unsafeBitCast(value, to: String?.self) { return try replace(property, .text(s)) }
        try replace(property, .one(.of(value)))
    }

    /// Replaces the bounds of a `between` condition on `property`.
    public func setParameters<V: PersistableValue>(_ property: Property<T, V>, to lower: V, _ upper: V) throws(StrataError) {
        try replace(property, .two(.of(lower), .of(upper)))
    }

    /// Replaces the values of an `isIn` condition on `property`.
    public func setParameter<V: PersistableValue>(_ property: Property<T, V>, to values: [V]) throws(StrataError) {
        try replace(property, .many(Set(values.map(QueryValue.of))))
    }

    private func replace<V>(_ property: Property<T, V>, _ r: ConditionNode.Replacement) throws(StrataError) {
        guard let field = property.field else { throw .invalidQuery(reason: "\(property.name) is not a stored property") }
        var count = 0
        let replaced = condition.replacing(field: field, with: r, count: &count)
        guard count > 0 else { throw .invalidQuery(reason: "the query has no condition of that kind on \(property.name)") }
        condition = replaced
        reuse.planMade = false
    }

    // MARK: running

    private func checkPage(offset: Int, limit: Int?) throws(StrataError) {
        guard offset >= 0 else { throw .invalidQuery(reason: "offset \(offset) is negative") }
        if let limit, limit < 0 { throw .invalidQuery(reason: "limit \(limit) is negative") }
    }

    func ids(in t: Transaction, offset: Int, limit: Int?) throws(StrataError) -> [Id] {
        var found = try matches(in: t)
        if !orderings.isEmpty { try sort(&found, in: t) }
        let start = min(offset, found.count)
        let end = limit.map { min(found.count, start + $0) } ?? found.count
        return found[start..<end].map { $0.id }
    }

    private struct Match {
        let id: Id
        var keys: [QueryValue]
    }

    private func matches(in t: Transaction) throws(StrataError) -> [Match] {
        let b = try store.binding(for: T.self).get()
        // `build()` let through only orderings by a field or a relation's count.
        let orderFields = orderings.map { o -> Int? in
            if !o.byCount, case let .field(f) = o.slot { return f }
            return nil
        }
        let orderings = orderings
        var out: [Match] = []
        try QueryRun.scan(T.self, condition: condition, fieldsNeeded: Set(orderFields.compactMap { $0 }), store: store,
                          binding: b, in: t, reuse: reuse) { id, m throws(StrataError) in
            var keys: [QueryValue] = []
            keys.reserveCapacity(orderings.count)
            for (i, o) in orderings.enumerated() {
                if let f = orderFields[i] { keys.append(m.field(f).owned) } else { keys.append(.int(Int64(try m.relationCount(o.slot, id: id)))) }
            }
            out.append(Match(id: id, keys: keys))
        }
        return out
    }

    private func sort(_ found: inout [Match], in t: Transaction) throws(StrataError) {
        for (i, o) in orderings.enumerated() {
            guard let related = o.related else { continue }
            // The key holds the target id; replace it by the target's property value.
            var targets = Set<Id>()
            for m in found { if case let .uint(id) = m.keys[i] { targets.insert(id) } }
            let values = try related.values(targets, store, t)
            for j in found.indices {
                if case let .uint(id) = found[j].keys[i] { found[j].keys[i] = values[id] ?? .null }
            }
        }
        let descending = orderings.map { $0.descending }
        found.sort { a, b in
            for i in descending.indices where a.keys[i] != b.keys[i] {
                return descending[i] ? b.keys[i] < a.keys[i] : a.keys[i] < b.keys[i]
            }
            return a.id < b.id
        }
    }
}
