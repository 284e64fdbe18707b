import StrataStorage

/// An entity as the store's catalog records it, for tools that read a store without its Swift
/// types (``Store/storedEntities()``).
///
/// ```swift
/// for e in try store.storedEntities() { print(e.name, e.objectCount, e.properties.map(\.name)) }
/// ```
public struct StoredEntity: Sendable, Equatable {
    public var name: String
    /// The store's number for the entity (the first four bytes of its object keys).
    public var id: UInt32
    /// `@Entity(embedded: true)`: objects owned by one parent.
    public var isEmbedded: Bool
    public var objectCount: UInt64
    /// The live properties, in the order the store first saw them (removed ones are left out).
    public var properties: [StoredProperty]
}

/// A property of a ``StoredEntity``.
public struct StoredProperty: Sendable, Equatable {
    public var name: String
    /// The store's number for the property (its field tag in objects, §11.3 of SPEC.md).
    public var id: UInt32
    /// The stored type: `Int64`, `String?`, `ToOne<Customer>`, `ToMany<Teacher>`, …
    public var type: String
    public var index: PropertyIndex
    /// For a relation (`ToOne`/`ToMany`): the target entity's name.
    public var relationTarget: String?
    /// For a relation: how many edges it holds (to-ones set, to-many elements).
    public var edgeCount: Int?
}

extension Store {
    /// Every entity the store holds, with its stored schema, object count and, for relations,
    /// edge counts (one prefix scan per relation). Reads one consistent snapshot.
    public func storedEntities() throws(StrataError) -> [StoredEntity] {
        try checkOpen()
        return try read(consistent: true) { t throws(StrataError) in
            try catalogRecords().sorted { $0.entityId < $1.entityId }.map { r throws(StrataError) in
                var properties: [StoredProperty] = []
                for p in r.properties where !p.isRemoved {
                    var edgeCount: Int?
                    if p.type.isRelation {
                        let kind: EdgeKey.Kind = p.type == .toOne ? .toOneBacklink : .toManyBacklink
                        edgeCount = try t.countEdges(kind: kind, entityId: r.entityId, propertyId: p.id)
                    }
                    properties.append(StoredProperty(name: p.name, id: p.id, type: p.typeDescription, index: p.index,
                                                     relationTarget: p.target, edgeCount: edgeCount))
                }
                return StoredEntity(name: r.name, id: r.entityId, isEmbedded: r.isEmbedded,
                                    objectCount: try t.storedCount(entityId: r.entityId), properties: properties)
            }
        }
    }

}

extension Transaction {
    /// Entries of one relation in one edge kind, as the transaction sees them.
    func countEdges(kind: EdgeKey.Kind, entityId: UInt32, propertyId: UInt32) throws(StrataError) -> Int {
        let prefix = EdgeKey.relationPrefix(kind: kind, entityId: entityId, propertyId: propertyId)
        var n = 0
        do {
            try forEachEntry(in: .edges, from: prefix, to: Engine.prefixSuccessor(prefix)) { _, _ in
                n += 1
                return true
            }
        } catch {
            throw StrataError(error)
        }
        return n
    }
}
