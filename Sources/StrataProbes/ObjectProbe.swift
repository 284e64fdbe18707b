import Strata
import StrataStorage

/// The object layer's decoders run on arbitrary bytes: what the `StrataTesting` product's
/// `_ObjectFuzzTarget` calls. Every input must end in a value or a typed error, never a crash.
/// Package-visible only: the decoders are internal.
package enum ObjectProbe {
    /// One live property of every stored type, optional and not, ids 1…
    static let record: EntityRecord = {
        let types = PropertyType.allCases.filter { !$0.isRelation }
        var properties: [EntityRecord.Property] = []
        for (i, type) in types.enumerated() {
            for optional in [false, true] {
                properties.append(EntityRecord.Property(id: UInt32(properties.count + 1), name: "p\(i)\(optional ? "?" : "")", type: type,
                                                        isOptional: optional, isRemoved: false, index: .index, indexDefault: [0]))
            }
        }
        // A to-one leading a composite index over the first Bool, the first String and a Double
        // (the layout that assembles entries from slots), and a case-insensitive string index.
        let string = properties.first { $0.type == .string }!.id, double = properties.first { $0.type == .double }!.id
        properties.append(EntityRecord.Property(id: UInt32(properties.count + 1), name: "link", type: .toOne,
                                                isOptional: false, isRemoved: false, target: "Fuzz", index: .index,
                                                indexDefault: [0], indexWith: [1, string, double]))
        properties.append(EntityRecord.Property(id: UInt32(properties.count + 1), name: "folded", type: .string,
                                                isOptional: false, isRemoved: false, index: .caseInsensitive, indexDefault: [0]))
        return EntityRecord(entityId: 1, name: "Fuzz", lastPropertyId: UInt32(properties.count), properties: properties)
    }()

    /// Built once: per input they cost more than the decoding under test.
    static let decoder = StoredObjectDecoder(record)
    static let indexes = EntityIndexes(record)

    /// An object's bytes, decoded, and its index entries encoded.
    package static func object(_ data: UnsafeRawBufferPointer) {
        _ = try? decoder.decode(data)
        if let indexes, let values = try? indexes.values(of: data) {
            for (i, v) in values.enumerated() { _ = indexes.key(i, value: v, id: 1) }
        }
    }

    /// An entity record parsed; false when what parsed does not encode (in the current version)
    /// to a record that parses back equal.
    package static func entityRecord(_ data: UnsafeRawBufferPointer) -> Bool {
        guard let record = EntityRecord(entityId: 1, bytes: Array(data)) else { return true }
        _ = StoredObjectDecoder(record)
        _ = EntityIndexes(record)
        return EntityRecord(entityId: 1, bytes: record.encoded()) == record
    }
}
