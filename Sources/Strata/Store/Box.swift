import StrataStorage

/// Stores and reads the objects of one entity type. Get one with ``Store/box(for:)``; it is a
/// cheap value, `Sendable`, usable from any thread.
///
/// Every call runs in the transaction open on the calling thread (``Store/runInTransaction(_:)``
/// or ``Store/runInReadOnlyTransaction(_:)``), or in one of its own.
///
/// ```swift
/// let customers = store.box(for: Customer.self)
/// let id = try customers.put(Customer(name: "Ada"))      // sets the object's id
/// let ada = try customers.get(id)
/// let n = try customers.count()
/// try customers.remove(id)
/// ```
public struct Box<T: Entity>: Sendable {
    /// The store this box writes to.
    public let store: Store
    let resolved: Result<EntityBinding, StrataError>
    /// The transaction of a box from ``StoreTransaction/box(for:)``: every call runs in it,
    /// without looking up the thread's transactions; nil for a box from ``Store/box(for:)``.
    let pinned: PinnedTransaction?

    init(store: Store, binding: Result<EntityBinding, StrataError>, pinned: PinnedTransaction? = nil) {
        self.store = store
        resolved = binding
        self.pinned = pinned
    }

    /// The box of another entity, bound to the same transaction as this one.
    func sibling<E: Entity>(for type: E.Type) -> Box<E> {
        Box<E>(store: store, binding: store.binding(for: type), pinned: pinned)
    }

    /// Runs `body` in this box's transaction: the bound one, the thread's, a new read
    /// transaction when `consistent`, or the store's latest (see ``Store/read(consistent:in:_:)``).
    func read<R>(consistent: Bool, _ body: (Transaction) throws -> R) throws(StrataError) -> R {
        try store.read(consistent: consistent, in: pinned, body)
    }

    /// Runs `body` in this box's write transaction, as a savepoint, or in a new one (see
    /// ``Store/write(in:_:)``).
    func write<R>(_ body: (Transaction) throws -> R) throws(StrataError) -> R {
        try store.write(in: pinned, body)
    }

    /// The transaction a single read runs in: the bound one, the thread's, or the store's
    /// latest.
    func currentTransaction() throws(StrataError) -> Transaction {
        if let pinned { return try pinned.running() }
        return TransactionContext.current(for: store) ?? store.latest
    }

    func binding() throws(StrataError) -> EntityBinding {
        try store.checkOpen()
        return try resolved.get()
    }

    /// The binding for a write by the user (the store's open state is checked once, by
    /// ``Store/write(in:_:)``): embedded objects are put only through their parent.
    private func bindingForPut() throws(StrataError) -> EntityBinding {
        let b = try resolved.get()
        guard !b.isEmbedded else {
            throw .invalidRelation(reason: "\(b.name) is embedded: put it through the ToOne or ToMany of its parent")
        }
        return b
    }

    // MARK: writing

    /// Inserts `object` (id 0: it gets the next id, written back into a class instance) or
    /// updates the stored object with its id. Returns the id. For a struct, use
    /// `put(``put(_:mode:)-(inout T, _)``object)` to get the id written back.
    ///
    /// A set id that is not stored is an error (``StrataError/objectNotFound(entity:id:)``)
    /// unless `mode` is ``PutMode/insert``.
    @discardableResult
    public func put(_ object: T, mode: PutMode = .put) throws(StrataError) -> Id {
        var copy = object
        return try put(&copy, mode: mode)
    }

    /// Inserts or updates `object` and writes its id back into it.
    ///
    /// ```swift
    /// var note = Note(text: "hi")
    /// try notes.put(&note)        // note.id != 0 now
    /// ```
    @discardableResult
    public func put(_ object: inout T, mode: PutMode = .put) throws(StrataError) -> Id {
        let b = try bindingForPut()
        return try write { t in try t.put(&object, mode: mode, binding: b) }
    }

    /// Puts all `objects` in one transaction; returns their ids in order.
    @discardableResult
    public func put(_ objects: [T], mode: PutMode = .put) throws(StrataError) -> [Id] {
        let b = try bindingForPut()
        return try write { t in
            var ids: [Id] = []
            ids.reserveCapacity(objects.count)
            for object in objects {
                var copy = object
                ids.append(try t.put(&copy, mode: mode, binding: b))
            }
            return ids
        }
    }

    /// Puts all `objects` in one transaction and writes their ids back.
    @discardableResult
    public func put(_ objects: inout [T], mode: PutMode = .put) throws(StrataError) -> [Id] {
        let b = try bindingForPut()
        return try write { t in
            var ids: [Id] = []
            ids.reserveCapacity(objects.count)
            for i in objects.indices { ids.append(try t.put(&objects[i], mode: mode, binding: b)) }
            return ids
        }
    }

    /// Removes the object with `id`; returns whether it was stored.
    @discardableResult
    public func remove(_ id: Id) throws(StrataError) -> Bool {
        let b = try resolved.get()
        guard id != 0 else { throw .invalidId(entity: b.name) }
        return try write { t in try t.remove(CollectionOfOne(id), binding: b) } == 1
    }

    /// Removes the stored object with `object`'s id; returns whether it was stored.
    @discardableResult
    public func remove(_ object: T) throws(StrataError) -> Bool {
        try remove(object._strataId)
    }

    /// Removes the objects with these ids in one transaction; returns how many were stored.
    @discardableResult
    public func remove(_ ids: [Id]) throws(StrataError) -> Int {
        let b = try resolved.get()
        if ids.contains(0) { throw .invalidId(entity: b.name) }
        return try write { t in try t.remove(ids, binding: b) }
    }

    /// Removes every object of this type in one transaction; returns how many there were.
    /// Ids are not reused afterwards.
    @discardableResult
    public func removeAll() throws(StrataError) -> Int {
        let b = try resolved.get()
        return try write { t in
            var ids: [Id] = []
            try t.forEachObject(entityId: b.entityId) { id, _ in ids.append(id); return true }
            return try t.remove(ids, binding: b, listed: true)
        }
    }

    // MARK: reading

    /// The object with `id`, or nil.
    @inlinable
    public func get(_ id: Id) throws(StrataError) -> T? {
        // Inlinable, so that callers specialise it: unspecialised generic code asks the runtime
        // for `Optional<T>`'s metadata on every call, and this is the path of every lazy to-one.
        var found: T?
        try visitStoredObject(id) { b, v in found = try b.decode(T.self, id: id, from: v, store: store) }
        return found
    }

    /// Calls `body` with the stored bytes of the object with `id`, as the calling thread's
    /// transaction (or the latest state) sees them; does nothing when it is not stored.
    @usableFromInline
    func visitStoredObject(_ id: Id, _ body: (EntityBinding, UnsafeRawBufferPointer) throws -> Void) throws(StrataError) {
        let b = try binding()
        guard id != 0 else { throw .invalidId(entity: b.name) }
        do {
            if let pinned {
                _ = try pinned.running().withObject(ObjectKey(entityId: b.entityId, id: id)) { v in try body(b, v) }
            } else if let t = TransactionContext.current(for: store) {
                _ = try t.withObject(ObjectKey(entityId: b.entityId, id: id)) { v in try body(b, v) }
            } else {
                try visitLatest(id, binding: b, body)
            }
        } catch {
            throw StrataError(error)
        }
    }

    /// ``visitStoredObject(_:_:)`` outside any transaction: the store's latest transaction. A
    /// call of its own, so that the transaction is read in place (the store holds it) instead
    /// of joining the other branches' retained one: a retain and a release less on every get.
    @inline(never)
    private func visitLatest(_ id: Id, binding b: EntityBinding, _ body: (EntityBinding, UnsafeRawBufferPointer) throws -> Void) throws {
        _ = try store.latest.withObject(ObjectKey(entityId: b.entityId, id: id)) { v in try body(b, v) }
    }

    /// The objects with these ids that are stored, in the order of `ids`, read from one
    /// consistent state. Many ids are looked up together; increasing ids that fill most of
    /// the range they span (a page of ids, most of an entity) are read with one scan of it.
    ///
    /// ```swift
    /// let firstPage = try orders.get(Array(1...100))   // one range scan
    /// let some = try orders.get([42, 7, 1_000])        // three lookups, batched
    /// ```
    public func get(_ ids: [Id]) throws(StrataError) -> [T] {
        let b = try binding()
        if ids.contains(0) { throw .invalidId(entity: b.name) }
        return try read(consistent: true) { t in try t.objects(T.self, ids, binding: b) }
    }

    /// The stored objects among `ids`, keyed by id (an id that is not stored has no entry),
    /// read from one consistent state.
    ///
    /// ```swift
    /// let byId = try customers.getDictionary(order.map { $0.customer.targetId ?? 0 }.filter { $0 != 0 })
    /// ```
    public func getDictionary(_ ids: [Id]) throws(StrataError) -> [Id: T] {
        let b = try binding()
        if ids.contains(0) { throw .invalidId(entity: b.name) }
        return try read(consistent: true) { t in
            var out = [Id: T](minimumCapacity: ids.count)
            try t.forEachObject(ids, binding: b) { id, v in
                out[id] = try b.decode(T.self, id: id, from: v, store: store)
                return true
            }
            return out
        }
    }

    /// Calls `body` with every object of this type, by increasing id, until it returns false,
    /// without keeping them: a scan of any size in the memory of one object, on one consistent
    /// state.
    ///
    /// ```swift
    /// var found: Customer?
    /// try customers.forEach { c in
    ///     if c.name.hasPrefix("A") { found = c }
    ///     return found == nil   // false stops the scan
    /// }
    /// ```
    public func forEach(_ body: (T) throws -> Bool) throws(StrataError) {
        let b = try binding()
        try read(consistent: true) { t in
            try t.forEachObject(entityId: b.entityId) { id, bytes in try body(b.decode(T.self, id: id, from: bytes, store: store)) }
        }
    }

    /// Every object of this type, by increasing id.
    public func all() throws(StrataError) -> [T] {
        let b = try binding()
        return try read(consistent: false) { t in
            var out: [T] = []
            try t.forEachObject(entityId: b.entityId) { id, bytes in
                out.append(try b.decode(T.self, id: id, from: bytes, store: store))
                return true
            }
            return out
        }
    }

    /// How many objects of this type are stored.
    /// O(1): the store keeps each entity's count, committed with the objects.
    public func count() throws(StrataError) -> Int {
        let b = try binding()
        return try read(consistent: false) { t in
            guard store.countsMaintained else {
                var n = 0
                try t.forEachObject(entityId: b.entityId) { _, _ in n += 1; return true }
                return n
            }
            let n = Int64(try t.storedCount(entityId: b.entityId)) + (t.overlay?.countDeltas[b.entityId] ?? 0)
            // Below 0 only when the stored count is wrong (a damaged or crafted catalog).
            guard n >= 0 else { throw StrataError.corruptCatalog(reason: "object count of entity \(b.entityId) would be \(n)") }
            return Int(n)
        }
    }

    /// Whether no object of this type is stored.
    public func isEmpty() throws(StrataError) -> Bool {
        let b = try binding()
        return try read(consistent: false) { t in
            var empty = true
            try t.forEachObject(entityId: b.entityId) { _, _ in empty = false; return false }
            return empty
        }
    }

    /// Whether an object with `id` is stored.
    public func contains(_ id: Id) throws(StrataError) -> Bool {
        let b = try binding()
        guard id != 0 else { throw .invalidId(entity: b.name) }
        return try read(consistent: false) { t in try t.objectExists(ObjectKey(entityId: b.entityId, id: id)) }
    }
}
