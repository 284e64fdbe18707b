/// An entity's schema as the store persisted it: the entity's id, and every property it ever
/// had with the id the store gave it. Ids are never reused: a removed property stays listed as
/// removed, so a later property of the same name starts fresh instead of reading old values.
/// Layout in SPEC.md §Catalog.
package struct EntityRecord: Equatable, Sendable {
    package struct Property: Equatable, Sendable {
        package var id: UInt32
        var name: String
        package var type: PropertyType
        var isOptional: Bool
        var isRemoved: Bool
        /// For a relation: the target entity's name.
        var target: String? = nil
        /// The index the store keeps for the property: set once the index is built.
        var index: PropertyIndex = .none
        /// For an indexed property: the index encoding (``IndexKey``) of the value an object
        /// stored without the field reads as, so that the index agrees with queries and can be
        /// maintained without the Swift type at hand.
        var indexDefault: [UInt8] = []
        /// For a unique index: one entry per value, holding the object's id (SPEC.md §13), so
        /// that a lookup or a uniqueness check is one point read. False for unique indexes
        /// built before record version 5 (one entry per object, like `@Index`): the store
        /// rebuilds those at the first writable binding, and reads them as they are until then.
        var uniqueKeyedByValue = false
        /// For a composite index led by this property: the ids of its later components, in
        /// order (SPEC.md §13). Empty for an index of this property alone.
        var indexWith: [UInt32] = []

        /// The memberwise initialiser, package-visible: the fuzz probes build a record too.
        package init(id: UInt32, name: String, type: PropertyType, isOptional: Bool, isRemoved: Bool, target: String? = nil,
                     index: PropertyIndex = .none, indexDefault: [UInt8] = [], uniqueKeyedByValue: Bool = false,
                     indexWith: [UInt32] = []) {
            (self.id, self.name, self.type, self.isOptional, self.isRemoved) = (id, name, type, isOptional, isRemoved)
            (self.target, self.index, self.indexDefault, self.uniqueKeyedByValue, self.indexWith) = (target, index, indexDefault, uniqueKeyedByValue, indexWith)
        }

        var typeDescription: String {
            if let target { return "\(type)<\(target)>" }
            return isOptional ? "\(type)?" : "\(type)"
        }
    }

    /// Most later components a composite index may name.
    static let maxComponents = 8

    var entityId: UInt32
    var name: String
    /// `@Entity(embedded: true)`: objects are owned by one parent and removed with it.
    var isEmbedded = false
    var lastPropertyId: UInt32
    var properties: [Property]

    /// The memberwise initialiser, package-visible: the fuzz probes build a record too.
    package init(entityId: UInt32, name: String, isEmbedded: Bool = false, lastPropertyId: UInt32, properties: [Property]) {
        (self.entityId, self.name, self.isEmbedded, self.lastPropertyId, self.properties) = (entityId, name, isEmbedded, lastPropertyId, properties)
    }

    private enum EntityFlag {
        static let embedded: UInt8 = 1
    }

    private enum Flag {
        static let optional: UInt8 = 1
        static let removed: UInt8 = 2
        static let indexed: UInt8 = 4
        static let unique: UInt8 = 8
        static let keyedByValue: UInt8 = 16
        static let caseInsensitive: UInt8 = 32
        static let composite: UInt8 = 64
        static let all: UInt8 = optional | removed | indexed | unique | keyedByValue | caseInsensitive | composite
    }

    package func encoded() -> [UInt8] {
        var out: [UInt8] = [ObjectFormat.entityRecordVersion, isEmbedded ? EntityFlag.embedded : 0]
        func varint(_ v: UInt64) {
            var v = v
            while v >= 0x80 { out.append(UInt8(truncatingIfNeeded: v) | 0x80); v >>= 7 }
            out.append(UInt8(v))
        }
        func string(_ s: String) {
            varint(UInt64(s.utf8.count))
            out.append(contentsOf: s.utf8)
        }
        string(name)
        varint(UInt64(lastPropertyId))
        varint(UInt64(properties.count))
        for p in properties {
            varint(UInt64(p.id))
            string(p.name)
            out.append(p.type.rawValue)
            let indexFlags = p.index == .none ? 0 : Flag.indexed | (p.index == .unique ? Flag.unique : 0)
                | (p.index == .unique && p.uniqueKeyedByValue ? Flag.keyedByValue : 0)
                | (p.index == .caseInsensitive ? Flag.caseInsensitive : 0)
                | (p.index == .index && !p.indexWith.isEmpty ? Flag.composite : 0)
            out.append((p.isOptional ? Flag.optional : 0) | (p.isRemoved ? Flag.removed : 0) | indexFlags)
            if p.type.isRelation { string(p.target ?? "") }
            if p.index != .none {
                varint(UInt64(p.indexDefault.count))
                out.append(contentsOf: p.indexDefault)
                if p.index == .index && !p.indexWith.isEmpty {
                    varint(UInt64(p.indexWith.count))
                    for id in p.indexWith { varint(UInt64(id)) }
                }
            }
        }
        return out
    }

    /// Parses a stored record; nil when the bytes are not a valid record.
    package init?(entityId: UInt32, bytes: [UInt8]) {
        var pos = 0
        func byte() -> UInt8? {
            guard pos < bytes.count else { return nil }
            defer { pos += 1 }
            return bytes[pos]
        }
        func varint() -> UInt64? {
            var result: UInt64 = 0
            var shift: UInt64 = 0
            while let b = byte() {
                guard shift < 64 else { return nil }
                result |= UInt64(b & 0x7F) << shift
                if b < 0x80 { return result }
                shift += 7
            }
            return nil
        }
        func string() -> String? {
            guard let n = varint(), n <= UInt64(bytes.count - pos) else { return nil }
            let s = String(decoding: bytes[pos..<(pos + Int(n))], as: UTF8.self)
            pos += Int(n)
            return s
        }
        // Version 1 records predate relations, version 2 records entity flags; both still read.
        guard let version = byte(), (1...ObjectFormat.entityRecordVersion).contains(version) else { return nil }
        var entityFlags: UInt8 = 0
        if version >= 3 {
            guard let f = byte(), f & ~EntityFlag.embedded == 0 else { return nil }
            entityFlags = f
        }
        // Every property ever declared stays listed (ids are never reused), so a record lists
        // exactly the ids 1...lastPropertyId. Requiring it bounds the id-indexed field maps the
        // decoders build by the record's size: a crafted last id of 2^28 would cost 1 GiB each.
        guard let name = string(),
              let last = varint(), last <= UInt64(ObjectFormat.maxPropertyId),
              let count = varint(), count == last,
              count <= UInt64(bytes.count - pos) / 4 else { return nil }
        var properties: [Property] = []
        for _ in 0..<count {
            guard let id = varint(), id >= 1, id <= last, let pname = string(),
                  let rawType = byte(), let type = PropertyType(rawValue: rawType),
                  let flags = byte(), flags & ~Flag.all == 0 else { return nil }
            var target: String?
            if type.isRelation {
                guard version >= 2, let t = string(), !t.isEmpty else { return nil }
                target = t
            }
            var property = Property(id: UInt32(id), name: pname, type: type, isOptional: flags & Flag.optional != 0,
                                    isRemoved: flags & Flag.removed != 0, target: target)
            if flags & Flag.indexed != 0 {
                // A to-one is indexed only as the first component of a composite index.
                let composite = flags & Flag.composite != 0
                guard version >= 4, type != .toMany, !type.isRelation || composite,
                      let n = varint(), n <= UInt64(bytes.count - pos) else { return nil }
                property.index = flags & Flag.unique != 0 ? .unique : .index
                property.indexDefault = Array(bytes[pos..<(pos + Int(n))])
                pos += Int(n)
                if flags & Flag.keyedByValue != 0 {
                    guard version >= 5, property.index == .unique else { return nil }
                    property.uniqueKeyedByValue = true
                }
                if flags & Flag.caseInsensitive != 0 {
                    guard version >= 6, property.index == .index, type == .string, !composite else { return nil }
                    property.index = .caseInsensitive
                }
                if composite {
                    guard version >= 6, property.index == .index, let k = varint(), k >= 1, k <= UInt64(Self.maxComponents) else { return nil }
                    for _ in 0..<k {
                        guard let c = varint(), c >= 1, c <= last, c != id else { return nil }
                        property.indexWith.append(UInt32(c))
                    }
                }
            } else if flags & (Flag.unique | Flag.keyedByValue | Flag.caseInsensitive | Flag.composite) != 0 {
                return nil
            }
            properties.append(property)
        }
        guard pos == bytes.count, Set(properties.map(\.id)).count == properties.count else { return nil }
        // Every later component of a composite index is a stored value or to-one of the entity.
        for p in properties {
            for c in p.indexWith {
                guard let component = properties.first(where: { $0.id == c }), component.type != .toMany else { return nil }
            }
        }
        self.init(entityId: entityId, name: name, lastPropertyId: UInt32(last), properties: properties)
        isEmbedded = entityFlags & EntityFlag.embedded != 0
    }

    init(entityId: UInt32, name: String, lastPropertyId: UInt32, properties: [Property]) {
        self.entityId = entityId
        self.name = name
        self.lastPropertyId = lastPropertyId
        self.properties = properties
    }

    /// Matches a declared schema against this record. Returns the record to persist (equal to
    /// `self` when nothing changed) and, per declared property, the stored id it maps to.
    /// Throws when a property keeps its name but changes its type. Index flags are left as
    /// stored: the store builds or drops indexes (``IndexBuilder``) and then records them.
    func reconciled(with schema: EntitySchema) throws(StrataError) -> (record: EntityRecord, ids: [UInt32]) {
        var next = self
        if properties.isEmpty && lastPropertyId == 0 {
            next.isEmbedded = schema.isEmbedded   // a new entity
        } else if isEmbedded != schema.isEmbedded {
            throw .schemaMismatch(entity: schema.name, property: "(entity)", stored: isEmbedded ? "embedded" : "not embedded",
                                  declared: schema.isEmbedded ? "embedded" : "not embedded")
        }
        var ids: [UInt32] = []
        var matched = Set<UInt32>()
        for declared in schema.properties {
            let live = { (name: String) in next.properties.firstIndex { !$0.isRemoved && $0.name == name && !matched.contains($0.id) } }
            if let i = live(declared.name) ?? declared.renamedFrom.flatMap(live) {
                let stored = next.properties[i]
                guard stored.type == declared.type, stored.isOptional == declared.isOptional, stored.target == declared.target else {
                    throw .schemaMismatch(entity: schema.name, property: declared.name,
                                          stored: stored.typeDescription, declared: declared.typeDescription)
                }
                next.properties[i].name = declared.name
                matched.insert(stored.id)
                ids.append(stored.id)
            } else {
                guard next.lastPropertyId < ObjectFormat.maxPropertyId else {
                    throw .schemaMismatch(entity: schema.name, property: declared.name, stored: "none",
                                          declared: "property id limit of \(ObjectFormat.maxPropertyId) reached")
                }
                next.lastPropertyId += 1
                next.properties.append(Property(id: next.lastPropertyId, name: declared.name, type: declared.type,
                                                isOptional: declared.isOptional, isRemoved: false, target: declared.target))
                matched.insert(next.lastPropertyId)
                ids.append(next.lastPropertyId)
            }
        }
        for i in next.properties.indices where !matched.contains(next.properties[i].id) {
            next.properties[i].isRemoved = true
        }
        return (next, ids)
    }
}

extension EntityRecord {
    /// Every live relation property of `records` whose target is the entity named `name`, with
    /// the id of the entity that declares it, in the order of `records`.
    static func relations(in records: some Sequence<EntityRecord>, targeting name: String) -> [(entityId: UInt32, property: Property)] {
        records.flatMap { r in
            r.properties.filter { !$0.isRemoved && $0.type.isRelation && $0.target == name }.map { (r.entityId, $0) }
        }
    }
}

