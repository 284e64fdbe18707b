import Foundation
import StrataStorage

extension Store {
    /// Puts objects of the entity named `entity` without its Swift type, with the ids they
    /// carry (what ``storedObjects(of:from:limit:_:)`` and `strata dump` give): a new id is
    /// inserted, a stored one replaced. All of them in one transaction (or in the current one);
    /// if one fails, none is put.
    ///
    /// The entity must be in the store's catalog (opened once by the app), so its schema is
    /// checked: every value names a live property and fits its type, or the put throws
    /// ``StrataError/invalidValue(entity:id:property:reason:)``. Integers (`.int`, `.uint`) fit
    /// any integer property whose range holds them; `.double` fits `Float` and `Double`; `.null`
    /// fits an optional or a relation. A property left out is stored absent (it reads as the
    /// type's default); a `ToMany` left out keeps the targets it has. Relations keep every
    /// rule a typed put keeps: a target must be stored (else
    /// ``StrataError/objectNotFound(entity:id:)``), edges both ways, indexes and `@Unique`
    /// maintained, the id counter moved past the largest id put.
    ///
    /// ```swift
    /// try store.putStoredObjects([StoredObject(id: 7, values: [("name", .string("Ada"))])], of: "Customer")
    /// ```
    @discardableResult
    public func putStoredObjects(_ objects: [StoredObject], of entity: String) throws(StrataError) -> Int {
        try checkOpen()
        guard !isReadOnly else { throw .readOnly }
        guard let record = record(named: entity) else { throw .unknownEntity(entity) }
        var detached: EntityBinding?
        let count = try write { t throws(StrataError) -> Int in
            var loader = StoredObjectLoader(store: self, record: record, transaction: t)
            for object in objects { try loader.put(object) }
            detached = loader.detachedCounter
            return objects.count
        }
        // A later typed binding of this session starts from the ids put here.
        if let detached { catalog.withLock { $0.lastIds[record.entityId] = max($0.lastIds[record.entityId] ?? 0, detached.lastId) } }
        return count
    }
}

extension Store {
    /// Checks that ``putStoredObjects(_:of:)`` would accept `objects`, and writes nothing: every
    /// value against its property's type and range, every relation's target stored (or among
    /// `objects`), unique values free. The same put runs in a transaction that is then rolled
    /// back, so its verdict is the put's own. What `strata load` runs over a whole file before
    /// its first write.
    ///
    /// ```swift
    /// try store.checkStoredObjects(lines, of: "Customer")   // throws what the put would throw
    /// ```
    public func checkStoredObjects(_ objects: [StoredObject], of entity: String) throws(StrataError) {
        // The store's open state is checked by `withWriteTransaction` below.
        guard !isReadOnly else { throw .readOnly }
        guard let record = record(named: entity) else { throw .unknownEntity(entity) }
        do {
            // `withWriteTransaction` hands the body's own error back (after the rollback), so the
            // marker of a put that succeeded is told apart by its type.
            try withWriteTransaction { t throws -> Void in
                var loader = StoredObjectLoader(store: self, record: record, transaction: t)
                for object in objects { try loader.put(object) }
                // Accepted: taken back with everything it wrote (the id counter it moved in
                // memory is never written, or moves past ids only a later put takes).
                throw CheckedAndRolledBack()
            }
        } catch is CheckedAndRolledBack {
            return
        } catch {
            throw StrataError(error)
        }
    }
}

/// Ends ``Store/checkStoredObjects(_:of:)``'s transaction after a put that succeeded.
private struct CheckedAndRolledBack: Error {}

/// The put of objects given as ``StoredObject`` values: what ``PutOperation`` does for a typed
/// object, driven by the catalog record instead of generated code. The relation rules are the
/// typed put's own (``EdgeMaintenance``); only the encoding from stored values is here.
struct StoredObjectLoader {
    let store: Store
    let record: EntityRecord
    let transaction: Transaction
    /// Stored (non-to-many) live properties, in the order their values are encoded.
    private let fields: [EntityRecord.Property]
    private let propertyIds: [UInt32]
    private let toOneIds: [UInt32]
    private let toManys: [EntityRecord.Property]
    private let indexes: EntityIndexes?
    /// The id counter the transaction advances: the session's binding of the entity, or one
    /// made for this load when the session has none (``detachedCounter``).
    private let counter: EntityBinding
    private(set) var detachedCounter: EntityBinding?

    init(store: Store, record: EntityRecord, transaction: Transaction) {
        self.store = store
        self.record = record
        self.transaction = transaction
        fields = record.properties.filter { !$0.isRemoved && $0.type != .toMany }
        propertyIds = fields.map(\.id)
        toOneIds = fields.filter { $0.type == .toOne }.map(\.id)
        toManys = record.properties.filter { !$0.isRemoved && $0.type == .toMany }
        indexes = store.indexes(entityId: record.entityId)
        let (bound, lastId): (EntityBinding?, Id) = store.catalog.withLock { c in
            let b = c.boundNames[record.name].flatMap { c.bindings[$0] }.flatMap { try? $0.get() }
            return (b, c.lastIds[record.entityId] ?? 0)
        }
        if let bound {
            counter = bound
        } else {
            let schema = EntitySchema(name: record.name, isEmbedded: record.isEmbedded, properties: [])
            let made = EntityBinding(schema: schema, entityId: record.entityId, propertyIds: [],
                                     typeIdentifier: ObjectIdentifier(StoredObject.self), lastId: lastId)
            counter = made
            detachedCounter = made
        }
    }

    private func invalid(_ id: Id, _ property: String, _ reason: String) -> StrataError {
        .invalidValue(entity: record.name, id: id, property: property, reason: reason)
    }

    mutating func put(_ object: StoredObject) throws(StrataError) {
        let id = object.id, t = transaction
        guard id != 0 else { throw .invalidId(entity: record.name) }
        guard let overlay = t.overlay else { throw .readOnly }
        var given: [String: StoredValue] = [:]
        for (name, value) in object.values {
            guard record.properties.contains(where: { !$0.isRemoved && $0.name == name }) else {
                throw invalid(id, name, "\(record.name) has no such property")
            }
            guard given.updateValue(value, forKey: name) == nil else { throw invalid(id, name, "given twice") }
        }

        // The bytes, and the to-one targets they name.
        var bytes: [UInt8] = []
        var toOneTargets: [UInt32: Id] = [:]
        try propertyIds.withUnsafeBufferPointer { ids throws(StrataError) in
            var writer = ObjectWriter(taking: &bytes, propertyIds: ids)
            for (i, p) in fields.enumerated() {
                guard let value = given[p.name] else { continue }
                if p.type == .toOne {
                    let target: Id
                    switch value {
                    case .null, .toOne(nil): target = 0
                    case let .toOne(x?), let .uint(x): target = x
                    case let .int(x) where x > 0: target = Id(x)
                    default: throw invalid(id, p.name, "\(value) is not an id of \(p.target ?? "an object")")
                    }
                    toOneTargets[p.id] = target
                    if target == 0 { writer.appendTag(id: p.id, wire: .null) } else {
                        writer.appendTag(id: p.id, wire: .varint)
                        writer.appendVarint(target)
                    }
                } else {
                    try Self.write(value, of: p, field: i, into: &writer) { (reason: String) -> StrataError in invalid(id, p.name, reason) }
                }
            }
            swap(&bytes, &writer.bytes)
        }
        guard bytes.count <= ObjectFormat.maxObjectBytes else {
            throw .objectTooLarge(entity: record.name, size: bytes.count, limit: ObjectFormat.maxObjectBytes)
        }

        // What the transaction held before.
        let key = ObjectKey(entityId: record.entityId, id: id)
        var oldToOne: [UInt32: Id] = [:]
        var oldIndex: IndexValues?
        let stored = try StrataError.decoding(entity: record.name, id: id) {
            try t.withObject(key) { old in
                oldToOne = try ObjectBytes.toOneTargets(in: old, propertyIds: toOneIds)
                if let ix = indexes { oldIndex = try t.indexValues(of: old, id: id, indexes: ix) }
            }
        }
        defer { t.recycle(oldIndex) }

        // Targets first: nothing is written for an object whose relation would dangle. The
        // object may name itself: its put is under way while the targets are checked.
        let rules = t.edgeRules
        t.putsInProgress.append(key)
        defer { t.putsInProgress.removeLast() }
        for p in fields where p.type == .toOne {
            let target = toOneTargets[p.id] ?? 0
            if target != 0, target != oldToOne[p.id] { try checkTarget(p, target, owner: id) }
        }
        var lists: [(property: EntityRecord.Property, ids: [Id], current: [Id])] = []
        for p in toManys {
            guard let value = given[p.name] else { continue }
            let ids: [Id]
            switch value {
            case .null: ids = []
            case let .toMany(x): ids = x
            default: throw invalid(id, p.name, "\(value) is not a list of ids of \(p.target ?? "objects")")
            }
            guard !ids.contains(0) else { throw invalid(id, p.name, "0 is never a stored id") }
            let current = try t.toManyList(entityId: record.entityId, propertyId: p.id, source: id)
            for target in Set(ids).subtracting(current) { try checkTarget(p, target, owner: id) }
            lists.append((p, ids, current))
        }

        if let ix = indexes {
            let values = try t.indexValues(of: bytes, id: id, indexes: ix)
            defer { t.recycle(values) }
            try t.checkIndexedValues(values, old: oldIndex, id: id, indexes: ix)
            try t.updateIndexEntries(ix, id: id, old: oldIndex, new: values)
        }
        bytes.withUnsafeBytes { overlay.writeObject(key, value: $0, committedPresent: stored) }

        for p in fields where p.type == .toOne {
            try rules.setToOne(entityId: record.entityId, propertyId: p.id, owner: id, from: oldToOne[p.id] ?? 0,
                               to: toOneTargets[p.id] ?? 0, embeddedTarget: rules.embeddedTarget(of: p))
        }
        for (p, ids, current) in lists {
            try rules.setToManyList(entityId: record.entityId, propertyId: p.id, owner: id, from: current, to: ids,
                                    embeddedTarget: rules.embeddedTarget(of: p))
        }

        if id > counter.lastId {
            t.counterAdvanced(counter, from: counter.lastId)
            counter.lastId = id
        }
    }

    /// A relation's new target must be stored (or be the object itself, whose put is under
    /// way); an embedded one must have no other parent.
    private func checkTarget(_ p: EntityRecord.Property, _ target: Id, owner: Id) throws(StrataError) {
        guard let name = p.target, let targetRecord = store.record(named: name) else {
            throw invalid(owner, p.name, "the relation's target entity is not in the store")
        }
        try transaction.edgeRules.checkNewTarget(entity: name, entityId: targetRecord.entityId, id: target,
                                                 isEmbedded: targetRecord.isEmbedded, owner: (record.entityId, owner))
    }

    /// Encodes a non-relation value as property `p`'s type, range-checked.
    private static func write(_ value: StoredValue, of p: EntityRecord.Property, field: Int, into w: inout ObjectWriter,
                              _ invalid: (String) -> StrataError) throws(StrataError) {
        func integer<I: FixedWidthInteger & PersistableValue>(_: I.Type) throws(StrataError) -> I {
            switch value {
            case let .int(x): if let v = I(exactly: x) { return v }
            case let .uint(x): if let v = I(exactly: x) { return v }
            case let .double(x) where x.rounded() == x: if let v = I(exactly: x) { return v }
            default: throw invalid("\(value) is not an integer")
            }
            throw invalid("\(value) is out of the range of \(p.type)")
        }
        if case .null = value {
            guard p.isOptional else { throw invalid("null for a property that is not optional") }
            w.appendTag(id: p.id, wire: .null)
            return
        }
        switch p.type {
        case .bool:
            guard case let .bool(b) = value else { throw invalid("\(value) is not a Bool") }
            w.write(b, field: field)
        case .int8: w.write(try integer(Int8.self), field: field)
        case .int16: w.write(try integer(Int16.self), field: field)
        case .int32: w.write(try integer(Int32.self), field: field)
        case .int64: w.write(try integer(Int64.self), field: field)
        case .uint8: w.write(try integer(UInt8.self), field: field)
        case .uint16: w.write(try integer(UInt16.self), field: field)
        case .uint32: w.write(try integer(UInt32.self), field: field)
        case .uint64: w.write(try integer(UInt64.self), field: field)
        case .float, .double:
            let d: Double
            switch value {
            case let .double(x): d = x
            case let .int(x): d = Double(x)
            case let .uint(x): d = Double(x)
            default: throw invalid("\(value) is not a number")
            }
            if p.type == .float {
                guard d.isNaN || Double(Float(d)) == d else { throw invalid("\(d) is not a Float") }
                w.write(Float(d), field: field)
            } else {
                w.write(d, field: field)
            }
        case .string:
            guard case let .string(s) = value else { throw invalid("\(value) is not a String") }
            w.write(s, field: field)
        case .date:
            guard case let .date(d) = value else { throw invalid("\(value) is not a Date") }
            w.write(d, field: field)
        case .bytes:
            guard case let .bytes(b) = value else { throw invalid("\(value) is not bytes") }
            w.write(b, field: field)
        case .uuid:
            switch value {
            case let .uuid(u): w.write(u, field: field)
            case let .string(s):
                guard let u = UUID(uuidString: s) else { throw invalid("\"\(s)\" is not a UUID") }
                w.write(u, field: field)
            default: throw invalid("\(value) is not a UUID")
            }
        case .url:
            switch value {
            case let .url(u): w.write(u, field: field)
            case let .string(s):
                guard let u = URL(string: s) else { throw invalid("\"\(s)\" is not a URL") }
                w.write(u, field: field)
            default: throw invalid("\(value) is not a URL")
            }
        case .decimal:
            switch value {
            case let .decimal(d): w.write(d, field: field)
            case let .int(x): w.write(Decimal(x), field: field)
            case let .uint(x): w.write(Decimal(x), field: field)
            case let .string(s):
                guard let d = Decimal(string: s, locale: nil), !(d.isNaN && s != "NaN") else { throw invalid("\"\(s)\" is not a Decimal") }
                w.write(d, field: field)
            default: throw invalid("\(value) is not a Decimal")
            }
        case .codable:
            guard case let .codable(v) = value else { throw invalid("\(value) is not a Codable value") }
            w.appendTag(id: w.propertyIds[field], wire: .lengthDelimited)
            do {
                try v.encoded().withUnsafeBytes { w.appendLengthDelimited($0) }
            } catch {
                throw invalid("\(error)")
            }
        case .toOne, .toMany:
            throw invalid("a relation is not a plain value")
        }
    }
}
