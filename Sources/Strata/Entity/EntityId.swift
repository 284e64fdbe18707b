/// An id that knows its entity: `EntityId<Order>` is not an `EntityId<Customer>`, so passing an
/// order's id where a customer's is meant does not compile (ObjectBox's `EntityId<T>`). Stored
/// exactly as ``Id``: declaring it changes nothing on disk, and a type can switch between the
/// two at any time.
///
/// A struct declares `var id: EntityId<Self> = 0`; a class names itself (Swift does not allow
/// `Self` in a class's stored property):
///
/// ```swift
/// @Entity final class Customer {
///     var id: EntityId<Customer> = 0
///     var name = ""
/// }
/// let ada: Customer? = try customers.get(order.customer.targetEntityId!)
/// try customers.get(order.id)   // does not compile: an EntityId<Order>
/// ```
public struct EntityId<T: Entity>: Sendable, Hashable, Comparable, ExpressibleByIntegerLiteral,
                                   CustomStringConvertible, Codable {
    /// The id as the store keeps it; 0 means "not stored yet".
    public var rawValue: Id

    public init(_ rawValue: Id) { self.rawValue = rawValue }
    public init(integerLiteral value: Id) { rawValue = value }

    public static func < (a: Self, b: Self) -> Bool { a.rawValue < b.rawValue }
    public var description: String { String(rawValue) }

    /// Encoded as the bare number, as an ``Id`` is.
    public init(from decoder: any Decoder) throws { rawValue = try decoder.singleValueContainer().decode(Id.self) }
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(rawValue)
    }
}
