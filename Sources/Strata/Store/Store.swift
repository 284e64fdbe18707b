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
    // @unchecked Sendable: every stored property is a constant; the mutable state behind them is
    // synchronised by its owner (`catalog` and `changeHub` by their locks, `writeLock`, the engine),
    // and `latest` holds no state of its own (``Transaction/Kind/latest``).
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
    let counters: StoreCounters
    /// Whether the catalog holds each entity's object count (false only for a read-only open of
    /// a store written before counts existed: `count()` then iterates).
    let countsMaintained: Bool
    /// Serialises write transactions.
    let writeLock = ConditionLock()
    let catalog: LockedValue<Catalog>
    /// The bindings the catalog has made, for lookups without its lock.
    let bindingTable = BindingTable()
    /// The change observers, and the commits waiting to reach them.
    let changeHub: ChangeHub
    /// Where async transactions run.
    let asyncQueues = AsyncQueues()
    /// The transaction a read outside any transaction runs in: the latest committed state
    /// (``Transaction/Kind/latest``).
    let latest: Transaction

    /// Opens the store in `directoryPath`, creating the directory and the store if missing.
    ///
    /// Throws ``StrataError/unsupportedFormatVersion(found:supported:)`` for a store written by
    /// a newer Strata, and ``StrataError/storage(_:)`` when the engine cannot open it (locked,
    /// damaged, not writable).
    public convenience init(directoryPath: String, options: StoreOptions = StoreOptions()) throws(StrataError) {
        let engine: Engine
        do {
            engine = try Engine.open(directory: directoryPath, options: Self.engineOptions(for: options))
        } catch {
            throw StrataError(error)
        }
        try self.init(engine: engine, directoryPath: directoryPath, options: options)
    }

    /// The engine options a store opens its engine with: its key spaces, the id layout of
    /// `objects` (objects read by arithmetic on their id), the prefix filters of `edges` and
    /// `indexes`. These shape what the engine writes and are not stored in the store, so a tool
    /// that opens a store's `Engine` itself to write (to compact it) opens it with these, or
    /// the segments it writes lose that layout: every object read then decodes a whole block.
    ///
    /// ```swift
    /// var options = StoreOptions()
    /// options.encryptionKey = key
    /// let engine = try Engine.open(directory: path, options: Store.engineOptions(for: options))
    /// defer { engine.close() }
    /// try engine.compact()
    /// ```
    public static func engineOptions(for options: StoreOptions) -> EngineOptions {
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
        return engineOptions
    }

    /// A store over an open engine (closed when this throws). `options.readOnly` says whether
    /// the store writes (a replica's engine is writable for its follower, its store is not).
    init(engine: Engine, directoryPath: String, options: StoreOptions) throws(StrataError) {
        self.engine = engine
        do {
            do {
                let objects = try Self.keySpace(ObjectFormat.objectsKeySpace, in: engine)
                let meta = try Self.keySpace(ObjectFormat.metaKeySpace, in: engine)
                let edges = engine.existingKeySpace(named: ObjectFormat.edgesKeySpace)
                let indexSpace = engine.existingKeySpace(named: ObjectFormat.indexesKeySpace)
                let counters = StoreCounters()
                (self.objects, self.meta, self.edges, self.indexSpace, self.counters) = (objects, meta, edges, indexSpace, counters)
                latest = Transaction(kind: .latest, snapshot: nil, engine: engine, objects: objects, meta: meta, edges: edges,
                                     indexSpace: indexSpace, counters: counters)
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
        latest.bindLatest(to: self)
        do {
            try migrate(options.migrations, progress: options.migrationProgress)
        } catch {
            close()
            throw error
        }
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
}
