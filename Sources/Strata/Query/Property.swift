/// A property of an entity type, for building queries: `@Entity` generates one static
/// descriptor per stored property, relation and backlink, named like the property.
///
/// ```swift
/// let q = try orders.query { Order.amount > 100 && Order.summary.startsWith("order-1") }
///     .ordered(by: Order.amount, .descending)
///     .build()
/// ```
public struct Property<Owner: Entity, Value>: Sendable {
    /// The Swift name of the property.
    public let name: String
    let slot: PropertySlot

    /// A stored property or relation at declared position `field` (generated code calls this;
    /// the key path only fixes `Value`).
    public init(_ keyPath: KeyPath<Owner, Value>, field: Int, name: String) {
        self.name = name
        slot = .field(field)
    }

    /// A backlink at position `backlink` (generated code calls this).
    public init(_ keyPath: KeyPath<Owner, Value>, backlink: Int, name: String) {
        self.name = name
        slot = .backlink(backlink)
    }

    var field: Int? {
        if case let .field(f) = slot { return f }
        return nil
    }
}

/// Where a property lives in its entity.
enum PropertySlot: Sendable, Hashable {
    /// A stored property or relation: its declared position among the stored fields.
    case field(Int)
    /// A backlink: its position among the type's backlinks.
    case backlink(Int)
}
