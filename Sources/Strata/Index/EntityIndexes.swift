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
        /// Entries hold the string lowercased (`@Index(caseInsensitive: true)`).
        let caseInsensitive: Bool
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
                    keyedByValue: $0.index == .unique && $0.uniqueKeyedByValue, caseInsensitive: $0.index == .caseInsensitive,
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
        var values = IndexValues()
        try read(bytes, into: &values)
        return properties.indices.map { values.array($0) }
    }

    /// Sets `values` to the encoded value of each indexed property of a stored object: no
    /// allocation once `values` has grown to the entity's size.
    func read(_ bytes: UnsafeRawBufferPointer, into values: inout IndexValues) throws {
        values.reset(count: properties.count)
        try fieldMap.withUnsafeBufferPointer { map in
            var reader = try ObjectReader(bytes: bytes, fieldMap: map)
            while let i = try reader.nextField() {
                let field = try FieldView.read(properties[i].type, from: &reader)
                if properties[i].caseInsensitive, case let .bytes(raw) = field {
                    values.set(i) { IndexKey.encodeFolded(raw, into: &$0) }
                } else {
                    values.set(i) { IndexKey.encode(field, into: &$0) }
                }
            }
        }
        for i in properties.indices where !values.isSet(i) {
            values.set(i) { $0.append(contentsOf: properties[i].defaultValue) }
        }
    }

    /// The full index key of `value` (an encoding) for the object `id`.
    func key(_ position: Int, value: [UInt8], id: Id) -> [UInt8] {
        var k: [UInt8] = []
        value.withUnsafeBytes { setKey(&k, position, value: $0, id: id) }
        return k
    }

    /// Sets `key` to the full index key of `value` for the object `id`, reusing its storage.
    func setKey(_ key: inout [UInt8], _ position: Int, value: UnsafeRawBufferPointer, id: Id) {
        key.removeAll(keepingCapacity: true)
        key.append(contentsOf: properties[position].header)
        key.append(contentsOf: value)
        if !properties[position].keyedByValue { IndexKey.appendBigEndian(id, to: &key) }
    }

    /// The value stored with the entry of object `id`: the id for an index keyed by value.
    func entryValue(_ position: Int, id: Id) -> [UInt8] {
        withEntryValue(position, id: id) { Array($0) }
    }

    /// Calls `body` with the value stored with the entry of object `id`, without allocating.
    @inline(__always)
    func withEntryValue<R>(_ position: Int, id: Id, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        guard properties[position].keyedByValue else { return try body(UnsafeRawBufferPointer(start: nil, count: 0)) }
        return try withUnsafeBytes(of: id.bigEndian) { try body($0) }
    }

    /// Throws when an index key for `value` would exceed the engine's key limit.
    func checkSize(_ position: Int, value: [UInt8]) throws(StrataError) {
        try checkSize(position, valueBytes: value.count)
    }

    func checkSize(_ position: Int, valueBytes: Int) throws(StrataError) {
        let size = IndexKey.headerBytes + valueBytes + (properties[position].keyedByValue ? 0 : IndexKey.idBytes)
        guard size <= StorageLimits.maxKeyBytes else {
            throw .indexValueTooLarge(entity: entityName, property: properties[position].name, size: size,
                                      limit: StorageLimits.maxKeyBytes)
        }
    }
}
