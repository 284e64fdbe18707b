/// An object's identity within its entity type. 0 means "not stored yet": `put` assigns the next
/// id, in increasing order, never reusing one (also not after removals or a reopen).
public typealias Id = UInt64

/// A type the store can persist. Do not conform by hand: attach `@Entity`, which generates the
/// schema and the codec from the stored properties.
///
/// ```swift
/// @Entity
/// final class Customer {
///     var id: Id = 0
///     var name = ""
///     var email: String? = nil
///     @Transient var scratch = 0   // not stored
/// }
/// ```
///
/// `id` may also be an ``EntityId`` (`var id: EntityId<Customer> = 0`), so that ids of other
/// entities do not compile where this one's are meant.
public protocol Entity: SendableMetatype {
    /// The object's id as the store keeps it (generated over the type's `id`, an ``Id`` or an
    /// ``EntityId``); 0 until it is first put.
    var _strataId: Id { get set }
    /// The name the store knows the entity by (generated).
    static var _strataEntityName: String { get }
    /// The entity's name and stored properties in declaration order (generated).
    static var _strataSchema: EntitySchema { get }
    /// Writes every stored property except `id` (generated).
    func _strataEncode(to writer: inout ObjectWriter)
    /// Makes an object from stored bytes (generated). Properties the bytes lack keep the values
    /// `init()` gives them.
    static func _strataDecode(id: Id, from reader: inout ObjectReader) throws -> Self
    /// Shows every relation (to-one, to-many, backlink) to `visitor` (generated).
    func _strataVisitRelations(_ visitor: inout RelationVisitor) throws
}
