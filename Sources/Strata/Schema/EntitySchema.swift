/// What an entity type declares: its name and its stored properties in declaration order.
/// `@Entity` generates it; the store matches it against the schema it persisted.
public struct EntitySchema: Sendable, Equatable {
    /// The name the store knows the entity by.
    public var name: String
    /// Stored properties and relations, `id` excluded, in declaration order.
    public var properties: [PropertySchema]
    /// Backlinks: views over other entities' relations, not stored.
    public var backlinks: [BacklinkSchema]
    /// Whether objects are owned by one parent (`@Entity(embedded: true)`).
    public var isEmbedded: Bool

    public init(name: String, isEmbedded: Bool = false, properties: [PropertySchema], backlinks: [BacklinkSchema] = []) {
        self.name = name
        self.isEmbedded = isEmbedded
        self.properties = properties
        self.backlinks = backlinks
    }
}

/// One stored property of an entity, as declared.
public struct PropertySchema: Sendable, Equatable {
    /// The Swift name.
    public var name: String
    /// How values are stored.
    public var type: PropertyType
    /// Whether the property is an optional (nil is stored as such).
    public var isOptional: Bool
    /// The name the values were stored under before a rename (`@Renamed(from:)`).
    public var renamedFrom: String?
    /// For a relation, the entity name of its target.
    public var target: String?
    /// The secondary index kept for the property (`@Index`, `@Unique`).
    public var index: PropertyIndex
    /// For a composite index (`@Index(with: \Order.date)`): the other properties it orders by,
    /// after this one, by name. Empty for an index of this property alone.
    public var indexWith: [String]
    /// For a relation, what removing its owner does to its targets (`@DeleteRule`).
    public var deleteRule: DeleteRule = .nullify
    /// For a relation, the target's type: removal follows it to the target's own rules.
    var targetType: EntityTypeReference?

    public init(name: String, type: PropertyType, isOptional: Bool, renamedFrom: String? = nil, target: String? = nil,
                index: PropertyIndex = .none, indexWith: [String] = []) {
        self.name = name
        self.type = type
        self.isOptional = isOptional
        self.renamedFrom = renamedFrom
        self.target = target
        self.index = index
        self.indexWith = indexWith
    }

    /// The schema of a to-one relation (generated code calls this); a to-one can lead a
    /// composite index (its target's id, then the other properties).
    public init<Root, T: Entity>(name: String, keyPath: KeyPath<Root, ToOne<T>>, renamedFrom: String? = nil,
                                 index: PropertyIndex = .none, indexWith: [String] = [], deleteRule: DeleteRule = .nullify) {
        self.init(name: name, type: .toOne, isOptional: true, renamedFrom: renamedFrom, target: T._strataEntityName,
                  index: index, indexWith: indexWith)
        self.deleteRule = deleteRule
        targetType = EntityTypeReference(T.self)
    }

    /// The schema of a standalone to-many relation.
    public init<Root, T: Entity>(name: String, keyPath: KeyPath<Root, ToMany<T>>, renamedFrom: String? = nil,
                                 deleteRule: DeleteRule = .nullify) {
        self.init(name: name, type: .toMany, isOptional: false, renamedFrom: renamedFrom, target: T._strataEntityName)
        self.deleteRule = deleteRule
        targetType = EntityTypeReference(T.self)
    }

    /// The schema of a property of a storable type (generated code calls this).
    public init<Root, Value: PersistableValue>(name: String, keyPath: KeyPath<Root, Value>, renamedFrom: String? = nil,
                                               index: PropertyIndex = .none, indexWith: [String] = []) {
        self.init(name: name, type: Value._strataPropertyType, isOptional: Value._strataIsOptional, renamedFrom: renamedFrom,
                  index: index, indexWith: indexWith)
    }

    /// The schema of a property holding a `RawRepresentable` enum, stored as its raw value.
    public init<Root, Value: RawRepresentable>(name: String, keyPath: KeyPath<Root, Value>, renamedFrom: String? = nil,
                                               index: PropertyIndex = .none)
        where Value.RawValue: PersistableValue {
        self.init(name: name, type: Value.RawValue._strataPropertyType, isOptional: false, renamedFrom: renamedFrom, index: index)
    }

    /// The schema of an optional `RawRepresentable` enum property.
    public init<Root, Value: RawRepresentable>(name: String, keyPath: KeyPath<Root, Value?>, renamedFrom: String? = nil,
                                               index: PropertyIndex = .none)
        where Value.RawValue: PersistableValue {
        self.init(name: name, type: Value.RawValue._strataPropertyType, isOptional: true, renamedFrom: renamedFrom, index: index)
    }

    /// The schema of a property holding any other `Codable` value (a struct, an array, a set, a
    /// dictionary), stored as its ``CompactValue``. Its index (`@Index`, `@Unique`) is keyed by
    /// the stored form, so it serves equality and `isIn`, not orderings. Disfavored: the scalars
    /// and enums, Codable too, keep their own types.
    @_disfavoredOverload
    public init<Root, Value: Codable>(name: String, keyPath: KeyPath<Root, Value>, renamedFrom: String? = nil,
                                      index: PropertyIndex = .none, indexWith: [String] = []) {
        self.init(name: name, type: .codable, isOptional: false, renamedFrom: renamedFrom, index: index, indexWith: indexWith)
    }

    /// The schema of an optional `Codable` property.
    @_disfavoredOverload
    public init<Root, Value: Codable>(name: String, keyPath: KeyPath<Root, Value?>, renamedFrom: String? = nil,
                                      index: PropertyIndex = .none, indexWith: [String] = []) {
        self.init(name: name, type: .codable, isOptional: true, renamedFrom: renamedFrom, index: index, indexWith: indexWith)
    }

    /// A type Strata cannot store: a compile-time error naming what it can store (the macro
    /// cannot see whether a type is `Codable`; the type checker can). Never called.
    @available(*, unavailable, message: "Strata cannot store this type: use Bool, an integer, Float, Double, String, Date, Data, [UInt8], UUID, URL, Decimal, a RawRepresentable enum over one of those, any Codable value, or an optional of one; or mark the property @Transient")
    @_disfavoredOverload
    public init<Root, Value>(name: String, keyPath: KeyPath<Root, Value>, renamedFrom: String? = nil,
                             index: PropertyIndex = .none, indexWith: [String] = []) {
        self.init(name: name, type: .codable, isOptional: false, renamedFrom: renamedFrom)
    }

    /// "String?", "Int64" or "ToOne<Customer>": the type as the store sees it, for messages.
    var typeDescription: String {
        if let target { return "\(type)<\(target)>" }
        return isOptional ? "\(type)?" : "\(type)"
    }
}

/// Whether a property has a secondary index, and whether its values must be unique.
public enum PropertyIndex: UInt8, Sendable, Equatable {
    /// No index: conditions on the property scan the entity's objects.
    case none
    /// `@Index`: equality and range conditions read the index.
    case index
    /// `@Unique`: indexed, and a put that would store a value a second time fails.
    case unique
    /// `@Index(caseInsensitive: true)` on a string: the entries hold the value lowercased, so
    /// that case-insensitive `==`, `isEqual(to:caseSensitive: false)` and `startsWith` read the
    /// index (and case-sensitive equality reads it too, then compares each candidate).
    case caseInsensitive
}

/// A backlink: a to-many view of the objects whose relation `sourceProperty` (a `ToOne` or a
/// standalone `ToMany` of entity `source`) points at this object.
public struct BacklinkSchema: Sendable, Equatable {
    /// The Swift name of the backlink property.
    public var name: String
    /// The entity holding the relation.
    public var source: String
    /// The relation's property name in `source`.
    public var sourceProperty: String
    /// What removing this object does to the objects whose relation points at it (`@DeleteRule`).
    public var deleteRule: DeleteRule
    /// The source's type: removal follows it to the source's own rules.
    var sourceType: EntityTypeReference

    /// The schema of a backlink (generated code calls this).
    public init<Root, Source: Entity>(name: String, keyPath: KeyPath<Root, ToMany<Source>>, sourceProperty: String,
                                      deleteRule: DeleteRule = .nullify) {
        self.name = name
        source = Source._strataEntityName
        self.sourceProperty = sourceProperty
        self.deleteRule = deleteRule
        sourceType = EntityTypeReference(Source.self)
    }
}

/// An entity type a schema refers to (a relation's target, a backlink's source), compared by
/// identity: schemas stay `Equatable`.
struct EntityTypeReference: Sendable, Equatable {
    let type: any Entity.Type
    init(_ type: any Entity.Type) { self.type = type }
    static func == (a: Self, b: Self) -> Bool { ObjectIdentifier(a.type) == ObjectIdentifier(b.type) }
}
