import StrataStorage

extension Store {
    /// Inside a write transaction: checks every invariant of ``verifyGraph()`` that the
    /// transaction's own writes can have broken, as the transaction would commit them, in time
    /// proportional to what it wrote (not to the size of the store).
    ///
    /// Each invariant of the graph ties together a few keys (an object, the edges naming it, its
    /// index entries, its entity's count). One whose keys the transaction did not write holds
    /// after the commit exactly as it held before, so when the committed store was clean, a clean
    /// report here means the store will be clean after this transaction commits: the same answer
    /// as a full ``verifyGraph()`` after every commit, at the cost of the changes alone.
    /// Outside a write transaction it throws ``StrataError/readOnly``.
    ///
    /// ```swift
    /// try store.runInTransaction {
    ///     try orders.put(order)
    ///     let report = try store.verifyTransaction()
    ///     precondition(report.isClean, "\(report.problems)")
    /// }
    /// ```
    public func verifyTransaction() throws(StrataError) -> GraphVerification {
        try checkOpen()
        guard let t = TransactionContext.current(for: self), t.isWrite, let overlay = t.overlay else { throw .readOnly }
        var v = ChangeVerifier(store: self, transaction: t, overlay: overlay)
        do { try v.run() } catch { throw StrataError(error) }
        return v.report
    }
}

/// The walk behind ``Store/verifyTransaction()``: every key the overlay wrote, and the keys
/// whose invariants involve it, read as the transaction sees them (after) and as the engine
/// holds them (before: a writer holds the write lock, so the engine is the state it started
/// from).
struct ChangeVerifier {
    let store: Store
    let t: Transaction
    let overlay: WriteOverlay
    let catalog: VerifierCatalog
    var report = GraphVerification()
    /// Edges whose presence must agree with the objects and lists they mirror.
    private var edgesToCheck = Set<EdgeKey>()
    /// Reverse entries of to-many lists, checked once every list is read.
    private var reverseToCheck = Set<EdgeKey>()
    private var indexKeysToCheck = Set<[UInt8]>()
    /// Embedded objects whose owner count may have moved.
    private var embeddedToCheck = Set<ObjectKey>()

    init(store: Store, transaction: Transaction, overlay: WriteOverlay) {
        self.store = store
        t = transaction
        self.overlay = overlay
        catalog = VerifierCatalog(store.catalogRecords())
    }

    private mutating func problem(_ entityId: UInt32, _ id: Id, _ reason: String) {
        report.problems.append(GraphProblem(entity: catalog.name(entityId), id: id, reason: reason))
    }

    private func propertyName(_ key: EdgeKey) -> String {
        catalog.property(key.entityId, key.propertyId)?.name ?? "property #\(key.propertyId)"
    }

    mutating func run() throws {
        var objects: [ObjectKey] = []
        forEachWritten(overlay.objects) { k in
            if k.count == ObjectFormat.objectKeyBytes {
                objects.append(ObjectKey(entityId: ObjectKey.entityId(fromKey: k), id: ObjectKey.id(fromKey: k)))
            }
        }
        forEachWritten(overlay.edges) { k in
            if let key = EdgeKey(bytes: k) { edgesToCheck.insert(key) }
        }
        forEachWritten(overlay.indexes) { k in indexKeysToCheck.insert(Array(k)) }
        report.objects = objects.count
        report.edges = edgesToCheck.count
        report.indexEntries = indexKeysToCheck.count

        var net: [UInt32: Int64] = [:]
        for key in objects { net[key.entityId, default: 0] += try checkObject(key) }
        for (entityId, n) in net.sorted(by: { $0.key < $1.key }) where store.countsMaintained {
            let delta = overlay.countDeltas[entityId] ?? 0
            if delta != n { problem(entityId, 0, "the transaction moves the count by \(delta), its objects by \(n)") }
        }
        // Lists first: each adds the reverse entries of its old and new targets.
        for key in edgesToCheck.sorted(by: Self.order) where key.kind == .toManyList { try checkList(key) }
        for key in edgesToCheck.sorted(by: Self.order) where key.kind == .toOneBacklink { try checkToOneEntry(key) }
        for key in edgesToCheck.union(reverseToCheck).sorted(by: Self.order) where key.kind == .toManyBacklink {
            try checkReverseEntry(key)
        }
        for key in indexKeysToCheck.sorted(by: { $0.lexicographicallyPrecedes($1) }) { try checkIndexEntry(key) }
        for key in embeddedToCheck.sorted(by: { ($0.entityId, $0.id) < ($1.entityId, $1.id) }) { try checkOwners(key) }
    }

    private static func order(_ x: EdgeKey, _ y: EdgeKey) -> Bool {
        (x.kind.rawValue, x.entityId, x.propertyId, x.a, x.b) < (y.kind.rawValue, y.entityId, y.propertyId, y.a, y.b)
    }

    private func forEachWritten(_ space: OverlaySpace, _ body: (UnsafeRawBufferPointer) -> Void) {
        var node = space.first()
        while node >= 0 {
            if space.state(of: node) != .absent { body(space.key(of: node)) }
            node = space.successor(node)
        }
    }

    // MARK: objects

    /// Checks one written object; returns how it moved its entity's count (+1, 0, -1).
    private mutating func checkObject(_ key: ObjectKey) throws -> Int64 {
        let before = try store.latest.objectBytes(key), after = try t.objectBytes(key)
        guard let record = catalog.records[key.entityId] else {
            if after != nil { problem(key.entityId, key.id, "object of an entity the catalog does not list") }
            return (after != nil ? 1 : 0) - (before != nil ? 1 : 0)
        }
        if record.isEmbedded { embeddedToCheck.insert(key) }
        // What the object named before: those edges and index entries must now agree with it.
        if let before {
            let old = before.withUnsafeBytes { catalog.toOneTargets(entityId: key.entityId, bytes: $0) } ?? []
            for case let (propertyId, target?) in old {
                edgesToCheck.insert(EdgeKey(kind: .toOneBacklink, entityId: key.entityId, propertyId: propertyId, a: target, b: key.id))
            }
            if let ix = catalog.indexes[key.entityId], let values = try? before.withUnsafeBytes({ try ix.values(of: $0) }) {
                for (i, value) in values.enumerated() { indexKeysToCheck.insert(ix.key(i, value: value, id: key.id)) }
            }
        }
        // Its lists live and die with it.
        for p in record.properties where !p.isRemoved && p.type == .toMany {
            edgesToCheck.insert(EdgeKey(kind: .toManyList, entityId: key.entityId, propertyId: p.id, a: key.id, b: 0))
        }
        guard let after else {
            // Removed: no edge of any relation may still name it as a target.
            for (entityId, p) in catalog.relations(targeting: key.entityId) {
                for source in try t.edgeSources(sharingPrefixWith: Self.backlinkPrefix(entityId, p, target: key.id)) {
                    problem(entityId, source, "\(p.name) still refers to \(record.name) \(key.id), which is removed")
                }
            }
            return before != nil ? -1 : 0
        }
        guard let targets = after.withUnsafeBytes({ catalog.toOneTargets(entityId: key.entityId, bytes: $0) }) else {
            problem(key.entityId, key.id, "does not decode")
            return before != nil ? 0 : 1
        }
        for (propertyId, target) in targets {
            guard let target else { continue }
            let p = catalog.property(key.entityId, propertyId)
            guard let targetEntity = catalog.targetEntity(of: p),
                  try t.objectExists(ObjectKey(entityId: targetEntity, id: target)) else {
                problem(key.entityId, key.id, "\(p?.name ?? "?") points at \(p?.target ?? "?") \(target), which is not stored")
                continue
            }
            edgesToCheck.insert(EdgeKey(kind: .toOneBacklink, entityId: key.entityId, propertyId: propertyId, a: target, b: key.id))
        }
        if let ix = catalog.indexes[key.entityId] {
            let values = try after.withUnsafeBytes { try ix.values(of: $0) }
            for (i, value) in values.enumerated() { indexKeysToCheck.insert(ix.key(i, value: value, id: key.id)) }
        }
        return before != nil ? 0 : 1
    }

    /// The prefix of the entries that name `target` from relation `p` of `entityId`: to-one
    /// backlinks or to-many reverse entries.
    private static func backlinkPrefix(_ entityId: UInt32, _ p: EntityRecord.Property, target: Id) -> EdgeKey {
        EdgeKey(kind: p.type == .toOne ? .toOneBacklink : .toManyBacklink, entityId: entityId, propertyId: p.id, a: target, b: 0)
    }

    /// The to-one target of `source`'s property as the transaction sees it: nil when the
    /// object is not stored or holds none; `.some(nil)` for an object that does not decode.
    private func currentTarget(_ entityId: UInt32, _ propertyId: UInt32, of source: Id) throws -> Id?? {
        guard let bytes = try t.objectBytes(ObjectKey(entityId: entityId, id: source)) else { return nil }
        guard let targets = bytes.withUnsafeBytes({ catalog.toOneTargets(entityId: entityId, bytes: $0) }) else { return .some(nil) }
        return targets.first { $0.propertyId == propertyId }?.target
    }

    // MARK: edges

    /// A to-one's backlink entry is present exactly when the source's field names the target.
    private mutating func checkToOneEntry(_ key: EdgeKey) throws {
        let present = try t.edgeValue(key) != nil
        let target = try currentTarget(key.entityId, key.propertyId, of: key.b)
        if present && target != .some(key.a) {
            problem(key.entityId, key.b, "backlink entry says \(propertyName(key)) points at \(key.a), but the object's field does not")
        } else if !present && target == .some(key.a) {
            problem(key.entityId, key.b, "\(propertyName(key)) points at \(key.a), but its backlink entry is missing")
        }
        noteEmbeddedTarget(key)
    }

    /// A list belongs to a stored owner and holds stored targets; its reverse entries follow.
    private mutating func checkList(_ key: EdgeKey) throws {
        let p = catalog.property(key.entityId, key.propertyId)
        let old = try store.latest.edgeValue(key).map { try EdgeList.decode($0) } ?? []
        for target in old { reverseToCheck.insert(EdgeKey(kind: .toManyBacklink, entityId: key.entityId, propertyId: key.propertyId, a: target, b: key.a)) }
        guard let raw = try t.edgeValue(key) else { return }
        guard try t.objectExists(ObjectKey(entityId: key.entityId, id: key.a)) else {
            problem(key.entityId, key.a, "\(propertyName(key)) list of an object that is not stored")
            return
        }
        let list: [Id]
        do { list = try EdgeList.decode(raw) } catch {
            problem(key.entityId, key.a, "\(propertyName(key)) list does not decode: \(error)")
            return
        }
        let targetEntity = catalog.targetEntity(of: p)
        for target in list {
            if try targetEntity.map({ try t.objectExists(ObjectKey(entityId: $0, id: target)) }) != true {
                problem(key.entityId, key.a, "\(propertyName(key)) holds \(p?.target ?? "?") \(target), which is not stored")
            }
            reverseToCheck.insert(EdgeKey(kind: .toManyBacklink, entityId: key.entityId, propertyId: key.propertyId, a: target, b: key.a))
        }
    }

    /// A to-many's reverse entry is present exactly when the source's list holds the target.
    private mutating func checkReverseEntry(_ key: EdgeKey) throws {
        let present = try t.edgeValue(key) != nil
        let list = EdgeKey(kind: .toManyList, entityId: key.entityId, propertyId: key.propertyId, a: key.b, b: 0)
        let holds = try t.edgeValue(list).map { (try? EdgeList.decode($0))?.contains(key.a) ?? false } ?? false
        if present && !holds {
            problem(key.entityId, key.b, "reverse entry says \(propertyName(key)) holds \(key.a), but the list does not")
        } else if !present && holds {
            problem(key.entityId, key.b, "\(propertyName(key)) holds \(key.a), but its reverse entry is missing")
        }
        noteEmbeddedTarget(key)
    }

    private mutating func noteEmbeddedTarget(_ key: EdgeKey) {
        if let target = catalog.targetEntity(of: catalog.property(key.entityId, key.propertyId)),
           catalog.records[target]?.isEmbedded == true {
            embeddedToCheck.insert(ObjectKey(entityId: target, id: key.a))
        }
    }

    /// A stored embedded object has exactly one owner: one edge naming it, over every relation.
    private mutating func checkOwners(_ key: ObjectKey) throws {
        guard try t.objectExists(key) else { return }
        var owners = 0
        for (entityId, p) in catalog.relations(targeting: key.entityId) {
            owners += try t.edgeSources(sharingPrefixWith: Self.backlinkPrefix(entityId, p, target: key.id)).count
        }
        if owners == 0 {
            problem(key.entityId, key.id, "embedded object has no owner")
        } else if owners != 1 {
            problem(key.entityId, key.id, "embedded object has \(owners) owners instead of one")
        }
    }

    // MARK: index entries

    /// An index entry is present exactly when its object is stored with that value.
    private mutating func checkIndexEntry(_ key: [UInt8]) throws {
        let value = try t.indexEntry(ofKey: key)
        let (entityId, propertyId, keyId) = GraphVerifier.parseIndexEntry(key, [])
        guard let ix = catalog.indexes[entityId], let position = ix.position(ofProperty: propertyId) else {
            if value != nil { problem(entityId, keyId, "index entry of property #\(propertyId), which has no index") }
            return
        }
        let name = ix.properties[position].name
        // Which object the entry is about: the end of its key, or (keyed by value) its value,
        // now or before the transaction.
        let id: Id
        if !ix.properties[position].keyedByValue {
            id = keyId
        } else if let holder = try value ?? store.latest.indexEntry(ofKey: key), holder.count == IndexKey.idBytes {
            id = holder.withUnsafeBytes { IndexKey.id(fromKey: $0) }
        } else {
            if value != nil { problem(entityId, 0, "index entry of \(name) does not hold an object id") }
            return
        }
        var expected: (key: [UInt8], value: [UInt8])?
        if let bytes = try t.objectBytes(ObjectKey(entityId: entityId, id: id)),
           let values = try? bytes.withUnsafeBytes({ try ix.values(of: $0) }) {
            expected = (ix.key(position, value: values[position], id: id), ix.entryValue(position, id: id))
        }
        if let value, expected?.key != key || expected?.value != value {
            problem(entityId, id, "index entry of \(name) does not match the object")
        } else if value == nil, expected?.key == key {
            problem(entityId, id, "index entry of \(name) is missing")
        }
    }
}
