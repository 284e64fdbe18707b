import StrataStorage

/// Every failure of the object layer. Each case names what a person needs to act on: the
/// entity, the property, the id, the limit.
///
/// ```swift
/// do { _ = try customers.put(customer) }
/// catch StrataError.objectNotFound(let entity, let id) { print("\(entity) \(id) was removed") }
/// ```
public enum StrataError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The store was closed.
    case storeClosed
    /// An id of 0 was passed where a stored object's id is needed.
    case invalidId(entity: String)
    /// `put` of an object whose id is set but not stored (use `PutMode.insert` to store an
    /// object under an id of your choice), or `PutMode.update` of an object not stored.
    case objectNotFound(entity: String, id: Id)
    /// `PutMode.insert` of an object whose id is already stored.
    case objectExists(entity: String, id: Id)
    /// A migration step (``MigrationStep``) failed: the store stays at the version before it,
    /// and nothing of the step was written.
    case migrationFailed(version: Int, name: String, reason: String)
    /// The store ran migration steps up to `stored`, past this code's last step `latest`: a
    /// newer version of the app migrated it.
    case schemaVersionTooNew(stored: Int, latest: Int)
    /// A removal refused by a `.deny` delete rule: object `id` of `entity` still has `count`
    /// related objects through `relation` ("Teacher.students") that the removal would not
    /// remove. Nothing was written.
    case deleteDenied(entity: String, id: Id, relation: String, count: Int)
    /// An encoded object is larger than the store takes.
    case objectTooLarge(entity: String, size: Int, limit: Int)
    /// A property kept its name but changed its type since the store last saw the entity. Give
    /// the new property a new name to start it fresh (old values are then dropped).
    case schemaMismatch(entity: String, property: String, stored: String, declared: String)
    /// Two different Swift types claim the same entity name.
    case duplicateEntityName(String)
    /// Stored bytes of an object do not decode.
    case corruptObject(entity: String, id: Id, reason: String)
    /// A relation's stored edges do not read.
    case corruptRelation(reason: String)
    /// A relation or backlink names a property the store does not know as a relation.
    case unknownRelation(entity: String, property: String)
    /// An embedded object or relation target was used in a way the store cannot take.
    case invalidRelation(reason: String)
    /// The store's catalog does not read.
    case corruptCatalog(reason: String)
    /// The store was written by a newer object format than this build reads.
    case unsupportedFormatVersion(found: UInt32, supported: UInt32)
    /// A write on a store opened read-only, or inside `runInReadOnlyTransaction`.
    case readOnly
    /// A put would store `value` in the `@Unique` property `property` a second time: the object
    /// with id `existing` holds it already. Nothing was written.
    case uniqueViolation(entity: String, property: String, value: String, existing: Id)
    /// An indexed value is too large for an index key; index a shorter property instead.
    case indexValueTooLarge(entity: String, property: String, size: Int, limit: Int)
    /// An index the property's type cannot have (a case-insensitive index on a property that
    /// is not a string). Thrown by the type's first `box(for:)`; nothing was written.
    case invalidIndex(entity: String, property: String, reason: String)
    /// A query that cannot run as built: the reason says what to change.
    case invalidQuery(reason: String)
    /// ``Query/findUnique()`` found more than one matching object.
    case notUnique(entity: String)
    /// No entity of this name is stored (inspection by name: ``Store/storedObjects(of:from:limit:_:)``).
    case unknownEntity(String)
    /// The transaction was rolled back because code inside it (a nested transaction) threw.
    case transactionAborted(reason: String)
    /// A box from ``StoreTransaction/box(for:)``, or a query made from one, was used after the
    /// transaction's body returned, or on another thread than the body's.
    case transactionEnded
    /// A value given without the entity's Swift type (``Store/putStoredObjects(_:of:)``) does
    /// not fit the stored schema: an unknown property, a wrong type, a number out of range.
    case invalidValue(entity: String, id: Id, property: String, reason: String)
    /// The storage engine failed: I/O, a lock held by another process, damaged files.
    case storage(StorageError)
    /// The store is encrypted and was opened with another key (``StoreOptions/encryptionKey``).
    /// Nothing was written.
    case wrongEncryptionKey
    /// The store is encrypted and was opened without a key. Nothing was written.
    case encryptionKeyRequired
    /// The store is not encrypted and was opened with a key: refused, so that a store meant
    /// to be encrypted is never written in the clear (``Store/changeEncryptionKey(directoryPath:from:to:options:)``
    /// or `strata encrypt` encrypts it). Nothing was written.
    case storeNotEncrypted

    public var description: String {
        switch self {
        case .storeClosed: "the store is closed"
        case let .invalidId(entity): "id 0 given for \(entity): 0 means \"not stored\""
        case let .objectNotFound(entity, id): "\(entity) with id \(id) is not stored"
        case let .objectExists(entity, id): "\(entity) with id \(id) is already stored"
        case let .migrationFailed(version, name, reason):
            "migration step \(version)\(name.isEmpty ? "" : " (\(name))") failed, the store stays at the version before it: \(reason)"
        case let .schemaVersionTooNew(stored, latest):
            "the store was migrated to version \(stored) by a newer version of the app; this one knows versions up to \(latest)"
        case let .deleteDenied(entity, id, relation, count):
            "\(entity) with id \(id) cannot be removed: \(relation) still reaches \(count) object\(count == 1 ? "" : "s") (its delete rule is .deny)"
        case let .objectTooLarge(entity, size, limit): "\(entity) object of \(size) bytes is over the limit of \(limit)"
        case let .schemaMismatch(entity, property, stored, declared):
            "\(entity).\(property) is declared as \(declared) but stored as \(stored); rename the property to start it fresh"
        case let .duplicateEntityName(name): "two types are declared as entity \"\(name)\""
        case let .corruptObject(entity, id, reason): "\(entity) with id \(id) does not decode: \(reason)"
        case let .corruptCatalog(reason): "the store's catalog is damaged: \(reason)"
        case let .corruptRelation(reason): "relation edges are damaged: \(reason)"
        case let .unknownRelation(entity, property): "\(entity).\(property) is not a relation the store knows"
        case let .invalidRelation(reason): "invalid relation: \(reason)"
        case let .uniqueViolation(entity, property, value, existing):
            "\(entity).\(property) is @Unique and \(value) is already stored (in \(entity) with id \(existing)); nothing was written"
        case let .indexValueTooLarge(entity, property, size, limit):
            "\(entity).\(property) is indexed and a value of \(size) bytes is over the index key limit of \(limit)"
        case let .invalidIndex(entity, property, reason): "\(entity).\(property) cannot have that index: \(reason)"
        case let .invalidQuery(reason): "invalid query: \(reason)"
        case let .invalidValue(entity, id, property, reason): "\(entity) \(id): \(property): \(reason)"
        case let .notUnique(entity): "more than one \(entity) matches a query expected to find at most one"
        case let .unknownEntity(name): "the store holds no entity named \"\(name)\""
        case let .unsupportedFormatVersion(found, supported):
            "the store has object format version \(found); this build reads up to \(supported)"
        case .readOnly: "write refused: the store or transaction is read-only"
        case let .transactionAborted(reason): "transaction rolled back: \(reason)"
        case .transactionEnded: "a box bound to a transaction was used outside its body (after it returned, or on another thread)"
        case let .storage(e): e.description
        case .wrongEncryptionKey: "the store is encrypted with another key"
        case .encryptionKeyRequired: "the store is encrypted: open it with its key (StoreOptions.encryptionKey)"
        case .storeNotEncrypted: "the store is not encrypted, but a key was given"
        }
    }

    /// Maps engine errors into this type; a closed engine is a closed store.
    /// Runs `body`, which reads stored bytes of object `id` of `entity`: a value that does not
    /// decode is that object's damage (``corruptObject(entity:id:reason:)``), any other error is
    /// mapped as ``init(_:)`` maps it. The one mapping of the reads that decode.
    @inline(__always)
    static func decoding<R>(entity: String, id: Id, _ body: () throws -> R) throws(StrataError) -> R {
        do { return try body() } catch let failure as CodecFailure {
            throw .corruptObject(entity: entity, id: id, reason: failure.reason)
        } catch {
            throw StrataError(error)
        }
    }

    init(_ error: any Error) {
        switch error {
        case let e as StrataError: self = e
        case StorageError.closed: self = .storeClosed
        case StorageError.wrongEncryptionKey: self = .wrongEncryptionKey
        case StorageError.encryptionKeyRequired: self = .encryptionKeyRequired
        case StorageError.notEncrypted: self = .storeNotEncrypted
        case let e as StorageError: self = .storage(e)
        default: self = .transactionAborted(reason: "\(error)")
        }
    }
}
