/// Makes a final class or a struct storable: generates its `Entity` conformance, schema and codec.
///
/// Every stored property is persisted unless marked `@Transient`; each needs a default value
/// (or the type an `init()`), so that objects stored before a property existed read it as that
/// default. Declaration errors (no `var id: Id`, a `let`, an unsupported type) are compile-time
/// diagnostics.
///
/// In a class, the macro marks each persisted stored property without observers
/// `@exclusivity(unchecked)`: Swift checks every access to a class's stored property for
/// overlapping accesses at run time, and on the path that decodes an object those checks cost
/// a sixth of the read. An overlapping access to such a property on one thread (the property
/// passed `inout` to a function that reads it again) then goes undiagnosed; races between
/// threads never were (the check sees one thread's accesses). Write `@exclusivity(checked)`
/// on a property to keep the check.
///
/// ```swift
/// @Entity
/// struct Note {
///     var id: Id = 0
///     var text = ""
/// }
/// ```
///
/// - Parameters:
///   - name: the name the store knows the entity by; the type name when omitted. Set it to keep a
///     store's data when renaming the Swift type.
///   - embedded: an embedded entity (like Realm's `EmbeddedObject`) is owned by exactly one
///     parent through a `ToOne` or `ToMany`: it is put with its parent, removed with it or when
///     the parent stops referring to it, and cannot be put on its own.
@attached(member, names: named(init))
@attached(memberAttribute)
@attached(extension, conformances: Entity, names: named(_strataSchema), named(_strataEncode), named(_strataDecode),
          named(_strataVisitRelations), named(_strataEntityName), named(_strataId))
public macro Entity(name: String? = nil, embedded: Bool = false) = #externalMacro(module: "StrataMacros", type: "EntityMacro")

/// Keeps a property out of the store: it is neither written nor read, and holds whatever
/// `init()` gives it on objects read from the store.
///
/// ```swift
/// @Transient var cachedTotal = 0
/// ```
@attached(peer)
public macro Transient() = #externalMacro(module: "StrataMacros", type: "PropertyMarkerMacro")

/// Keeps the stored values of a renamed property: the store matches the property by its old
/// name once and remembers the new one.
///
/// ```swift
/// @Renamed(from: "mail") var email: String? = nil
/// ```
@attached(peer)
public macro Renamed(from oldName: String) = #externalMacro(module: "StrataMacros", type: "PropertyMarkerMacro")

/// Keeps a secondary index of the property, so that equality, range and `startsWith` (case
/// sensitive) conditions on it read O(log n + k) index entries instead of scanning every object.
/// Adding it to an existing store builds the index at the type's first ``Store/box(for:)``.
///
/// ```swift
/// @Index var amount = 0.0
/// ```
@attached(peer)
public macro Index() = #externalMacro(module: "StrataMacros", type: "PropertyMarkerMacro")

/// An index of a string property that ignores case: its entries hold the value lowercased, so
/// that `isEqual(to:caseSensitive: false)`, `startsWith(_:caseSensitive: false)`, `==` and `isIn`
/// read O(log n + k) entries instead of scanning (range conditions scan: lowercased order is
/// not the order strings compare in). `caseInsensitive: false` is ``Index()``. On a property
/// that is not a `String` or `String?`, the type's first ``Store/box(for:)`` throws
/// ``StrataError/invalidIndex(entity:property:reason:)``.
///
/// ```swift
/// @Index(caseInsensitive: true) var city = ""
/// let berlin = try shops.query { Shop.city.isEqual(to: "berlin", caseSensitive: false) }.build().find()
/// ```
@attached(peer)
public macro Index(caseInsensitive: Bool) = #externalMacro(module: "StrataMacros", type: "PropertyMarkerMacro")

/// A composite index: entries ordered by this property, then by each of `components` (stored
/// properties of the same entity). A condition that fixes this property with `==` and, in the
/// same `&&`, fixes the next components with `==` and limits the one after them (`==`, a range,
/// `isNil`, `startsWith`) reads one range of entries; a condition on this property alone reads it
/// as a plain index would. The property may be a `ToOne` (its target's id):
///
/// ```swift
/// @Entity final class Order {
///     var id: Id = 0
///     @Index(with: \Order.date) var customer: ToOne<Customer> = nil
///     var date = Date()
/// }
/// // One range of the index: this customer's orders of the last week.
/// let recent = try orders.query { Order.customer == joe && Order.date > weekAgo }.build().find()
/// ```
@attached(peer)
public macro Index<Root>(with components: PartialKeyPath<Root>...) = #externalMacro(module: "StrataMacros", type: "PropertyMarkerMacro")

/// An index whose values are unique: a put that would store a value a second time throws
/// ``StrataError/uniqueViolation(entity:property:value:existing:)`` and writes nothing.
///
/// ```swift
/// @Unique var email = ""
/// ```
@attached(peer)
public macro Unique() = #externalMacro(module: "StrataMacros", type: "PropertyMarkerMacro")

/// Declares a to-many as the reverse view of another entity's relation: of a `ToOne` (1:N) or
/// of a standalone `ToMany` (N:M). Nothing is stored for it; it is read from the other side's
/// edges with one prefix scan.
///
/// ```swift
/// @Entity final class Customer {
///     var id: Id = 0
///     @Backlink(\Order.customer) var orders: ToMany<Order> = nil
/// }
/// ```
@attached(peer)
public macro Backlink<Source, Relation>(_ relation: KeyPath<Source, Relation>) =
    #externalMacro(module: "StrataMacros", type: "PropertyMarkerMacro")

/// Sets what removing an object does to the objects this relation reaches (a `ToOne`, a
/// `ToMany` or a `@Backlink`): ``DeleteRule/nullify`` (the default), ``DeleteRule/cascade`` or
/// ``DeleteRule/deny``. Rules are the types' declarations, not stored: they act in the code
/// that declares them.
///
/// ```swift
/// @Entity final class Teacher {
///     var id: Id = 0
///     @DeleteRule(.deny) @Backlink(\Student.teachers) var students: ToMany<Student> = nil
/// }
/// ```
@attached(peer)
public macro DeleteRule(_ rule: DeleteRule) = #externalMacro(module: "StrataMacros", type: "PropertyMarkerMacro")

/// Declares the query descriptor of the property it is attached to. `@Entity` writes it; it is
/// not meant to be written by hand.
@attached(peer, names: overloaded)
public macro _StrataDescriptor(_ owner: String, _ access: String, _ slots: String...) =
    #externalMacro(module: "StrataMacros", type: "DescriptorMacro")
