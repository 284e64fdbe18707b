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
/// let tags = try posts.query().build().property(Post.tags).findValues()   // [[String]]
/// ```
///
/// Values come in the query's order (by id when it has none); `min` and `max` use the value
/// type's own `<`. A property query runs each time it is asked, on one consistent snapshot, or
/// inside a write transaction on its own writes. Every stored type has one: scalars, enums
/// (their cases, from the stored raw values) and `Codable` values (arrays, sets, dictionaries,
/// structs), whose ``distinct()`` compares stored forms, so that equal sets are one value.
public struct PropertyQuery<T: Entity, V> {
    let query: Query<T>
    let field: Int
    let name: String
    /// The property as the store keeps it: which comparable form a value has.
    let type: PropertyType
    /// Decodes the reader's current, non-null field as `V`.
    let decode: (inout ObjectReader) throws -> V
    private(set) var isDistinct = false

    init(query: Query<T>, property: PropertySlot, name: String,
         decode: @escaping (inout ObjectReader) throws -> V) throws(StrataError) {
        guard case let .field(f) = property, ![.toOne, .toMany].contains(T._strataSchema.properties[f].type) else {
            throw .invalidQuery(reason: "\(name) is not a stored property: a property query reads values, not relations")
        }
        self.query = query
        field = f
        self.name = name
        type = T._strataSchema.properties[f].type
        self.decode = decode
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
            // Order and distinctness need the values themselves: the general path, which hands
            // over each value's stored form with it.
            try forEachValue(keyed: true) { (_: V, key: QueryValue) throws(StrataError) in
                switch key {
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
        try query.box.read(consistent: true) { t in
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
        try forEachValue(keyed: isDistinct) { (v: V, _: QueryValue) throws(StrataError) in try body(v) }
    }

    /// ``forEachValue(_:)`` with each value's stored form (as conditions compare it) when
    /// `keyed`, or `.null`.
    private func forEachValue(keyed: Bool, _ body: (V, QueryValue) throws(StrataError) -> Void) throws(StrataError) {
        let store = query.store
        let field = field
        var seen = Set<QueryValue>()
        let distinct = isDistinct
        try query.box.read(consistent: true) { t in
            let b = try store.binding(for: T.self).get()
            let defaults = try b.defaultObject(T.self)
            let reader = FieldDecoder<V>(binding: b, field: field, type: type, decode: decode,
                                         defaults: UnsafeRawBufferPointer(defaults.bytes))
            func visit(_ id: Id, _ raw: UnsafeRawBufferPointer) throws(StrataError) {
                guard let (value, key) = try reader.value(in: raw, id: id, entity: b.name, keyed: keyed) else { return }
                if distinct, !seen.insert(key).inserted { return }
                try body(value, key)
            }
            if !query.orderings.isEmpty {
                let ids = try query.ids(in: t, offset: 0, limit: nil)
                var values: [Id: (V, QueryValue)?] = [:]
                do {
                    try t.forEachObject(ids.sorted(), binding: b) { id, raw in
                        values[id] = try reader.value(in: raw, id: id, entity: b.name, keyed: keyed)
                        return true
                    }
                } catch {
                    throw StrataError(error)
                }
                for id in ids {
                    guard let entry = values[id], let (value, key) = entry else { continue }
                    if distinct, !seen.insert(key).inserted { continue }
                    try body(value, key)
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

extension Query {
    /// The values of one stored property of the matching objects, read from the stored bytes
    /// without building objects: aggregates (`sum`, `min`, `max`, `average`, `count`) and value
    /// lists (``PropertyQuery/findValues()``, ``PropertyQuery/distinct()``).
    ///
    /// ```swift
    /// let total = try orders.query { Order.amount > 100 }.build().property(Order.amount).sum()
    /// ```
    public func property<V: PersistableValue>(_ property: Property<T, V>) throws(StrataError) -> PropertyQuery<T, V> {
        try PropertyQuery(query: self, property: property.slot, name: property.name) { try V._strataRead(from: &$0) }
    }

    /// ``property(_:)`` for an optional property: objects whose value is nil are left out.
    public func property<V: PersistableValue>(_ property: Property<T, V?>) throws(StrataError) -> PropertyQuery<T, V> {
        try PropertyQuery(query: self, property: property.slot, name: property.name) { try V._strataRead(from: &$0) }
    }

    /// ``property(_:)`` for an enum stored as its raw value: the cases.
    public func property<V: RawRepresentable>(_ property: Property<T, V>) throws(StrataError) -> PropertyQuery<T, V>
        where V.RawValue: PersistableValue {
        try PropertyQuery(query: self, property: property.slot, name: property.name) { try $0.read() as V }
    }

    /// ``property(_:)`` for an optional enum: objects whose value is nil are left out.
    public func property<V: RawRepresentable>(_ property: Property<T, V?>) throws(StrataError) -> PropertyQuery<T, V>
        where V.RawValue: PersistableValue {
        try PropertyQuery(query: self, property: property.slot, name: property.name) { try $0.read() as V }
    }

    /// ``property(_:)`` for a `Codable` value (an array, a set, a dictionary, a struct):
    /// ```swift
    /// let everyTag = Set(try posts.query().build().property(Post.tags).findValues().joined())
    /// ```
    @_disfavoredOverload
    public func property<V: Codable>(_ property: Property<T, V>) throws(StrataError) -> PropertyQuery<T, V> {
        try PropertyQuery(query: self, property: property.slot, name: property.name) { try $0.read() as V }
    }

    /// ``property(_:)`` for an optional `Codable` value: objects whose value is nil are left out.
    @_disfavoredOverload
    public func property<V: Codable>(_ property: Property<T, V?>) throws(StrataError) -> PropertyQuery<T, V> {
        try PropertyQuery(query: self, property: property.slot, name: property.name) { try $0.read() as V }
    }
}

extension PropertyQuery where V: Comparable {
    /// The smallest non-nil value, or nil when there is none: the first value of
    /// `ordered(by:)` on the property. Strings compare by their UTF-8 bytes (Unicode scalar
    /// order), as orderings and indexes do.
    public func min() throws(StrataError) -> V? {
        var best: V?
        try forEachValue { v in if best.map({ StoredOrder.precedes(v, $0) }) ?? true { best = v } }
        return best
    }

    /// The largest non-nil value, or nil when there is none: the last value of `ordered(by:)`.
    public func max() throws(StrataError) -> V? {
        var best: V?
        try forEachValue { v in if best.map({ StoredOrder.precedes($0, v) }) ?? true { best = v } }
        return best
    }
}

extension PropertyQuery where V: BinaryInteger {
    /// The sum of the non-nil values; throws ``StrataError/invalidQuery(reason:)`` when it does
    /// not fit in an `Int64` (never a trap). The values are added exactly (in 128 bits), so the
    /// answer does not depend on the order they are visited in: `[Int.max, 1, -1]` sums to
    /// `Int.max` in any order.
    public func sum() throws(StrataError) -> Int64 {
        var total = ExactSum()
        try forEachField { view in
            switch view {
            case let .int(v): total.add(v)
            case let .uint(v): total.add(v)
            default: return
            }
        }
        guard let result = total.int64 else { throw .invalidQuery(reason: "the sum of \(name) overflows Int64") }
        return result
    }

    /// The mean of the non-nil values, or nil when there is none (from their exact sum).
    public func average() throws(StrataError) -> Double? {
        var total = ExactSum(), n = 0
        try forEachField { view in
            switch view {
            case let .int(v): total.add(v)
            case let .uint(v): total.add(v)
            default: return
            }
            n += 1
        }
        return n == 0 ? nil : total.double / Double(n)
    }
}

extension PropertyQuery where V: BinaryFloatingPoint {
    /// The sum of the non-nil values.
    public func sum() throws(StrataError) -> Double {
        var total = ExactFloatingSum()
        try forEachField { view in if case let .double(v) = view { total.add(v) } }
        return total.value
    }

    /// The mean of the non-nil values, or nil when there is none.
    public func average() throws(StrataError) -> Double? {
        var total = ExactFloatingSum(), n = 0
        try forEachField { view in
            guard case let .double(v) = view else { return }
            total.add(v)
            n += 1
        }
        return n == 0 ? nil : total.value / Double(n)
    }
}

/// Reads one field of stored objects of an entity as `V`, in place: the reader walks the
/// object's fields to the one asked for and decodes only it.
struct FieldDecoder<V> {
    let binding: EntityBinding
    let field: Int
    /// The property's stored type, for the value's comparable form.
    let type: PropertyType
    let decode: (inout ObjectReader) throws -> V
    /// The value a stored object lacks the field for (a property added later): `init()`'s.
    let defaults: UnsafeRawBufferPointer

    /// The field's value in `raw` (nil when nil), with its comparable form when `keyed`.
    func value(in raw: UnsafeRawBufferPointer, id: Id, entity: String, keyed: Bool) throws(StrataError) -> (V, QueryValue)? {
        try StrataError.decoding(entity: entity, id: id) {
            if let found = try read(raw, keyed: keyed) { return found.value }
            return try read(defaults, keyed: keyed)?.value
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
                let value = try decode(&reader)
                let key = keyed ? try FieldView.read(type, from: &keyReader).owned : .null
                return ((value, key), ())
            }
            return nil
        }
    }
}

/// A sum of 64-bit integers kept exactly in 128 bits (high word, low word): up to 2^63 values
/// never overflow it, so a sum that fits in `Int64` is found whatever the order of the values.
struct ExactSum {
    private var high: Int64 = 0
    private var low: UInt64 = 0

    mutating func add(_ x: Int64) {
        let (l, carry) = low.addingReportingOverflow(UInt64(bitPattern: x))
        low = l
        high &+= (carry ? 1 : 0) &+ (x < 0 ? -1 : 0)
    }

    mutating func add(_ x: UInt64) {
        let (l, carry) = low.addingReportingOverflow(x)
        low = l
        high &+= carry ? 1 : 0
    }

    /// The sum, rounded to a `Double`.
    var double: Double {
        if let exact = int64 { return Double(exact) }
        // Beyond Int64: high · 2^64 + low, with the low word taken as signed so that the two
        // terms do not cancel (a negative sum has high = -1 and a low word near 2^64).
        let signedLow = Int64(bitPattern: low)
        return Double(high &+ (signedLow < 0 ? 1 : 0)) * 18_446_744_073_709_551_616.0 + Double(signedLow)
    }

    /// The sum, when it fits in an `Int64`.
    var int64: Int64? {
        let value = Int64(bitPattern: low)
        return high == (value < 0 ? -1 : 0) ? value : nil
    }
}

/// The order of stored values that orderings, indexes and `min()`/`max()` share: strings by
/// their UTF-8 bytes, every other type by its own `<`.
enum StoredOrder {
    static func precedes<V: Comparable>(_ a: V, _ b: V) -> Bool {
        if let a = a as? String, let b = b as? String { return a.utf8.lexicographicallyPrecedes(b.utf8) }
        return a < b
    }
}

/// A sum of `Double`s kept exactly, as non-overlapping partial sums (Shewchuk's algorithm, as
/// Python's `math.fsum`), and rounded once at the end: the result is the correctly rounded sum,
/// the same in any order of the values. NaN, or infinities of both signs, give NaN.
struct ExactFloatingSum {
    private var partials: [Double] = []
    private var special = 0.0
    private var hasSpecial = false

    mutating func add(_ value: Double) {
        guard value.isFinite else {
            special = hasSpecial ? special + value : value
            hasSpecial = true
            return
        }
        var x = value
        var i = 0
        for j in partials.indices {
            var y = partials[j]
            if abs(x) < abs(y) { swap(&x, &y) }
            let hi = x + y
            let lo = y - (hi - x)
            if lo != 0 {
                partials[i] = lo
                i += 1
            }
            x = hi
        }
        if !x.isFinite {
            // The partial sums overflowed: the sum is that infinity.
            special = hasSpecial ? special + x : x
            hasSpecial = true
            partials.removeAll()
            return
        }
        partials.removeSubrange(i...)
        partials.append(x)
    }

    var value: Double {
        if hasSpecial { return special }
        guard var n = partials.indices.last else { return 0 }
        var hi = partials[n], lo = 0.0
        while n > 0 {
            n -= 1
            let x = hi, y = partials[n]
            hi = x + y
            lo = y - (hi - x)
            if lo != 0 { break }
        }
        // Round half to even across the partials below, as the exact sum would be rounded.
        if n > 0 && ((lo < 0 && partials[n - 1] < 0) || (lo > 0 && partials[n - 1] > 0)) {
            let y = lo * 2, x = hi + y
            if y == x - hi { hi = x }
        }
        return hi
    }
}
