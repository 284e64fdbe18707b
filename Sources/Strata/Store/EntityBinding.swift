import Synchronization

/// One entity type as this open store knows it: its stored id and the mapping between the
/// type's declared properties and the stored property ids. Made once per type per store.
@usableFromInline
final class EntityBinding: @unchecked Sendable {
    let name: String
    let entityId: UInt32
    /// Declared position → stored property id.
    let propertyIds: [UInt32]
    /// Stored property id → declared position, or -1.
    let fieldMap: [Int32]
    let typeIdentifier: ObjectIdentifier
    /// Whether the type is a class: a put gives the caller's instance its id, which a
    /// rollback takes back.
    let isClass: Bool
    /// Backlinks declared by the type, in declaration order.
    let backlinks: [BacklinkSchema]
    /// Stored ids of the type's to-one properties.
    let toOnePropertyIds: [UInt32]
    /// Whether the type declares any relation or backlink: puts and reads then visit them.
    let hasRelations: Bool
    /// `@Entity(embedded: true)`: put only through a parent.
    let isEmbedded: Bool
    /// The built indexes (what the persisted record lists), or nil.
    let indexes: EntityIndexes?
    /// The last object id assigned. Read and written only by the transaction holding the
    /// store's write lock (hence `@unchecked Sendable`).
    var lastId: Id
    /// The encoding of a fresh object (`init()`'s values), made at the first query on the
    /// type: matchers read a field a stored object lacks from it.
    private let defaultEncoding = Mutex<DefaultEncoding?>(nil)

    init(schema: EntitySchema, entityId: UInt32, propertyIds: [UInt32], typeIdentifier: ObjectIdentifier, isClass: Bool = false,
         lastId: Id, indexes: EntityIndexes? = nil) {
        self.isClass = isClass
        self.indexes = indexes
        name = schema.name
        isEmbedded = schema.isEmbedded
        backlinks = schema.backlinks
        toOnePropertyIds = zip(schema.properties, propertyIds).filter { $0.0.type == .toOne }.map(\.1)
        hasRelations = !schema.backlinks.isEmpty || schema.properties.contains { $0.type.isRelation }
        self.entityId = entityId
        self.propertyIds = propertyIds
        var map = [Int32](repeating: -1, count: Int(propertyIds.max() ?? 0) + 1)
        for (position, id) in propertyIds.enumerated() { map[Int(id)] = Int32(position) }
        fieldMap = map
        self.typeIdentifier = typeIdentifier
        self.lastId = lastId
    }

    /// The encoding of a fresh `T` (made once per binding).
    func defaultObject<T: Entity>(_ type: T.Type) throws(StrataError) -> DefaultEncoding {
        if let made = defaultEncoding.withLock({ $0 }) { return made }
        var encoded: [UInt8] = []
        try encode(try Store.freshObject(T.self, binding: self), into: &encoded)
        let made = DefaultEncoding(encoded)
        return defaultEncoding.withLock { cached in
            if let cached { return cached }
            cached = made
            return made
        }
    }

    /// Encodes `object` into `buffer` (reused between calls). Throws what a `Codable`
    /// property's own `encode(to:)` threw.
    func encode<T: Entity>(_ object: T, into buffer: inout [UInt8]) throws(StrataError) {
        let failure = propertyIds.withUnsafeBufferPointer { ids in
            var writer = ObjectWriter(taking: &buffer, propertyIds: ids)
            object._strataEncode(to: &writer)
            swap(&buffer, &writer.bytes)
            return writer.failure
        }
        if let failure { throw .invalidValue(entity: name, id: object._strataId, property: "", reason: failure) }
    }

    /// Decodes stored bytes; decoding failures name the entity and id.
    @usableFromInline
    func decode<T: Entity>(_ type: T.Type, id: Id, from bytes: UnsafeRawBufferPointer, store: Store) throws(StrataError) -> T {
        store.counters.objectsRead.add(1, ordering: .relaxed)
        do {
            return try fieldMap.withUnsafeBufferPointer { map in
                var reader = hasRelations
                    ? try ObjectReader(bytes: bytes, fieldMap: map, store: store, binding: self, ownerId: id)
                    : try ObjectReader(bytes: bytes, fieldMap: map)
                return try T._strataDecode(id: id, from: &reader)
            }
        } catch let failure as CodecFailure {
            throw .corruptObject(entity: name, id: id, reason: failure.reason)
        } catch {
            throw StrataError(error)
        }
    }
}

