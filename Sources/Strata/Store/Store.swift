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
    let writeLock = ConditionLock()
    let catalog: LockedValue<Catalog>
    /// The change observers, and the commits waiting to reach them.
    let changeHub: ChangeHub
    /// Where async transactions run.
    let asyncQueues = AsyncQueues()

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
        // Object keys are an entity id and an object id: read by arithmetic on the id.
        engineOptions.idKeySpaces.insert(ObjectFormat.objectsKeySpace)
        // Objects just saved are the ones an app reads next: flushes leave them in the cache.
        engineOptions.cacheFillingKeySpaces.insert(ObjectFormat.objectsKeySpace)
        do {
            let engine = try Engine.open(directory: directoryPath, options: engineOptions)
            self.engine = engine
            do {
                objects = try Self.keySpace(ObjectFormat.objectsKeySpace, in: engine)
                meta = try Self.keySpace(ObjectFormat.metaKeySpace, in: engine)
                edges = engine.existingKeySpace(named: ObjectFormat.edgesKeySpace)
                indexSpace = engine.existingKeySpace(named: ObjectFormat.indexesKeySpace)
                let (loaded, counted, version) = try FormatUpgrade.openCatalog(engine: engine, meta: meta, objects: objects,
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
        changeHub = ChangeHub(catalog: catalog)
        self.directoryPath = directoryPath
        indexProgress = options.indexProgress
        durability = options.durability
        isReadOnly = options.readOnly
    }

    deinit {
        changeHub.close()
        engine.close()
    }

    private static func keySpace(_ name: String, in engine: Engine) throws -> KeySpace {
        if let ks = engine.existingKeySpace(named: name) { return ks }
        guard !engine.isReadOnly else { throw StorageError.notAStore(path: engine.directory) }
        return try engine.keySpace(named: name)
    }

    /// Larger stored object counts are damage (``storedCount(entityId:in:)``).
    static let maxObjectCount: UInt64 = 1 << 62

    /// The committed object count of an entity, as of `t`'s snapshot (or the latest state).
    func storedCount(entityId: UInt32, in t: Transaction?) throws(StrataError) -> UInt64 {
        do {
            guard let raw = try engine.get(MetaKey.count.key(entity: entityId), in: meta, snapshot: t?.snapshot) else { return 0 }
            guard raw.count == 8 else { throw StrataError.corruptCatalog(reason: "object count of entity \(entityId)") }
            let n = raw.withUnsafeBytes { UInt64(littleEndian: $0.loadUnaligned(as: UInt64.self)) }
            // Callers add a transaction's delta as Int64: a crafted count near 2^64 must be an
            // error here, not a trap there. No store holds 2^62 objects of one entity.
            guard n < Self.maxObjectCount else {
                throw StrataError.corruptCatalog(reason: "object count of entity \(entityId) is \(n), past the limit")
            }
            return n
        } catch {
            throw StrataError(error)
        }
    }

    /// Closes the store. Later calls on it, its boxes and transactions throw
    /// ``StrataError/storeClosed``. Every change observation ends: sequences finish (after the
    /// changes they already hold), callbacks stop. Closing twice is harmless.
    public func close() {
        changeHub.close()
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
        do { try CallbackScope.check() } catch { throw .storage(error) }
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
        try checkOpen()
        if let current = TransactionContext.current(for: self) {
            guard current.isWrite else { throw StrataError.readOnly }
            return try Self.withSavepoint(current, body)
        }
        guard !isReadOnly else { throw StrataError.readOnly }
        guard engine.isOpen else { throw StrataError.storeClosed }
        writeLock.lock()
        let transaction = Transaction(store: self, kind: .write, snapshot: nil)
        TransactionContext.push(transaction)
        let result: R
        do {
            result = try body()
        } catch {
            TransactionContext.pop()
            transaction.end()
            transaction.rollback()
            writeLock.unlock()
            throw error
        }
        TransactionContext.pop()
        transaction.end()
        var changes = ChangeSet(), sequence: UInt64?
        do {
            changes = try transaction.commit(durability: durability)
            if !changes.isEmpty {
                // Numbered in commit order under the lock; handed to observers after it.
                sequence = changeHub.reserve()
            }
        } catch {
            transaction.rollback()
            writeLock.unlock()
            throw StrataError(error)
        }
        writeLock.unlock()
        if let sequence { changeHub.publish(sequence, changes) }
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
        try checkOpen()
        if TransactionContext.current(for: self) != nil { return try body() }
        let snapshot: Snapshot
        do { snapshot = try engine.snapshot() } catch { throw StrataError(error) }
        defer { snapshot.release() }
        let transaction = Transaction(store: self, kind: .read, snapshot: snapshot)
        TransactionContext.push(transaction)
        defer {
            TransactionContext.pop()
            transaction.end()
        }
        return try body()
    }

    /// Runs `body` in the current write transaction, as a savepoint (an operation that fails
    /// leaves nothing of itself behind), or in a new transaction. `pinned`, a bound box's
    /// transaction (``StoreTransaction/box(for:)``), is the current one without a lookup.
    func write<R>(in pinned: PinnedTransaction? = nil, _ body: (Transaction) throws -> R) throws(StrataError) -> R {
        do {
            if let t = try pinned?.running() ?? TransactionContext.current(for: self) {
                guard t.isWrite else { throw StrataError.readOnly }
                return try Self.withSavepoint(t) { try body(t) }
            }
            return try runInTransaction { try body(TransactionContext.current(for: self)!) }
        } catch {
            throw StrataError(error)
        }
    }

    /// Runs `body` with the current transaction, or a new read transaction when `consistent`
    /// (several reads that must agree), or none (one read of the latest state). `pinned`, a
    /// bound box's transaction, is the current one without a lookup.
    func read<R>(consistent: Bool, in pinned: PinnedTransaction? = nil, _ body: (Transaction?) throws -> R) throws(StrataError) -> R {
        do {
            if let t = try pinned?.running() ?? TransactionContext.current(for: self) { return try body(t) }
            if consistent { return try runInReadOnlyTransaction { try body(TransactionContext.current(for: self)) } }
            return try body(nil)
        } catch {
            throw StrataError(error)
        }
    }
}
