import StrataStorage

/// The built indexes of one entity, as its persisted record lists them: enough to maintain them
/// from stored bytes alone, without the Swift type (removals and relation clean-up touch
/// entities no box of this session has opened).
package final class EntityIndexes: Sendable {
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
        /// A composite index's later components (property ids, in order); empty for an index of
        /// one property. An entry's value is the components' encodings one after another (each
        /// encoding ends itself, so the concatenation orders as the tuple does).
        let with: [UInt32]
        /// `IndexKey.header` of this property.
        let header: [UInt8]
        /// Encoding of the value of an object stored without the field.
        let defaultValue: [UInt8]
    }

    let entityId: UInt32
    let entityName: String
    let properties: [Indexed]
    /// Stored property id → position in `properties` of the index it leads, or -1.
    private let fieldMap: [Int32]
    /// How an entity with a composite index reads its values (nil: none has one, and each
    /// field feeds exactly the index it leads).
    private let composite: CompositeLayout?

    /// The fields a composite index reads, by slot: one slot per property some index reads.
    private struct CompositeLayout: Sendable {
        /// Stored property id → slot, or -1.
        let slotMap: [Int32]
        let types: [PropertyType]
        /// Per slot: the slot that holds the field lowercased, for a case-insensitive index of
        /// the property, or -1.
        let foldedSlot: [Int]
        /// Encoding of the value of an object stored without the field.
        let defaults: [[UInt8]]
        /// Per index position: its components' slots, in order.
        let components: [[Int]]
    }

    /// Nil when the record has no built index.
    package init?(_ record: EntityRecord) {
        let indexed = record.properties.filter { !$0.isRemoved && $0.index != .none && (!$0.type.isRelation || !$0.indexWith.isEmpty) }
        guard !indexed.isEmpty else { return nil }
        entityId = record.entityId
        entityName = record.name
        properties = indexed.map {
            Indexed(propertyId: $0.id, name: $0.name, type: $0.type, isUnique: $0.index == .unique,
                    keyedByValue: $0.index == .unique && $0.uniqueKeyedByValue, caseInsensitive: $0.index == .caseInsensitive,
                    with: $0.indexWith, header: IndexKey.header(entityId: record.entityId, propertyId: $0.id), defaultValue: $0.indexDefault)
        }
        var map = [Int32](repeating: -1, count: Int(indexed.map(\.id).max() ?? 0) + 1)
        for (i, p) in indexed.enumerated() { map[Int(p.id)] = Int32(i) }
        fieldMap = map
        composite = indexed.contains { !$0.indexWith.isEmpty } ? Self.layout(indexed, record) : nil
    }

    private static func layout(_ indexed: [EntityRecord.Property], _ record: EntityRecord) -> CompositeLayout {
        var slotOf: [UInt32: Int] = [:]
        var types: [PropertyType] = [], defaults: [[UInt8]] = [], hasDefault: [Bool] = []
        var foldedSlot: [Int] = []
        var components: [[Int]] = []
        func slot(_ id: UInt32) -> Int {
            if let known = slotOf[id] { return known }
            slotOf[id] = types.count
            types.append(record.properties.first { $0.id == id }?.type ?? .uint64)
            defaults.append([IndexKey.Tag.null])
            hasDefault.append(false)
            foldedSlot.append(-1)
            return types.count - 1
        }
        for p in indexed {
            if p.index == .caseInsensitive {
                // A case-insensitive index reads the field lowercased, into a slot of its own.
                let s = slot(p.id)
                let folded = types.count
                types.append(.string)
                defaults.append(p.indexDefault.isEmpty ? [IndexKey.Tag.null] : p.indexDefault)
                hasDefault.append(true)
                foldedSlot.append(-1)
                foldedSlot[s] = folded
                components.append([folded])
                continue
            }
            // The record's default for the index, split into its components' encodings (a
            // missing part, as while the index is being defined, reads as nil).
            let parts = IndexKey.splitEncodings(p.indexDefault)
            var slots: [Int] = []
            for (k, id) in ([p.id] + p.indexWith).enumerated() {
                let s = slot(id)
                if !hasDefault[s], k < parts.count {
                    defaults[s] = parts[k]
                    hasDefault[s] = true
                }
                slots.append(s)
            }
            components.append(slots)
        }
        var map = [Int32](repeating: -1, count: Int(slotOf.keys.max() ?? 0) + 1)
        for (id, s) in slotOf { map[Int(id)] = Int32(s) }
        return CompositeLayout(slotMap: map, types: types, foldedSlot: foldedSlot, defaults: defaults, components: components)
    }

    /// Whether an index reads the field of property `id` (a to-one leading or inside a
    /// composite index: clearing it moves entries).
    func reads(propertyId id: UInt32) -> Bool {
        if position(ofProperty: id) != nil { return true }
        guard let composite, Int(id) < composite.slotMap.count else { return false }
        return composite.slotMap[Int(id)] >= 0
    }

    func position(ofProperty id: UInt32) -> Int? {
        guard Int(id) < fieldMap.count, fieldMap[Int(id)] >= 0 else { return nil }
        return Int(fieldMap[Int(id)])
    }

    /// The encoded value of each indexed property of a stored object, in `properties` order.
    package func values(of bytes: UnsafeRawBufferPointer) throws -> [[UInt8]] {
        var values = IndexValues()
        try read(bytes, into: &values)
        return properties.indices.map { values.array($0) }
    }

    /// Sets `values` to the encoded value of each indexed property of a stored object: no
    /// allocation once `values` has grown to the entity's size.
    func read(_ bytes: UnsafeRawBufferPointer, into values: inout IndexValues) throws {
        if let composite { return try read(bytes, into: &values, composite) }
        values.reset(count: properties.count)
        try fieldMap.withUnsafeBufferPointer { map in
            var reader = try ObjectReader(bytes: bytes, fieldMap: map)
            while let i = try reader.nextField() {
                let field = try FieldView.read(properties[i].type, from: &reader)
                values.set(i) { encode(field, of: i, into: &$0) }
            }
        }
        for i in properties.indices where !values.isSet(i) {
            values.set(i) { $0.append(contentsOf: properties[i].defaultValue) }
        }
    }

    /// Appends the encoding of a stored field as the index at `position` keeps it: strings
    /// lowercased in a case-insensitive index.
    @inline(__always)
    private func encode(_ field: FieldView, of position: Int, into out: inout [UInt8]) {
        if properties[position].caseInsensitive, case let .bytes(raw) = field {
            IndexKey.encodeFolded(raw, into: &out)
        } else {
            IndexKey.encode(field, into: &out)
        }
    }

    /// Whether the stored object's value for index `position` encodes to `value`: the check
    /// that an entry's holder still holds its value. Encodes that one value into `scratch`
    /// (kept by the caller, so that a repeated check allocates nothing).
    func holds(_ bytes: UnsafeRawBufferPointer, position: Int, value: UnsafeRawBufferPointer, scratch: inout [UInt8]) throws -> Bool {
        if composite != nil {
            var values = IndexValues()
            try read(bytes, into: &values)
            return values.withValue(position) { compareBytes($0, value) == 0 }
        }
        scratch.removeAll(keepingCapacity: true)
        var seen = false
        try fieldMap.withUnsafeBufferPointer { map in
            var reader = try ObjectReader(bytes: bytes, fieldMap: map)
            while let i = try reader.nextField() {
                // Other indexed fields are read (to step over them) but not encoded.
                let field = try FieldView.read(properties[i].type, from: &reader)
                guard i == position else { continue }
                seen = true
                encode(field, of: i, into: &scratch)
            }
        }
        if !seen { scratch.append(contentsOf: properties[position].defaultValue) }
        return scratch.withUnsafeBytes { compareBytes($0, value) == 0 }
    }

    /// ``read(_:into:)`` for an entity with a composite index: each field some index reads is
    /// encoded once, then each index's value is assembled from its components.
    private func read(_ bytes: UnsafeRawBufferPointer, into values: inout IndexValues, _ layout: CompositeLayout) throws {
        var parts = layout.defaults
        try layout.slotMap.withUnsafeBufferPointer { map in
            var reader = try ObjectReader(bytes: bytes, fieldMap: map)
            while let s = try reader.nextField() {
                let field = try FieldView.read(layout.types[s], from: &reader)
                parts[s].removeAll(keepingCapacity: true)
                IndexKey.encode(field, into: &parts[s])
                let f = layout.foldedSlot[s]
                if f >= 0 {
                    parts[f].removeAll(keepingCapacity: true)
                    if case let .bytes(raw) = field { IndexKey.encodeFolded(raw, into: &parts[f]) } else { IndexKey.encode(field, into: &parts[f]) }
                }
            }
        }
        values.reset(count: properties.count)
        for i in properties.indices {
            values.set(i) { out in for s in layout.components[i] { out.append(contentsOf: parts[s]) } }
        }
    }

    /// The full index key of `value` (an encoding) for the object `id`.
    package func key(_ position: Int, value: [UInt8], id: Id) -> [UInt8] {
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
