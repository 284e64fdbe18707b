/// What removing an object does to the objects a relation of it reaches (``DeleteRule(_:)``,
/// in the spirit of SwiftData's and Core Data's delete rules). The rule belongs to the relation
/// of the object being removed: a `ToOne` or `ToMany` reaches its targets, a `@Backlink` the
/// objects whose relation points at it.
///
/// ```swift
/// @Entity final class Customer {
///     var id: Id = 0
///     @DeleteRule(.cascade) @Backlink(\Order.customer) var orders: ToMany<Order> = nil
/// }
/// try customers.remove(ada)   // her orders go with her, in the same transaction
/// ```
public enum DeleteRule: UInt8, Sendable, Equatable {
    /// The default: the related objects stay; their references to the removed object are
    /// cleared (a to-one becomes nil, a to-many no longer holds it). Nothing is ever left
    /// pointing at a removed object, whatever the rule.
    case nullify
    /// The related objects are removed too, in the same transaction, and their own rules
    /// apply in turn (transitively; cycles and objects reached twice are removed once).
    case cascade
    /// Removing an object that still has related objects is refused with
    /// ``StrataError/deleteDenied(entity:id:relation:count:)`` and nothing is written; related
    /// objects that the same removal removes (a cascade, the same call) do not count.
    case deny
}
