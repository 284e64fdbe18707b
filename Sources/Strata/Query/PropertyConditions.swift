// Conditions on property descriptors: `Order.amount > 100`, `Order.summary.startsWith("a")`,
// `Order.customer.isNil()`, `Customer.orders.count > 5`.
//
// A nil stored value matches `== nil`, `isNil()` and `!= value`, and no ordering comparison.

extension Property {
    fileprivate func condition(_ node: (Int) -> ConditionNode) -> QueryCondition<Owner> {
        // Descriptors of stored values always name a field; backlinks have no operators here.
        QueryCondition(node: field.map(node) ?? .all)
    }
}

// MARK: stored values

extension Property where Value: PersistableValue & Equatable {
    public static func == (p: Property, v: Value) -> QueryCondition<Owner> { p.condition { .compare(field: $0, .equal, .of(v)) } }
    public static func != (p: Property, v: Value) -> QueryCondition<Owner> { p.condition { .compare(field: $0, .notEqual, .of(v)) } }

    /// Matches objects whose value is one of `values`.
    public func isIn(_ values: [Value]) -> QueryCondition<Owner> { condition { .isIn(field: $0, Set(values.map(QueryValue.of))) } }
}

extension Property where Value: PersistableValue & Comparable {
    public static func < (p: Property, v: Value) -> QueryCondition<Owner> { p.condition { .compare(field: $0, .less, .of(v)) } }
    public static func <= (p: Property, v: Value) -> QueryCondition<Owner> { p.condition { .compare(field: $0, .lessOrEqual, .of(v)) } }
    public static func > (p: Property, v: Value) -> QueryCondition<Owner> { p.condition { .compare(field: $0, .greater, .of(v)) } }
    public static func >= (p: Property, v: Value) -> QueryCondition<Owner> { p.condition { .compare(field: $0, .greaterOrEqual, .of(v)) } }

    /// Matches values in `lower...upper`.
    public func between(_ lower: Value, _ upper: Value) -> QueryCondition<Owner> {
        condition { .between(field: $0, .of(lower), .of(upper)) }
    }
}

/// Optional stored values: compare with the wrapped type, test for nil.
public protocol _OptionalPersistable {
    associatedtype Wrapped: PersistableValue
}
extension Optional: _OptionalPersistable where Wrapped: PersistableValue {}

extension Property where Value: _OptionalPersistable, Value.Wrapped: Comparable {
    public static func < (p: Property, v: Value.Wrapped) -> QueryCondition<Owner> { p.condition { .compare(field: $0, .less, .of(v)) } }
    public static func <= (p: Property, v: Value.Wrapped) -> QueryCondition<Owner> { p.condition { .compare(field: $0, .lessOrEqual, .of(v)) } }
    public static func > (p: Property, v: Value.Wrapped) -> QueryCondition<Owner> { p.condition { .compare(field: $0, .greater, .of(v)) } }
    public static func >= (p: Property, v: Value.Wrapped) -> QueryCondition<Owner> { p.condition { .compare(field: $0, .greaterOrEqual, .of(v)) } }

    /// Matches values in `lower...upper` (never nil).
    public func between(_ lower: Value.Wrapped, _ upper: Value.Wrapped) -> QueryCondition<Owner> {
        condition { .between(field: $0, .of(lower), .of(upper)) }
    }
}

extension Property where Value: _OptionalPersistable {
    /// Matches objects whose value is nil.
    public func isNil() -> QueryCondition<Owner> { condition { .isNil(field: $0, true) } }
    /// Matches objects whose value is not nil.
    public func isNotNil() -> QueryCondition<Owner> { condition { .isNil(field: $0, false) } }
}

// MARK: enums, through their raw values

extension Property where Value: RawRepresentable, Value.RawValue: PersistableValue & Comparable {
    public static func == (p: Property, v: Value) -> QueryCondition<Owner> { p.condition { .compare(field: $0, .equal, .of(v.rawValue)) } }
    public static func != (p: Property, v: Value) -> QueryCondition<Owner> { p.condition { .compare(field: $0, .notEqual, .of(v.rawValue)) } }
    public static func < (p: Property, v: Value) -> QueryCondition<Owner> { p.condition { .compare(field: $0, .less, .of(v.rawValue)) } }
    public static func <= (p: Property, v: Value) -> QueryCondition<Owner> { p.condition { .compare(field: $0, .lessOrEqual, .of(v.rawValue)) } }
    public static func > (p: Property, v: Value) -> QueryCondition<Owner> { p.condition { .compare(field: $0, .greater, .of(v.rawValue)) } }
    public static func >= (p: Property, v: Value) -> QueryCondition<Owner> { p.condition { .compare(field: $0, .greaterOrEqual, .of(v.rawValue)) } }

    /// Matches objects whose value is one of `values`.
    public func isIn(_ values: [Value]) -> QueryCondition<Owner> { condition { .isIn(field: $0, Set(values.map { .of($0.rawValue) })) } }
}

// MARK: strings

/// String properties, optional or not.
public protocol _QueryableString {}
extension String: _QueryableString {}
extension Optional: _QueryableString where Wrapped == String {}

extension Property where Value: _QueryableString {
    /// Matches strings starting with `prefix`.
    public func startsWith(_ prefix: String, caseSensitive: Bool = true) -> QueryCondition<Owner> {
        condition { .string(field: $0, .startsWith, prefix, caseSensitive: caseSensitive) }
    }
    /// Matches strings ending with `suffix`.
    public func endsWith(_ suffix: String, caseSensitive: Bool = true) -> QueryCondition<Owner> {
        condition { .string(field: $0, .endsWith, suffix, caseSensitive: caseSensitive) }
    }
    /// Matches strings containing `part`.
    public func contains(_ part: String, caseSensitive: Bool = true) -> QueryCondition<Owner> {
        condition { .string(field: $0, .contains, part, caseSensitive: caseSensitive) }
    }
    /// Matches strings equal to `string`, optionally ignoring case.
    public func isEqual(to string: String, caseSensitive: Bool = true) -> QueryCondition<Owner> {
        condition { .string(field: $0, .equal, string, caseSensitive: caseSensitive) }
    }
    /// Matches strings not equal to `string`, optionally ignoring case.
    public func isNotEqual(to string: String, caseSensitive: Bool = true) -> QueryCondition<Owner> {
        condition { .string(field: $0, .notEqual, string, caseSensitive: caseSensitive) }
    }
}

// MARK: relations

extension Property {
    /// For a `ToOne`: matches objects with no target.
    public func isNil<T: Entity>() -> QueryCondition<Owner> where Value == ToOne<T> { condition { .isNil(field: $0, true) } }
    /// For a `ToOne`: matches objects with a target.
    public func isNotNil<T: Entity>() -> QueryCondition<Owner> where Value == ToOne<T> { condition { .isNil(field: $0, false) } }

    /// For a `ToOne`: matches objects whose target has one of `ids`.
    public func isIn<T: Entity>(_ ids: [Id]) -> QueryCondition<Owner> where Value == ToOne<T> {
        condition { .isIn(field: $0, Set(ids.map { .uint($0) })) }
    }

    /// For a `ToOne`: matches objects whose target has `id`.
    public static func == <T: Entity>(p: Property, id: Id) -> QueryCondition<Owner> where Value == ToOne<T> {
        p.condition { .compare(field: $0, .equal, id == 0 ? .null : .uint(id)) }
    }
    /// For a `ToOne`: matches objects whose target is not the one with `id`.
    public static func != <T: Entity>(p: Property, id: Id) -> QueryCondition<Owner> where Value == ToOne<T> {
        p.condition { .compare(field: $0, .notEqual, id == 0 ? .null : .uint(id)) }
    }
    /// For a `ToOne`: matches objects whose target is `object` (compared by id).
    public static func == <T: Entity>(p: Property, object: T) -> QueryCondition<Owner> where Value == ToOne<T> {
        p == object._strataId
    }
    /// For a `ToOne`: matches objects whose target is not `object`.
    public static func != <T: Entity>(p: Property, object: T) -> QueryCondition<Owner> where Value == ToOne<T> {
        p != object._strataId
    }
}

// MARK: Codable values

extension Property where Value: Codable & Equatable {
    /// Objects whose `Codable` property equals `v` (compared in stored form, where sets and
    /// dictionaries are sorted: `[1, 2] as Set` equals `[2, 1] as Set`).
    @_disfavoredOverload
    public static func == (p: Property, v: Value) -> QueryCondition<Owner> {
        p.condition { .compare(field: $0, .equal, .bytes(Self.storedBytes(v))) }
    }

    @_disfavoredOverload
    public static func != (p: Property, v: Value) -> QueryCondition<Owner> {
        p.condition { .compare(field: $0, .notEqual, .bytes(Self.storedBytes(v))) }
    }

    static func storedBytes<V: Encodable>(_ v: V) -> [UInt8] {
        // The encoder throws only what a type's own `encode(to:)` throws: such a value matches
        // nothing stored.
        (try? CompactValueEncoder.encode(v).encoded()) ?? []
    }
}

/// Optional `Codable` values, for `isNil()`.
public protocol _OptionalCodable {}
extension Optional: _OptionalCodable where Wrapped: Codable {}

extension Property where Value: _OptionalCodable {
    /// Objects whose optional `Codable` property is nil.
    @_disfavoredOverload
    public func isNil() -> QueryCondition<Owner> { condition { .isNil(field: $0, true) } }
    /// Objects whose optional `Codable` property holds a value.
    @_disfavoredOverload
    public func isNotNil() -> QueryCondition<Owner> { condition { .isNil(field: $0, false) } }
}

extension Property where Value: Codable & Equatable {
    /// Objects whose `Codable` property equals one of `values` (compared in stored form).
    @_disfavoredOverload
    public func isIn(_ values: [Value]) -> QueryCondition<Owner> {
        condition { .isIn(field: $0, Set(values.map { .bytes(Self.storedBytes($0)) })) }
    }
}

extension Property where Value: Collection & Codable, Value.Element: Encodable {
    /// Objects whose array or set property holds `element` (`Post.tags.contains("swift")`).
    public func contains(_ element: Value.Element) -> QueryCondition<Owner> {
        condition { .elements(field: $0, .contains(CompactValueEncoder.storedForm(of: element))) }
    }

    /// The number of elements of an array or set property, to compare (`Post.tags.count >= 2`).
    public var count: ElementCount<Owner> { ElementCount(field: field ?? 0, ofDictionary: false) }
}

/// Optional arrays and sets, for `contains` and `count`.
public protocol _OptionalCodableCollection {
    associatedtype _Element: Encodable
}
extension Optional: _OptionalCodableCollection where Wrapped: Collection & Codable, Wrapped.Element: Encodable {
    public typealias _Element = Wrapped.Element
}

extension Property where Value: _OptionalCodableCollection {
    /// Objects whose optional array or set property holds `element` (never a nil one).
    public func contains(_ element: Value._Element) -> QueryCondition<Owner> {
        condition { .elements(field: $0, .contains(CompactValueEncoder.storedForm(of: element))) }
    }

    /// The number of elements of an optional array or set property, to compare; a nil value
    /// has no count and matches no comparison.
    public var count: ElementCount<Owner> { ElementCount(field: field ?? 0, ofDictionary: false) }
}

/// Dictionaries, optional or not, for `containsKey` and `count`.
public protocol _CodableDictionary {
    associatedtype _Key: Encodable
}
extension Dictionary: _CodableDictionary where Key: Encodable, Value: Codable {
    public typealias _Key = Key
}
extension Optional: _CodableDictionary where Wrapped: _CodableDictionary {
    public typealias _Key = Wrapped._Key
}

extension Property where Value: _CodableDictionary {
    /// Objects whose dictionary property has an entry for `key`
    /// (`Product.attributes.containsKey("color")`); never a nil dictionary.
    public func containsKey(_ key: Value._Key) -> QueryCondition<Owner> {
        condition { .elements(field: $0, .containsKey(ElementCondition.StoredKey(key))) }
    }

    /// The number of entries of a dictionary property, to compare
    /// (`Product.attributes.count > 3`); a nil dictionary matches no comparison.
    public var count: ElementCount<Owner> { ElementCount(field: field ?? 0, ofDictionary: true) }
}

/// The element count of a `Codable` array, set or dictionary property, in a condition.
public struct ElementCount<Owner: Entity>: Sendable {
    let field: Int
    let ofDictionary: Bool

    private func node(_ op: CompareOperator, _ n: Int) -> QueryCondition<Owner> {
        QueryCondition(node: .elements(field: field, ofDictionary ? .entryCount(op, n) : .count(op, n)))
    }

    public static func == (c: ElementCount, n: Int) -> QueryCondition<Owner> { c.node(.equal, n) }
    public static func != (c: ElementCount, n: Int) -> QueryCondition<Owner> { c.node(.notEqual, n) }
    public static func < (c: ElementCount, n: Int) -> QueryCondition<Owner> { c.node(.less, n) }
    public static func <= (c: ElementCount, n: Int) -> QueryCondition<Owner> { c.node(.lessOrEqual, n) }
    public static func > (c: ElementCount, n: Int) -> QueryCondition<Owner> { c.node(.greater, n) }
    public static func >= (c: ElementCount, n: Int) -> QueryCondition<Owner> { c.node(.greaterOrEqual, n) }
}

/// To-many relations and backlinks, for `count`.
public protocol _ToManyRelation {}
extension ToMany: _ToManyRelation {}

extension Property where Value: _ToManyRelation {
    /// For a `ToMany` or backlink: its number of elements, to compare (`Customer.orders.count > 5`).
    public var count: RelationCount<Owner> { RelationCount(slot: slot) }
}

/// The element count of a to-many or backlink, in a condition.
public struct RelationCount<Owner: Entity>: Sendable {
    let slot: PropertySlot

    public static func == (c: RelationCount, n: Int) -> QueryCondition<Owner> { QueryCondition(node: .relationCount(c.slot, .equal, n)) }
    public static func != (c: RelationCount, n: Int) -> QueryCondition<Owner> { QueryCondition(node: .relationCount(c.slot, .notEqual, n)) }
    public static func < (c: RelationCount, n: Int) -> QueryCondition<Owner> { QueryCondition(node: .relationCount(c.slot, .less, n)) }
    public static func <= (c: RelationCount, n: Int) -> QueryCondition<Owner> { QueryCondition(node: .relationCount(c.slot, .lessOrEqual, n)) }
    public static func > (c: RelationCount, n: Int) -> QueryCondition<Owner> { QueryCondition(node: .relationCount(c.slot, .greater, n)) }
    public static func >= (c: RelationCount, n: Int) -> QueryCondition<Owner> { QueryCondition(node: .relationCount(c.slot, .greaterOrEqual, n)) }
}
