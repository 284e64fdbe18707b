/// The values of one stored property of a query's matching objects, read from the stored bytes
/// without building the objects (ObjectBox's property queries): value lists and aggregates.
/// Objects whose value is nil are left out of every result; ``count()`` counts the others.
///
/// ```swift
/// let q = try orders.query { Order.amount > 100 }.build()
/// let total = try q.property(Order.amount).sum()        // Int64
/// let mean = try q.property(Order.amount).average()     // Double?
/// let largest = try q.property(Order.amount).max()      // Int64?
/// let names = try customers.query().build().property(Customer.name).distinct().findValues()
/// ```
///
/// Values come in the query's order (by id when it has none); `min` and `max` use the value
/// type's own `<`. A property query runs each time it is asked, on one consistent snapshot, or
/// inside a write transaction on its own writes.
public struct PropertyQuery<T: Entity, V: PersistableValue> {
    let query: Query<T>
    let field: Int
    let name: String
    private(set) var isDistinct = false

    init(query: Query<T>, property: PropertySlot, name: String) throws(StrataError) {
        guard case let .field(f) = property, ![.toOne, .toMany].contains(T._strataSchema.properties[f].type) else {
            throw .invalidQuery(reason: "\(name) is not a stored property: a property query reads values, not relations")
        }
        self.query = query
        field = f
        self.name = name
    }

    /// The same query, giving each value once: ``findValues()`` in the order of first
    /// appearance, ``count()`` the number of distinct values, aggregates over distinct values.
    public func distinct() -> PropertyQuery {
        var copy = self
        copy.isDistinct = true
        return copy
    }

    /// The non-nil values, in the query's order.
    public func findValues() throws(StrataError) -> [V] {
        var out: [V] = []
        try forEachValue { out.append($0) }
        return out
    }

    /// How many matching objects have a non-nil value (distinct values after ``distinct()``).
    public func count() throws(StrataError) -> Int {
        var n = 0
        try forEachField { _ in n += 1 }
        return n
    }

    /// Calls `body` with each non-nil stored value in the query's order as the codec stores it
    /// (once per value after ``distinct()``), read in place by the query's matcher: no object
    /// and no `V` is built, which is what makes aggregates cheap. The view is valid during the
    /// call only.
    func forEachField(_ body: (FieldView) throws(StrataError) -> Void) throws(StrataError) {
        if !query.orderings.isEmpty || isDistinct {
            // Order and distinctness need the values themselves: the general path.
            try forEachValue { (v: V) throws(StrataError) in
                switch QueryValue.of(v) {
                case .null: return
                case let .int(x): try body(.int(x))
                case let .uint(x): try body(.uint(x))
                case let .double(x): try body(.double(x))
                case let .bytes(b):
                    do {
                        try b.withUnsafeBytes { try body(.bytes($0)) }
                    } catch let e as StrataError {
                        throw e
                    } catch {
                        throw StrataError(error)
                    }
                }
            }
            return
        }
        let store = query.store
        let field = field
        try store.read(consistent: true) { t in
            let b = try store.binding(for: T.self).get()
            try QueryRun.scan(T.self, condition: query.condition, fieldsNeeded: [field],
                              store: store, binding: b, in: t) { _, m throws(StrataError) in
                let view = m.field(field)
                if !view.isNull { try body(view) }
            }
        }
    }

    /// Calls `body` with each non-nil value in the query's order (once per value after
    /// ``distinct()``).
    func forEachValue(_ body: (V) throws(StrataError) -> Void) throws(StrataError) {
        let store = query.store
        let field = field
        var seen = Set<QueryValue>()
        let distinct = isDistinct
        try store.read(consistent: true) { t in
            let b = try store.binding(for: T.self).get()
            let defaults = try b.defaultObject(T.self)
            let reader = FieldDecoder<V>(binding: b, field: field, defaults: UnsafeRawBufferPointer(defaults.bytes))
            func visit(_ id: Id, _ raw: UnsafeRawBufferPointer) throws(StrataError) {
                guard let (value, key) = try reader.value(in: raw, id: id, entity: b.name, keyed: distinct) else { return }
                if distinct, !seen.insert(key).inserted { return }
                try body(value)
            }
            if !query.orderings.isEmpty {
                let ids = try query.ids(in: t, offset: 0, limit: nil)
                var values: [Id: (V, QueryValue)?] = [:]
                do {
                    try store.box(for: T.self).forEachStored(ids.sorted(), binding: b, in: t) { id, raw in
                        values[id] = try reader.value(in: raw, id: id, entity: b.name, keyed: distinct)
                        return true
                    }
                } catch {
                    throw StrataError(error)
                }
                for id in ids {
                    guard let entry = values[id], let (value, key) = entry else { continue }
                    if distinct, !seen.insert(key).inserted { continue }
                    try body(value)
                }
                return
            }
            // The scan's visitor is stored as an optional, so formally escaping; it never
            // outlives the scan.
            try withoutActuallyEscaping(visit) { visit in
                try QueryRun.scan(T.self, condition: query.condition, fieldsNeeded: [],
                                  store: store, binding: b, in: t, bytes: { id, raw throws(StrataError) in
                    try visit(id, raw)
                    return true
                })
            }
        }
    }
}

extension PropertyQuery where V: Comparable {
    /// The smallest non-nil value, or nil when there is none.
    public func min() throws(StrataError) -> V? {
        var best: V?
        try forEachValue { v in if best.map({ v < $0 }) ?? true { best = v } }
        return best
    }

    /// The largest non-nil value, or nil when there is none.
    public func max() throws(StrataError) -> V? {
        var best: V?
        try forEachValue { v in if best.map({ v > $0 }) ?? true { best = v } }
        return best
    }
}

extension PropertyQuery where V: BinaryInteger {
    /// The sum of the non-nil values; throws ``StrataError/invalidQuery(reason:)`` when it does
    /// not fit in an `Int64` (never a trap).
    public func sum() throws(StrataError) -> Int64 {
        var total: Int64 = 0
        let name = name
        try forEachField { view throws(StrataError) in
            let x: Int64
            switch view {
            case let .int(v): x = v
            case let .uint(v):
                guard let fits = Int64(exactly: v) else { throw .invalidQuery(reason: "a value of \(name) does not fit in Int64 for a sum") }
                x = fits
            default: return
            }
            let (s, overflow) = total.addingReportingOverflow(x)
            guard !overflow else { throw .invalidQuery(reason: "the sum of \(name) overflows Int64") }
            total = s
        }
        return total
    }

    /// The mean of the non-nil values, or nil when there is none.
    public func average() throws(StrataError) -> Double? {
        var total = 0.0, n = 0
        try forEachField { view in
            switch view {
            case let .int(v): total += Double(v)
            case let .uint(v): total += Double(v)
            default: return
            }
            n += 1
        }
        return n == 0 ? nil : total / Double(n)
    }
}

extension PropertyQuery where V: BinaryFloatingPoint {
    /// The sum of the non-nil values.
    public func sum() throws(StrataError) -> Double {
        var total = 0.0
        try forEachField { view in if case let .double(v) = view { total += v } }
        return total
    }

    /// The mean of the non-nil values, or nil when there is none.
    public func average() throws(StrataError) -> Double? {
        var total = 0.0, n = 0
        try forEachField { view in
            guard case let .double(v) = view else { return }
            total += v
            n += 1
        }
        return n == 0 ? nil : total / Double(n)
    }
}

/// Reads one field of stored objects of an entity as `V`, in place: the reader walks the
/// object's fields to the one asked for and decodes only it.
struct FieldDecoder<V: PersistableValue> {
    let binding: EntityBinding
    let field: Int
    /// The value a stored object lacks the field for (a property added later): `init()`'s.
    let defaults: UnsafeRawBufferPointer

    /// The field's value in `raw` (nil when nil), with its comparable form when `keyed`.
    func value(in raw: UnsafeRawBufferPointer, id: Id, entity: String, keyed: Bool) throws(StrataError) -> (V, QueryValue)? {
        do {
            if let found = try read(raw, keyed: keyed) { return found.value }
            return try read(defaults, keyed: keyed)?.value
        } catch let failure as CodecFailure {
            throw .corruptObject(entity: entity, id: id, reason: failure.reason)
        } catch {
            throw StrataError(error)
        }
    }

    /// nil: the bytes lack the field; `.some(nil)`: the field is stored as nil.
    private func read(_ bytes: UnsafeRawBufferPointer, keyed: Bool) throws -> (value: (V, QueryValue)?, Void)? {
        try binding.fieldMap.withUnsafeBufferPointer { map in
            var reader = try ObjectReader(bytes: bytes, fieldMap: map)
            while let f = try reader.nextField() {
                guard f == field else {
                    try reader.skip(reader.wire)
                    continue
                }
                if reader.wire == .null { return (nil, ()) }
                var keyReader = reader
                let value = try V._strataRead(from: &reader)
                let key = keyed ? try FieldView.read(V._strataPropertyType, from: &keyReader).owned : .null
                return ((value, key), ())
            }
            return nil
        }
    }
}
