/// The catalog as both graph verifiers read it: entity records by id and by name, and what
/// decodes an entity's objects and index values without its Swift type.
struct VerifierCatalog {
    let records: [UInt32: EntityRecord]
    let recordsByName: [String: EntityRecord]
    let decoders: [UInt32: StoredObjectDecoder]
    let indexes: [UInt32: EntityIndexes]

    init(_ all: [EntityRecord]) {
        records = Dictionary(uniqueKeysWithValues: all.map { ($0.entityId, $0) })
        recordsByName = Dictionary(uniqueKeysWithValues: all.map { ($0.name, $0) })
        decoders = records.mapValues { StoredObjectDecoder($0) }
        indexes = records.compactMapValues { EntityIndexes($0) }
    }

    func name(_ entityId: UInt32) -> String { records[entityId]?.name ?? "entity #\(entityId)" }

    func property(_ entityId: UInt32, _ propertyId: UInt32) -> EntityRecord.Property? {
        records[entityId]?.properties.first { $0.id == propertyId }
    }

    /// The entity id of a relation's target entity.
    func targetEntity(of p: EntityRecord.Property?) -> UInt32? {
        p?.target.flatMap { recordsByName[$0]?.entityId }
    }

    /// Every live relation (declaring entity, property) whose target is `entityId`.
    func relations(targeting entityId: UInt32) -> [(entityId: UInt32, property: EntityRecord.Property)] {
        guard let name = records[entityId]?.name else { return [] }
        return EntityRecord.relations(in: records.values.sorted { $0.entityId < $1.entityId }, targeting: name)
    }

    /// The to-one targets of an object's stored bytes, by property id; nil when they do not decode.
    func toOneTargets(entityId: UInt32, bytes: UnsafeRawBufferPointer) -> [(propertyId: UInt32, target: Id?)]? {
        guard let decoder = decoders[entityId], let values = try? decoder.decode(bytes) else { return nil }
        return decoder.fields.enumerated().compactMap { i, p in
            guard p.type == .toOne, case let .toOne(target) = values[i] else { return nil }
            return (p.id, target)
        }
    }
}
