/// What an entity type declares: its name and its stored properties in declaration order.
/// `@Entity` generates it; the store matches it against the schema it persisted.
public struct EntitySchema: Sendable, Equatable {
    /// The name the store knows the entity by.
    public var name: String
    /// Stored properties, `id` excluded, in declaration order.
    public var properties: [PropertySchema]

    public init(name: String, properties: [PropertySchema]) {
        self.name = name
        self.properties = properties
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

    public init(name: String, type: PropertyType, isOptional: Bool, renamedFrom: String? = nil) {
        self.name = name
        self.type = type
        self.isOptional = isOptional
        self.renamedFrom = renamedFrom
    }

    /// The schema of a property of a storable type (generated code calls this).
    public init<Root, Value: PersistableValue>(name: String, keyPath: KeyPath<Root, Value>, renamedFrom: String? = nil) {
        self.init(name: name, type: Value._strataPropertyType, isOptional: Value._strataIsOptional, renamedFrom: renamedFrom)
    }

    /// The schema of a property holding a `RawRepresentable` enum, stored as its raw value.
    public init<Root, Value: RawRepresentable>(name: String, keyPath: KeyPath<Root, Value>, renamedFrom: String? = nil)
        where Value.RawValue: PersistableValue {
        self.init(name: name, type: Value.RawValue._strataPropertyType, isOptional: false, renamedFrom: renamedFrom)
    }

    /// The schema of an optional `RawRepresentable` enum property.
    public init<Root, Value: RawRepresentable>(name: String, keyPath: KeyPath<Root, Value?>, renamedFrom: String? = nil)
        where Value.RawValue: PersistableValue {
        self.init(name: name, type: Value.RawValue._strataPropertyType, isOptional: true, renamedFrom: renamedFrom)
    }

    /// "String?" or "Int64": the type as the store sees it, for messages.
    var typeDescription: String { isOptional ? "\(type)?" : "\(type)" }
}
