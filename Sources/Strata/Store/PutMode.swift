/// What `put` may do with an object's id.
///
/// ```swift
/// var imported = Customer(name: "Legacy"); imported.id = 5_000
/// try customers.put(imported, mode: .insert)   // store under an id of your choice
/// ```
public enum PutMode: Sendable {
    /// Id 0 inserts under a new id; a set id updates the stored object and fails with
    /// ``StrataError/objectNotFound(entity:id:)`` if it is not stored. The default.
    case put
    /// Id 0 inserts under a new id; a set id inserts under that id and fails with
    /// ``StrataError/objectExists(entity:id:)`` if it is stored. Later new ids start above it.
    case insert
    /// The object must be stored already.
    case update
}
