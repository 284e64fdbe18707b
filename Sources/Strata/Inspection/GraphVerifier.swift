import StrataStorage

/// One inconsistency ``Store/verifyGraph()`` found in the object layer.
public struct GraphProblem: Sendable, Equatable, CustomStringConvertible {
    /// The entity of the object concerned (for an edge, the entity declaring the relation).
    public var entity: String
    /// The object concerned, 0 when the problem is not about one object.
    public var id: Id
    public var reason: String

    public var description: String { id == 0 ? "\(entity): \(reason)" : "\(entity) \(id): \(reason)" }
}

/// What ``Store/verifyGraph()`` read and found.
public struct GraphVerification: Sendable {
    public var problems: [GraphProblem] = []
    /// Findings that are not damage (edges left by a relation property that was removed).
    public var notes: [String] = []
    public var objects = 0
    public var edges = 0
    public var indexEntries = 0

    public var isClean: Bool { problems.isEmpty }
}

extension Store {
    /// Checks the object graph against its invariants, from one consistent snapshot (inside a
    /// write transaction, as the transaction sees it, its own writes included): every
    /// object decodes; object counts match; every `ToOne` points at a live object or nothing and
    /// has its backlink entry; every edge has both of its ends and its reverse entry; every
    /// embedded object has exactly one owner; every index entry matches its object's value and
    /// every indexed object has its entry. Reads each key space once; memory grows with the
    /// number of objects and edges (sets of ids and keys). Never writes.
    ///
    /// ```swift
    /// let report = try store.verifyGraph()
    /// for p in report.problems { print(p) }
    /// ```
    public func verifyGraph() throws(StrataError) -> GraphVerification {
        try checkOpen()
        do {
            return try withReadTransaction { t in
                var v = GraphVerifier(store: self, transaction: t)
                try v.run()
                return v.report
            }
        } catch {
            throw StrataError(error)
        }
    }
}

/// The walk behind ``Store/verifyGraph()``.
struct GraphVerifier {
    let store: Store
    /// The transaction whose view is checked: a read transaction's snapshot, or a write
    /// transaction's own writes over the latest state.
    let transaction: Transaction
    var report = GraphVerification()
    private let catalog: VerifierCatalog
    private var records: [UInt32: EntityRecord] { catalog.records }
    /// Live object ids per entity id.
    private var ids: [UInt32: Set<Id>] = [:]
    /// Kind-1 entries the stored to-one fields call for.
    private var expectedToOne = Set<EdgeKey>()
    /// (entity, property, source, target) of every non-nil to-one, checked once all ids are known.
    private var toOneTargets: [(UInt32, UInt32, Id, Id)] = []
    /// Index entries the objects call for: key → value and the object's id.
    private var expectedIndex: [[UInt8]: (value: [UInt8], id: Id)] = [:]
    /// Owners seen per embedded object (entity id, object id).
    private var owners: [ObjectKey: Int] = [:]

    init(store: Store, transaction: Transaction) {
        self.store = store
        self.transaction = transaction
        catalog = VerifierCatalog(store.catalogRecords())
    }

    private mutating func problem(_ entity: String, _ id: Id, _ reason: String) {
        report.problems.append(GraphProblem(entity: entity, id: id, reason: reason))
    }

    private func name(_ entityId: UInt32) -> String { catalog.name(entityId) }

    private func property(_ entityId: UInt32, _ propertyId: UInt32) -> EntityRecord.Property? {
        catalog.property(entityId, propertyId)
    }

    private func exists(_ entity: String?, _ id: Id) -> Bool {
        guard let entity, let r = catalog.recordsByName[entity] else { return false }
        return ids[r.entityId]?.contains(id) ?? false
    }

    mutating func run() throws {
        try scanObjects()
        try checkCounts()
        for (entityId, propertyId, source, target) in toOneTargets {
            let p = property(entityId, propertyId)
            if !exists(p?.target, target) {
                problem(name(entityId), source, "\(p?.name ?? "?") points at \(p?.target ?? "?") \(target), which is not stored")
            }
            noteOwner(p?.target, target)
        }
        toOneTargets = []
        try scanEdges()
        for key in expectedToOne.sorted(by: { ($0.entityId, $0.b) < ($1.entityId, $1.b) }) {
            problem(name(key.entityId), key.b, "\(property(key.entityId, key.propertyId)?.name ?? "?") points at \(key.a), but its backlink entry is missing")
        }
        for (key, count) in owners.sorted(by: { ($0.key.entityId, $0.key.id) < ($1.key.entityId, $1.key.id) }) where count != 1 {
            problem(name(key.entityId), key.id, "embedded object has \(count) owners instead of one")
        }
        for (entityId, set) in ids where records[entityId]?.isEmbedded == true {
            for id in set.sorted() where owners[ObjectKey(entityId: entityId, id: id)] == nil {
                problem(name(entityId), id, "embedded object has no owner")
            }
        }
        try scanIndexes()
    }

    private mutating func noteOwner(_ entity: String?, _ id: Id) {
        guard let entity, let r = catalog.recordsByName[entity], r.isEmbedded else { return }
        owners[ObjectKey(entityId: r.entityId, id: id), default: 0] += 1
    }

    /// Every object of every entity: decodes, collects ids, expected backlink and index entries.
    private mutating func scanObjects() throws {
        let decoders = catalog.decoders, indexes = catalog.indexes
        guard let it = try transaction.makeIterator(.objects) else { return }
        try it.seekToFirst()
        while it.isValid {
            report.objects += 1
            let key = it.key
            guard key.count == ObjectFormat.objectKeyBytes else {
                problem("(objects)", 0, "key of \(key.count) bytes is not an object key")
                try it.next()
                continue
            }
            let entityId = key.prefix(4).reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            let id = ObjectKey.id(fromKey: key)
            guard let record = records[entityId], let decoder = decoders[entityId] else {
                problem("entity #\(entityId)", id, "object of an entity the catalog does not list")
                try it.next()
                continue
            }
            ids[entityId, default: []].insert(id)
            do {
                let values = try decoder.decode(it.value)
                for (i, p) in decoder.fields.enumerated() where p.type == .toOne {
                    if case let .toOne(target?) = values[i] {
                        expectedToOne.insert(EdgeKey(kind: .toOneBacklink, entityId: entityId, propertyId: p.id, a: target, b: id))
                        toOneTargets.append((entityId, p.id, id, target))
                    }
                }
                if let ix = indexes[entityId] {
                    for (i, value) in try ix.values(of: it.value).enumerated() {
                        expectedIndex[ix.key(i, value: value, id: id)] = (ix.entryValue(i, id: id), id)
                    }
                }
            } catch {
                problem(record.name, id, "does not decode: \(error)")
            }
            try it.next()
        }
    }

    private mutating func checkCounts() throws {
        for record in records.values.sorted(by: { $0.entityId < $1.entityId }) {
            // Signed: a wrong stored count with the transaction's removals may go below 0.
            let stored = Int64(try transaction.storedCount(entityId: record.entityId))
                + (transaction.overlay?.countDeltas[record.entityId] ?? 0)
            let actual = Int64(ids[record.entityId]?.count ?? 0)
            if stored != actual && store.countsMaintained {
                problem(record.name, 0, "the catalog counts \(stored) objects, \(actual) are stored")
            }
        }
    }

    /// Every edge: well-formed, of a live relation, both ends stored, its mirror present.
    private mutating func scanEdges() throws {
        guard let it = try transaction.makeIterator(.edges) else { return }
        var expectedToMany = Set<EdgeKey>()
        var stale = Set<String>()
        try it.seekToFirst()
        while it.isValid {
            report.edges += 1
            guard let key = EdgeKey(bytes: it.key) else {
                problem("(edges)", 0, "malformed edge key of \(it.key.count) bytes")
                try it.next()
                continue
            }
            let entity = name(key.entityId)
            guard let p = property(key.entityId, key.propertyId), p.type.isRelation else {
                problem(entity, 0, "edges of property #\(key.propertyId), which is not a relation")
                try it.next()
                continue
            }
            if p.isRemoved {
                stale.insert("\(entity).\(p.name)")
                try it.next()
                continue
            }
            switch key.kind {
            case .toOneBacklink:
                if p.type != .toOne {
                    problem(entity, key.b, "to-one backlink entry for \(p.name), which is a to-many")
                } else if expectedToOne.remove(key) == nil {
                    problem(entity, key.b, "backlink entry says \(p.name) points at \(key.a), but the object's field does not")
                }
            case .toManyList:
                guard p.type == .toMany, key.b == 0 else {
                    problem(entity, key.a, "malformed to-many list entry for \(p.name)")
                    break
                }
                if !exists(entity, key.a) { problem(entity, key.a, "\(p.name) list of an object that is not stored") }
                do {
                    for target in try EdgeList.decode(Array(it.value)) {
                        if !exists(p.target, target) {
                            problem(entity, key.a, "\(p.name) holds \(p.target ?? "?") \(target), which is not stored")
                        }
                        noteOwner(p.target, target)
                        expectedToMany.insert(EdgeKey(kind: .toManyBacklink, entityId: key.entityId, propertyId: key.propertyId, a: target, b: key.a))
                    }
                } catch {
                    problem(entity, key.a, "\(p.name) list does not decode: \(error)")
                }
            case .toManyBacklink:
                if expectedToMany.remove(key) == nil {
                    problem(entity, key.b, "reverse entry says \(p.name) holds \(key.a), but the list does not")
                }
            }
            try it.next()
        }
        for key in expectedToMany.sorted(by: { ($0.entityId, $0.b) < ($1.entityId, $1.b) }) {
            problem(name(key.entityId), key.b, "\(property(key.entityId, key.propertyId)?.name ?? "?") holds \(key.a), but its reverse entry is missing")
        }
        for s in stale.sorted() { report.notes.append("edges of \(s), a relation property that was removed, are still stored") }
    }

    /// Every index entry belongs to an object with that value; every indexed object has its entry.
    private mutating func scanIndexes() throws {
        if let it = try transaction.makeIterator(.indexes) {
            try it.seekToFirst()
            while it.isValid {
                report.indexEntries += 1
                let key = Array(it.key), value = Array(it.value)
                if expectedIndex.removeValue(forKey: key)?.value != value {
                    let (entityId, propertyId, id) = Self.parseIndexEntry(key, value)
                    problem(name(entityId), id, "index entry of \(property(entityId, propertyId)?.name ?? "property #\(propertyId)") does not match the object")
                }
                try it.next()
            }
        }
        for (key, expected) in expectedIndex.sorted(by: { $0.key.lexicographicallyPrecedes($1.key) }) {
            let (entityId, propertyId, _) = Self.parseIndexEntry(key, [])
            problem(name(entityId), expected.id, "index entry of \(property(entityId, propertyId)?.name ?? "?") is missing")
        }
    }

    /// Entity, property and object id of an index entry, as far as it holds them (0 for what it
    /// does not): the id is the value of an entry keyed by value, else the end of the key.
    static func parseIndexEntry(_ key: [UInt8], _ value: [UInt8]) -> (UInt32, UInt32, Id) {
        guard key.count >= IndexKey.headerBytes else { return (0, 0, 0) }
        let entityId = key[0..<4].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        let propertyId = key[4..<8].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        let source = value.isEmpty ? key : value
        let id = source.count >= IndexKey.idBytes ? source.withUnsafeBytes { IndexKey.id(fromKey: $0) } : 0
        return (entityId, propertyId, id)
    }
}
