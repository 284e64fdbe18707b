import StrataStorage

/// An open object database in a directory: the entry point for boxes and transactions.
///
/// One process opens a directory at a time; a second `Store` on the same directory, in this
/// process or another, fails with ``StrataError/storage(_:)`` wrapping `StorageError.locked`.
/// A store is `Sendable`: boxes and transactions may be used from many threads at once. Writes
/// are serialised; reads never block and always see a committed state.
///
/// ```swift
/// let store = try Store(directoryPath: "/tmp/shop")
/// let customers = store.box(for: Customer.self)
/// let id = try customers.put(Customer(name: "Ada"))
/// try store.runInTransaction {
///     let c = try customers.get(id)!
///     c.name = "Ada L."
///     try customers.put(c)
/// }
/// store.close()
/// ```
public final class Store: @unchecked Sendable {
    /// The store's directory.
    public let directoryPath: String
    /// The durability every transaction commits with.
    public let durability: Durability
    /// Whether the store was opened read-only.
    public let isReadOnly: Bool
    /// The object format version the store records (SPEC.md §11); a writable open upgrades an
    /// older store to this build's.
    public let formatVersion: UInt32

    let engine: Engine
    let objects: KeySpace
    let meta: KeySpace
    /// Nil only in a read-only store created before it had relations: no edges then.
    let edges: KeySpace?
    /// Nil only in a read-only store created before it had indexes.
    let indexSpace: KeySpace?
    let indexProgress: (@Sendable (IndexProgress) -> Void)?
    let counters = StoreCounters()
    /// Whether the catalog holds each entity's object count (false only for a read-only open of
    /// a store written before counts existed: `count()` then iterates).
    let countsMaintained: Bool
    /// Serialises write transactions.
    private let writeLock = ConditionLock()
    private let catalog: LockedValue<Catalog>
    /// What the last commit that changed anything changed (the input of change observation).
    let committedChanges = LockedValue(ChangeSet())

    /// The entity records as persisted, and the bindings made from them in this session.
    private struct Catalog {
        var records: [String: EntityRecord] = [:]
        var lastIds: [UInt32: Id] = [:]
        var bindings: [ObjectIdentifier: Result<EntityBinding, StrataError>] = [:]
        /// The built indexes of each entity that has any, from `records`.
        var indexes: [UInt32: EntityIndexes] = [:]
        var boundNames: [String: ObjectIdentifier] = [:]
        var nextEntityId: UInt32 = 1
    }

    /// Opens the store in `directoryPath`, creating the directory and the store if missing.
    ///
    /// Throws ``StrataError/unsupportedFormatVersion(found:supported:)`` for a store written by
    /// a newer Strata, and ``StrataError/storage(_:)`` when the engine cannot open it (locked,
    /// damaged, not writable).
    public init(directoryPath: String, options: StoreOptions = StoreOptions()) throws(StrataError) {
        var engineOptions = options.engine
        engineOptions.durability = options.durability
        engineOptions.readOnly = options.readOnly
        engineOptions.keySpaces = options.readOnly ? [] : [ObjectFormat.objectsKeySpace, ObjectFormat.metaKeySpace, ObjectFormat.edgesKeySpace,
                                                                    ObjectFormat.indexesKeySpace]
        // Edges are read by source (all but the last id) and index entries by value (all but
        // the object id): segments holding neither are skipped by their filters.
        engineOptions.prefixFilters[ObjectFormat.edgesKeySpace] = EdgeKey.byteCount - EdgeKey.prefixByteCount
        engineOptions.prefixFilters[ObjectFormat.indexesKeySpace] = IndexKey.idBytes
        do {
            let engine = try Engine.open(directory: directoryPath, options: engineOptions)
            self.engine = engine
            do {
                objects = try Self.keySpace(ObjectFormat.objectsKeySpace, in: engine)
                meta = try Self.keySpace(ObjectFormat.metaKeySpace, in: engine)
                edges = engine.existingKeySpace(named: ObjectFormat.edgesKeySpace)
                indexSpace = engine.existingKeySpace(named: ObjectFormat.indexesKeySpace)
                let (loaded, counted, version) = try Self.loadCatalog(engine: engine, meta: meta, objects: objects,
                                                             readOnly: options.readOnly, durability: options.durability)
                catalog = LockedValue(loaded)
                countsMaintained = counted
                formatVersion = version
            } catch {
                engine.close()
                throw error
            }
        } catch {
            throw StrataError(error)
        }
        self.directoryPath = directoryPath
        indexProgress = options.indexProgress
        durability = options.durability
        isReadOnly = options.readOnly
    }

    deinit { engine.close() }

    private static func keySpace(_ name: String, in engine: Engine) throws -> KeySpace {
        if let ks = engine.existingKeySpace(named: name) { return ks }
        guard !engine.isReadOnly else { throw StorageError.notAStore(path: engine.directory) }
        return try engine.keySpace(named: name)
    }

    private static func loadCatalog(engine: Engine, meta: KeySpace, objects: KeySpace, readOnly: Bool,
                                    durability: Durability) throws -> (Catalog, countsMaintained: Bool, formatVersion: UInt32) {
        var catalog = Catalog()
        let formatKey = MetaKey.format.key()
        var found = ObjectFormat.version
        if let raw = try engine.get(formatKey, in: meta) {
            guard raw.count == 4 else { throw StrataError.corruptCatalog(reason: "format record has \(raw.count) bytes") }
            found = raw.withUnsafeBytes { UInt32(littleEndian: $0.loadUnaligned(as: UInt32.self)) }
            guard found <= ObjectFormat.version else {
                throw StrataError.unsupportedFormatVersion(found: found, supported: ObjectFormat.version)
            }
        } else if !readOnly {
            var batch = WriteBatch()
            withUnsafeBytes(of: ObjectFormat.version.littleEndian) { v in
                formatKey.withUnsafeBytes { batch.put($0, v, in: meta) }
            }
            try engine.write(batch, durability: durability)
        }
        for (key, value) in try engine.scan(meta) {
            guard key.count == 5, let kind = MetaKey(rawValue: key[0]) else { continue }
            let entityId = key[1...].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            switch kind {
            case .entity:
                guard let record = EntityRecord(entityId: entityId, bytes: value) else {
                    throw StrataError.corruptCatalog(reason: "entity record \(entityId) does not parse")
                }
                catalog.records[record.name] = record
                catalog.nextEntityId = max(catalog.nextEntityId, entityId + 1)
            case .lastId:
                guard value.count == 8 else { throw StrataError.corruptCatalog(reason: "id counter of entity \(entityId)") }
                catalog.lastIds[entityId] = value.withUnsafeBytes { Id(littleEndian: $0.loadUnaligned(as: Id.self)) }
            case .format, .count:
                continue
            }
        }
        if found < 2 {
            // Version 1 kept no object counts: count once, by scanning, and record them.
            guard !readOnly else { return (catalog, false, found) }
            var batch = WriteBatch()
            for record in catalog.records.values {
                let it = try engine.makeIterator(in: objects, prefix: ObjectKey.prefix(entityId: record.entityId))
                try it.seekToFirst()
                var n: UInt64 = 0
                while it.isValid {
                    n += 1
                    try it.next()
                }
                batch.put(MetaKey.count.key(entity: record.entityId), withUnsafeBytes(of: n.littleEndian) { Array($0) }, in: meta)
            }
            batch.put(formatKey, withUnsafeBytes(of: ObjectFormat.version.littleEndian) { Array($0) }, in: meta)
            try engine.write(batch, durability: durability)
        } else if found < ObjectFormat.version && !readOnly {
            // Version 2 → 3 adds the indexes key space, opened above; nothing else changes. Version
            // 3 → 4 keys unique indexes by value: each entity's are rebuilt when a writable
            // session first binds its type (IndexBuilder), and read as they are until then.
            var batch = WriteBatch()
            batch.put(formatKey, withUnsafeBytes(of: ObjectFormat.version.littleEndian) { Array($0) }, in: meta)
            try engine.write(batch, durability: durability)
        }
        for record in catalog.records.values {
            if let ix = EntityIndexes(record) { catalog.indexes[record.entityId] = ix }
        }
        return (catalog, true, readOnly ? found : ObjectFormat.version)
    }

    /// The committed object count of an entity, as of `t`'s snapshot (or the latest state).
    func storedCount(entityId: UInt32, in t: Transaction?) throws(StrataError) -> UInt64 {
        do {
            guard let raw = try engine.get(MetaKey.count.key(entity: entityId), in: meta, snapshot: t?.snapshot) else { return 0 }
            guard raw.count == 8 else { throw StrataError.corruptCatalog(reason: "object count of entity \(entityId)") }
            return raw.withUnsafeBytes { UInt64(littleEndian: $0.loadUnaligned(as: UInt64.self)) }
        } catch {
            throw StrataError(error)
        }
    }

    /// Closes the store. Later calls on it, its boxes and transactions throw
    /// ``StrataError/storeClosed``. Closing twice is harmless.
    public func close() {
        engine.close()
    }

    /// Compacts the whole store: drops overwritten and removed objects from disk. Runs on the
    /// calling thread; reads and writes go on meanwhile.
    ///
    /// ```swift
    /// let report = try store.compact()
    /// print(report.bytesBefore, "→", report.bytesAfter)
    /// ```
    @discardableResult
    public func compact() throws(StrataError) -> CompactionReport {
        guard !isReadOnly else { throw .readOnly }
        do { return try engine.compact() } catch { throw StrataError(error) }
    }

    /// What the store has read since it was opened.
    public func statistics() -> StoreStatistics { counters.snapshot }

    /// Whether ``close()`` was called.
    public var isClosed: Bool { !engine.isOpen }

    func checkOpen() throws(StrataError) {
        if !engine.isOpen { throw .storeClosed }
    }

    /// The box that stores objects of `type`.
    ///
    /// The first call for a type matches its declared schema against the persisted one and
    /// records what changed (new properties, renames, removals). If they conflict (a property
    /// changed type), every operation of the returned box throws the reason.
    ///
    /// ```swift
    /// let notes = store.box(for: Note.self)
    /// ```
    public func box<T: Entity>(for type: T.Type) -> Box<T> {
        Box(store: self, binding: binding(for: type))
    }

    func binding<T: Entity>(for type: T.Type) -> Result<EntityBinding, StrataError> {
        let typeId = ObjectIdentifier(type)
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
            return result
        }
    }

    private func makeBinding<T: Entity>(_ type: T.Type, catalog c: inout Catalog) throws(StrataError) -> EntityBinding {
        let schema = T._strataSchema
        let typeId = ObjectIdentifier(type)
        if let other = c.boundNames[schema.name], other != typeId { throw .duplicateEntityName(schema.name) }
        let existing = c.records[schema.name]
            ?? EntityRecord(entityId: c.nextEntityId, name: schema.name, lastPropertyId: 0, properties: [])
        var (record, ids) = try existing.reconciled(with: schema)
        if !isReadOnly {
            try checkOpen()
            var fresh: [UInt8] = []
            let probe = EntityBinding(schema: schema, entityId: record.entityId, propertyIds: ids, typeIdentifier: typeId, lastId: 0)
            probe.encode(try Self.freshObject(T.self, binding: probe), into: &fresh)
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
        catalog.withLock { c in
            c.records.values.flatMap { r in
                r.properties.filter { !$0.isRemoved && $0.type.isRelation && $0.target == name }.map { (r.entityId, $0) }
            }
        }
    }

    /// Runs `body` in one atomic write transaction: everything it writes through boxes is
    /// committed together when it returns, or not at all if it throws.
    ///
    /// Called inside another write transaction, it is a savepoint: if `body` throws, what it
    /// wrote is rolled back (objects, relations, ids given to new objects, relation proxies'
    /// saved state) and the error is rethrown; the outer transaction goes on with everything
    /// written before the call, and commits or rolls back as a whole.
    ///
    /// ```swift
    /// try store.runInTransaction {
    ///     try customers.put(alice)
    ///     try? store.runInTransaction {       // a savepoint
    ///         try notes.put(&note)
    ///         throw Cancelled()               // undoes the note only
    ///     }
    /// }
    /// ```
    @discardableResult
    public func runInTransaction<R>(_ body: () throws -> R) throws -> R {
        if let current = TransactionContext.current(for: self) {
            guard current.isWrite else { throw StrataError.readOnly }
            return try Self.withSavepoint(current, body)
        }
        guard !isReadOnly else { throw StrataError.readOnly }
        guard engine.isOpen else { throw StrataError.storeClosed }
        writeLock.lock()
        defer { writeLock.unlock() }
        let transaction = Transaction(store: self, kind: .write, snapshot: nil)
        TransactionContext.push(transaction)
        let result: R
        do {
            result = try body()
        } catch {
            TransactionContext.pop()
            transaction.rollback()
            throw error
        }
        TransactionContext.pop()
        do {
            let changes = try transaction.commit(durability: durability)
            if !changes.isEmpty { committedChanges.withLock { $0 = changes } }
        } catch {
            transaction.rollback()
            throw StrataError(error)
        }
        return result
    }

    /// Runs `body` in `t`; if it throws, rolls `t` back to where it was and rethrows.
    private static func withSavepoint<R>(_ t: Transaction, _ body: () throws -> R) throws -> R {
        let savepoint = t.savepoint()
        do {
            return try body()
        } catch {
            t.rollback(to: savepoint)
            throw error
        }
    }

    /// Runs `body` against one consistent snapshot: every read inside sees the same committed
    /// state, whatever other threads commit meanwhile. Inside a write transaction it joins it
    /// (and sees its uncommitted writes). Writes inside throw ``StrataError/readOnly``.
    ///
    /// ```swift
    /// let (n, all) = try store.runInReadOnlyTransaction { (try customers.count(), try customers.all()) }
    /// ```
    @discardableResult
    public func runInReadOnlyTransaction<R>(_ body: () throws -> R) throws -> R {
        if TransactionContext.current(for: self) != nil { return try body() }
        let snapshot: Snapshot
        do { snapshot = try engine.snapshot() } catch { throw StrataError(error) }
        defer { snapshot.release() }
        TransactionContext.push(Transaction(store: self, kind: .read, snapshot: snapshot))
        defer { TransactionContext.pop() }
        return try body()
    }

    /// Runs `body` in the current write transaction, as a savepoint (an operation that fails
    /// leaves nothing of itself behind), or in a new transaction.
    func write<R>(_ body: (Transaction) throws -> R) throws(StrataError) -> R {
        do {
            if let t = TransactionContext.current(for: self) {
                guard t.isWrite else { throw StrataError.readOnly }
                return try Self.withSavepoint(t) { try body(t) }
            }
            return try runInTransaction { try body(TransactionContext.current(for: self)!) }
        } catch {
            throw StrataError(error)
        }
    }

    /// Runs `body` with the current transaction, or a new read transaction when `consistent`
    /// (several reads that must agree), or none (one read of the latest state).
    func read<R>(consistent: Bool, _ body: (Transaction?) throws -> R) throws(StrataError) -> R {
        do {
            if let t = TransactionContext.current(for: self) { return try body(t) }
            if consistent { return try runInReadOnlyTransaction { try body(TransactionContext.current(for: self)) } }
            return try body(nil)
        } catch {
            throw StrataError(error)
        }
    }
}
