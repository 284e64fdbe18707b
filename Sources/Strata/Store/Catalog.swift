import StrataStorage

/// The entity records as persisted, and the bindings made from them in this session: what a
/// store knows of its entities. Guarded by the store's catalog lock.
struct Catalog {
    var records: [String: EntityRecord] = [:]
    var lastIds: [UInt32: Id] = [:]
    var bindings: [ObjectIdentifier: Result<EntityBinding, StrataError>] = [:]
    /// The built indexes of each entity that has any, from `records`.
    var indexes: [UInt32: EntityIndexes] = [:]
    var boundNames: [String: ObjectIdentifier] = [:]
    var nextEntityId: UInt32 = 1
    /// The delete rules of the bound types and of the types their relations reach.
    var deleteRules = DeleteRuleTable()
}

/// Entity bindings and catalog lookups.
extension Store {
    /// The binding of `type` in this store, made at the first call (schema reconciled, indexes
    /// built); a schema conflict is the failure of every later call too.
    func binding<T: Entity>(for type: T.Type) -> Result<EntityBinding, StrataError> {
        // Inside `indexProgress` the catalog lock is held by this thread: waiting would be forever.
        if let name = CallbackScope.current { return .failure(.storage(.calledFromCallback(name))) }
        let typeId = ObjectIdentifier(type)
        if let b = bindingTable.binding(for: typeId) { return .success(b) }
        if let b = catalog.withLock({ $0.bindings[typeId] }) { return b }
        // Binding may build indexes, which needs the write lock (taken before the catalog lock,
        // the order write transactions use). A write transaction on this thread holds it already.
        let takeWriteLock = !isReadOnly && !(TransactionContext.current(for: self)?.isWrite ?? false)
        if takeWriteLock { writeLock.lock() }
        defer { if takeWriteLock { writeLock.unlock() } }
        return catalog.withLock { c in
            if let b = c.bindings[typeId] { return b }
            let result = Result { () throws(StrataError) in try makeBinding(T.self, catalog: &c) }
            // Transient failures (closed store, I/O) are retried at the next call; schema
            // conflicts are final for this session.
            if case let .failure(e) = result, case .storage = e { return result }
            if case .failure(.storeClosed) = result { return result }
            c.bindings[typeId] = result
            if case let .success(b) = result { bindingTable.publish(b, for: typeId) }
            return result
        }
    }

    private func makeBinding<T: Entity>(_ type: T.Type, catalog c: inout Catalog) throws(StrataError) -> EntityBinding {
        let schema = T._strataSchema
        let typeId = ObjectIdentifier(type)
        if let other = c.boundNames[schema.name], other != typeId { throw .duplicateEntityName(schema.name) }
        if c.records[schema.name] == nil && c.nextEntityId == UInt32.max {
            throw .corruptCatalog(reason: "no entity id is left for \(schema.name)")
        }
        let existing = c.records[schema.name]
            ?? EntityRecord(entityId: c.nextEntityId, name: schema.name, lastPropertyId: 0, properties: [])
        var (record, ids) = try existing.reconciled(with: schema)
        if !isReadOnly {
            try checkOpen()
            var fresh: [UInt8] = []
            let probe = EntityBinding(schema: schema, entityId: record.entityId, propertyIds: ids, typeIdentifier: typeId, lastId: 0)
            try probe.encode(try Self.freshObject(T.self, binding: probe), into: &fresh)
            do {
                try IndexBuilder.reconcile(&record, schema: schema, propertyIds: ids, encodedDefault: fresh, store: self)
            } catch {
                // A refused index: persist what the store now holds (a rebuilt index it had to
                // drop is no longer listed), then fail the binding.
                if record != c.records[schema.name] { try persist(record, catalog: &c) }
                throw error
            }
        }
        if record != c.records[schema.name] && !isReadOnly { try persist(record, catalog: &c) }
        c.records[schema.name] = record
        c.indexes[record.entityId] = EntityIndexes(record)
        c.nextEntityId = max(c.nextEntityId, record.entityId + 1)
        c.boundNames[schema.name] = typeId
        c.deleteRules.learn(T.self)
        return EntityBinding(schema: schema, entityId: record.entityId, propertyIds: ids, typeIdentifier: typeId,
                             isClass: T.self is AnyObject.Type, lastId: c.lastIds[record.entityId] ?? 0,
                             indexes: c.indexes[record.entityId])
    }

    private func persist(_ record: EntityRecord, catalog c: inout Catalog) throws(StrataError) {
        var batch = WriteBatch()
        batch.put(MetaKey.entity.key(entity: record.entityId), record.encoded(), in: meta)
        do { try engine.write(batch, durability: durability) } catch { throw StrataError(error) }
        c.records[record.name] = record
        c.indexes[record.entityId] = EntityIndexes(record)
        c.nextEntityId = max(c.nextEntityId, record.entityId + 1)
    }

    /// What `init()` gives: decoding an empty record runs exactly that.
    static func freshObject<T: Entity>(_ type: T.Type, binding: EntityBinding) throws(StrataError) -> T {
        let empty: [UInt8] = [ObjectFormat.codecVersion]
        do {
            return try empty.withUnsafeBytes { raw in
                try binding.fieldMap.withUnsafeBufferPointer { map in
                    var reader = try ObjectReader(bytes: raw, fieldMap: map)
                    return try T._strataDecode(id: 0, from: &reader)
                }
            }
        } catch {
            throw StrataError(error)
        }
    }

    /// The built indexes of an entity, or nil when it has none.
    func indexes(entityId: UInt32) -> EntityIndexes? {
        catalog.withLock { $0.indexes[entityId] }
    }

    /// The delete rules the bound types declare (empty when every relation nullifies).
    func deleteRules() -> DeleteRuleTable {
        catalog.withLock { $0.deleteRules }
    }

    /// Every persisted entity record.
    func catalogRecords() -> [EntityRecord] {
        catalog.withLock { Array($0.records.values) }
    }

    /// The persisted record of an entity, by name.
    func record(named name: String) -> EntityRecord? {
        catalog.withLock { $0.records[name] }
    }

    /// Every live relation property (of any entity) whose target is entity `name`.
    func relations(targeting name: String) -> [(entityId: UInt32, property: EntityRecord.Property)] {
        catalog.withLock { EntityRecord.relations(in: $0.records.values, targeting: name) }
    }
}
