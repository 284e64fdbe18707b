import StrataStorage

/// The built indexes of one entity, as its persisted record lists them: enough to maintain them
/// from stored bytes alone, without the Swift type (removals and relation clean-up touch
/// entities no box of this session has opened).
final class EntityIndexes: Sendable {
    struct Indexed: Sendable {
        let propertyId: UInt32
        let name: String
        let type: PropertyType
        let isUnique: Bool
        /// A unique index with one entry per value, whose value is the object's id; otherwise
        /// one entry per object, with the id ending the key and an empty value.
        let keyedByValue: Bool
        /// `IndexKey.header` of this property.
        let header: [UInt8]
        /// Encoding of the value of an object stored without the field.
        let defaultValue: [UInt8]
    }

    let entityId: UInt32
    let entityName: String
    let properties: [Indexed]
    /// Stored property id → position in `properties`, or -1.
    private let fieldMap: [Int32]

    /// Nil when the record has no built index.
    init?(_ record: EntityRecord) {
        let indexed = record.properties.filter { !$0.isRemoved && $0.index != .none && !$0.type.isRelation }
        guard !indexed.isEmpty else { return nil }
        entityId = record.entityId
        entityName = record.name
        properties = indexed.map {
            Indexed(propertyId: $0.id, name: $0.name, type: $0.type, isUnique: $0.index == .unique,
                    keyedByValue: $0.index == .unique && $0.uniqueKeyedByValue,
                    header: IndexKey.header(entityId: record.entityId, propertyId: $0.id), defaultValue: $0.indexDefault)
        }
        var map = [Int32](repeating: -1, count: Int(indexed.map(\.id).max() ?? 0) + 1)
        for (i, p) in indexed.enumerated() { map[Int(p.id)] = Int32(i) }
        fieldMap = map
    }

    var hasUnique: Bool { properties.contains { $0.isUnique } }

    func position(ofProperty id: UInt32) -> Int? {
        guard Int(id) < fieldMap.count, fieldMap[Int(id)] >= 0 else { return nil }
        return Int(fieldMap[Int(id)])
    }

    /// The encoded value of each indexed property of a stored object, in `properties` order.
    func values(of bytes: UnsafeRawBufferPointer) throws -> [[UInt8]] {
        var out = properties.map { _ in [UInt8]() }
        var seen = [Bool](repeating: false, count: properties.count)
        try fieldMap.withUnsafeBufferPointer { map in
            var reader = try ObjectReader(bytes: bytes, fieldMap: map)
            while let i = try reader.nextField() {
                IndexKey.encode(try FieldView.read(properties[i].type, from: &reader), into: &out[i])
                seen[i] = true
            }
        }
        for i in properties.indices where !seen[i] { out[i] = properties[i].defaultValue }
        return out
    }

    /// The full index key of `value` (an encoding) for the object `id`.
    func key(_ position: Int, value: [UInt8], id: Id) -> [UInt8] {
        var k = properties[position].header
        k.append(contentsOf: value)
        if !properties[position].keyedByValue { IndexKey.appendBigEndian(id, to: &k) }
        return k
    }

    /// The value stored with the entry of object `id`: the id for an index keyed by value.
    func entryValue(_ position: Int, id: Id) -> [UInt8] {
        guard properties[position].keyedByValue else { return [] }
        var v: [UInt8] = []
        IndexKey.appendBigEndian(id, to: &v)
        return v
    }

    /// Throws when an index key for `value` would exceed the engine's key limit.
    func checkSize(_ position: Int, value: [UInt8]) throws(StrataError) {
        let size = IndexKey.headerBytes + value.count + (properties[position].keyedByValue ? 0 : IndexKey.idBytes)
        guard size <= StorageLimits.maxKeyBytes else {
            throw .indexValueTooLarge(entity: entityName, property: properties[position].name, size: size,
                                      limit: StorageLimits.maxKeyBytes)
        }
    }
}
