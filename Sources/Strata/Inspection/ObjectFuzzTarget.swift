/// What the fuzzers (`Fuzz/`) and the corpus replay test feed arbitrary bytes to in the object
/// layer. Every input must end in a value or a typed error, never a crash. Underscored: a tool
/// for Strata's own tests, not API.
public enum _ObjectFuzzTarget: String, CaseIterable, Sendable {
    /// An object's bytes, decoded against an entity with one property of every stored type
    /// (every one indexed, so the index encoder runs too, with a composite index led by a
    /// to-one and a case-insensitive one).
    case object
    /// An entity record of the catalog (SPEC.md §11.2).
    case entityRecord

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

    /// Runs one input; false when an invariant broke (what parsed did not encode back to an
    /// equal record), which the fuzzer turns into a crash report.
    /// Built once: per input they cost more than the decoding under test.
    static let decoder = StoredObjectDecoder(record)
    static let indexes = EntityIndexes(record)

    public func run(_ data: UnsafeRawBufferPointer) -> Bool {
        switch self {
        case .object:
            _ = try? Self.decoder.decode(data)
            if let indexes = Self.indexes, let values = try? indexes.values(of: data) {
                for (i, v) in values.enumerated() { _ = indexes.key(i, value: v, id: 1) }
            }
            return true
        case .entityRecord:
            guard let record = EntityRecord(entityId: 1, bytes: Array(data)) else { return true }
            _ = StoredObjectDecoder(record)
            _ = EntityIndexes(record)
            // Whatever parses encodes (in the current version) to a record that parses back equal.
            return EntityRecord(entityId: 1, bytes: record.encoded()) == record
        }
    }
}
