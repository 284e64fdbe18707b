import StrataStorage
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One transaction of a store, and the one type that reads and writes the object layer: every
/// read (point, batched, ordered; objects, edges, index entries, counts) is a method of the
/// transaction it runs in (`TransactionReads.swift`), every write is one too
/// (`TransactionWrites.swift`: the put and the removal) and goes into its overlay
/// (`PutOperation`, `IndexMaintenance.swift`, ``EdgeMaintenance``).
///
/// Three kinds. A read transaction pins a snapshot. A write transaction holds the store's write
/// lock and keeps everything it writes in one ``WriteOverlay``; reads inside it go through the
/// overlay; `commit` writes the overlay in one atomic engine batch. The store's one **latest**
/// transaction (``Store/latest``) reads the latest committed state and writes nothing: a single
/// read outside any transaction runs in it, so no read needs a "no transaction" case.
///
/// State outside the store that a write changes (ids given to class objects, the saved state of
/// `ToOne` and `ToMany` proxies) is logged too, so that a rollback, whole or to a savepoint,
/// returns it exactly to what it was: a retry then writes it again.
final class Transaction {
    enum Kind {
        case read, write
        /// The store's shared reader of the latest committed state (``Store/latest``): no
        /// snapshot, no overlay, no state of its own; used from any thread.
        case latest
    }

    /// What a write changed outside the store, to undo on rollback.
    enum Undo {
        /// A class object given an id by this transaction: back to 0.
        case assignedId(any Entity)
        /// A relation proxy a put changed in a way it can undo by itself (a `ToOne` whose
        /// assignment it settled, a new owner's `ToMany` it attached): no closure to allocate
        /// on the bulk-insert path.
        case relation(any RelationPutUndo)
        /// Anything else (a `ToMany`'s applied changes, a relation a put cleared): restores it.
        case restore(() -> Void)
    }

    /// A point a nested transaction or a failed operation rolls back to.
    struct Savepoint {
        fileprivate let overlay: Int
        fileprivate let undo: Int
    }

    /// The store, unretained: the store holds its latest transaction, so a strong reference
    /// would be a cycle. Every other transaction lives inside a call of the store (its body) or
    /// in a ``PinnedTransaction``, which only `Box` and ``StoreTransaction`` hold, and both hold
    /// the store: the store outlives every transaction.
    @inline(__always) var store: Store { storeReference.unsafelyUnwrapped.takeUnretainedValue() }
    /// Set by `init`, or for the latest transaction by ``bindLatest(to:)`` at the end of the
    /// store's `init` (the store makes it before it can refer to itself); never changed after.
    @exclusivity(unchecked) private var storeReference: Unmanaged<Store>?
    /// What every read needs, the store's, held here: a read then uses its transaction's own
    /// fields, with no retain of the store (unretained above) on every call.
    let engine: Engine
    let objects: KeySpace
    let meta: KeySpace
    /// Nil only in a read-only store created before it had relations.
    let edges: KeySpace?
    /// Nil only in a read-only store created before it had indexes.
    let indexSpace: KeySpace?
    let counters: StoreCounters
    let kind: Kind
    /// The state reads see: a snapshot for read transactions; nil (latest) for write
    /// transactions, since the write lock keeps every other writer out, and for the latest
    /// transaction.
    let snapshot: Snapshot?
    /// A write transaction's writes; nil for a read transaction.
    let overlay: WriteOverlay?

    /// Encoding buffer, reused for every object of the transaction. A transaction belongs to one
    /// thread (the one running its closure), so its hot state skips the exclusivity checks.
    @exclusivity(unchecked) var scratch: [UInt8] = []
    /// Index key buffer, reused for every index entry the transaction writes or checks.
    @exclusivity(unchecked) var keyScratch: [UInt8] = []
    /// Buffers of index values, reused by the puts and removals of the transaction (a put may
    /// put others, so it takes one from the pool instead of sharing one).
    @exclusivity(unchecked) var indexValuePool: [IndexValues] = []
    /// Objects whose put has begun and not ended: a cycle of new objects (A → B → A) refers to
    /// them before they are written.
    @exclusivity(unchecked) var putsInProgress: [ObjectKey] = []
    /// Entities whose id counter moved, with their last id before this transaction; their
    /// counters are written with the commit. An id above `lastIdBefore` was given in this
    /// transaction, so nothing of it (object, edges) is in the engine. Not undone by a rollback:
    /// ids are never reused, and a counter ahead of the stored objects is harmless.
    private var advancedCounters: [UInt32: (binding: EntityBinding, lastIdBefore: Id)] = [:]
    /// Records of the meta key space committed with the transaction's writes: a migration
    /// step's changed entity records and its version (``Migration``).
    var metaWrites: [(key: [UInt8], value: [UInt8])] = []
    /// The entity whose counter moved last: a bulk put advances one entity's, object after object.
    private var lastAdvanced: EntityBinding?
    /// Objects found in the engine by an existence check. The engine does not change while a
    /// write transaction runs (it holds the write lock; everything it writes waits in the
    /// overlay), so a positive answer stays true: a bulk put that links thousands of objects to
    /// the same few targets reads each target once. The overlay, checked first, says whether
    /// the transaction removed one since.
    @exclusivity(unchecked) private(set) var knownCommittedObjects = KnownObjects()
    @exclusivity(unchecked) private var undoLog: [Undo] = []
    /// The thread running the transaction's body: a box bound to the transaction
    /// (``StoreTransaction/box(for:)``) runs in it only there.
    private let thread = pthread_self()
    /// Set when the body has returned: a bound box used afterwards throws instead of reading a
    /// released snapshot or writing into a committed overlay. Atomic because a bound box that
    /// escaped may check it from another thread.
    private let ended = Atomic<Bool>(false)

    convenience init(store: Store, kind: Kind, snapshot: Snapshot?) {
        self.init(kind: kind, snapshot: snapshot, engine: store.engine, objects: store.objects, meta: store.meta,
                  edges: store.edges, indexSpace: store.indexSpace, counters: store.counters)
        storeReference = Unmanaged.passUnretained(store)
    }

    /// A transaction not yet bound to its store: the store's latest one is made this way
    /// before the store can refer to itself, and ``bindLatest(to:)`` completes it.
    init(kind: Kind, snapshot: Snapshot?, engine: Engine, objects: KeySpace, meta: KeySpace, edges: KeySpace?,
         indexSpace: KeySpace?, counters: StoreCounters) {
        (self.engine, self.objects, self.meta, self.edges, self.indexSpace, self.counters) = (engine, objects, meta, edges, indexSpace, counters)
        self.kind = kind
        self.snapshot = snapshot
        overlay = kind == .write ? WriteOverlay() : nil
    }

    /// Completes the latest transaction of `store`, made unbound.
    func bindLatest(to store: Store) {
        assert(kind == .latest && storeReference == nil)
        storeReference = Unmanaged.passUnretained(store)
    }

    /// Marks the body as returned (see ``isRunningOnCurrentThread``).
    func end() {
        ended.store(true, ordering: .releasing)
    }

    /// Whether the body is still running, on this thread: what a bound box checks before it
    /// uses the transaction, in place of a lookup of the thread's transactions.
    var isRunningOnCurrentThread: Bool {
        pthread_equal(thread, pthread_self()) != 0 && !ended.load(ordering: .acquiring)
    }

    var isWrite: Bool { kind == .write }

    /// Records that `binding`'s last id moved up from `previous` (its value before the move).
    func counterAdvanced(_ binding: EntityBinding, from previous: Id) {
        if lastAdvanced === binding { return }
        lastAdvanced = binding
        if advancedCounters[binding.entityId]?.binding !== binding {
            advancedCounters[binding.entityId] = (binding, advancedCounters[binding.entityId]?.lastIdBefore ?? previous)
        }
    }

    /// Whether object `id` of `entityId` got its id in this transaction: the engine holds
    /// nothing of it (ids are never reused).
    func isNewInTransaction(entityId: UInt32, id: Id) -> Bool {
        guard let last = advancedCounters[entityId]?.lastIdBefore else { return false }
        return id > last
    }

    /// Notes that the engine holds `key` (see ``knownCommittedObjects``).
    func noteCommittedObject(_ key: ObjectKey) {
        if isWrite && knownCommittedObjects.count < 1 << 16 { knownCommittedObjects.insert(key) }
    }

    func logUndo(_ undo: Undo) {
        undoLog.append(undo)
    }

    /// Whether the put of `key` has begun in this transaction and not ended.
    func isBeingPut(_ key: ObjectKey) -> Bool {
        putsInProgress.contains(key)
    }

    // MARK: savepoints

    func savepoint() -> Savepoint {
        Savepoint(overlay: overlay?.mark ?? 0, undo: undoLog.count)
    }

    /// Undoes everything written since `savepoint`, in the store and outside it, newest first.
    func rollback(to savepoint: Savepoint) {
        overlay?.rollback(to: savepoint.overlay)
        while undoLog.count > savepoint.undo {
            switch undoLog.removeLast() {
            case let .assignedId(object):
                var entity = object
                entity._strataId = 0
            case let .relation(relation):
                relation.undoPut()
            case let .restore(action):
                action()
            }
        }
    }

    /// Undoes the whole transaction.
    func rollback() {
        rollback(to: Savepoint(overlay: 0, undo: 0))
    }

    // MARK: commit

    /// Writes everything in one atomic batch, with the object counts and id counters that moved.
    /// Returns what changed (empty when nothing did).
    func commit(durability: Durability) throws -> ChangeSet {
        guard let overlay, !overlay.isEmpty || !advancedCounters.isEmpty || !metaWrites.isEmpty else { return ChangeSet() }
        var batch = WriteBatch()
        for (key, value) in metaWrites { batch.put(key, value, in: meta) }
        overlay.encode(into: &batch, objects: objects, edges: edges, indexes: indexSpace)
        // Writers are serialised, so the latest count plus this transaction's delta is exact.
        for (entityId, delta) in overlay.countDeltas.entries where delta != 0 {
            // A write transaction reads the latest committed state: its own read of the count.
            let now = Int64(try storedCount(entityId: entityId)) + delta
            guard now >= 0 else { throw StrataError.corruptCatalog(reason: "object count of entity \(entityId) would be \(now)") }
            batch.put(MetaKey.count.key(entity: entityId), withUnsafeBytes(of: UInt64(now).littleEndian) { Array($0) }, in: meta)
        }
        for (entityId, (binding, _)) in advancedCounters {
            withUnsafeBytes(of: binding.lastId.littleEndian) { v in
                MetaKey.lastId.key(entity: entityId).withUnsafeBytes { batch.put($0, v, in: meta) }
            }
        }
        let changes = overlay.changeSet()
        try engine.write(batch, durability: durability)
        counters.objectsWritten.add(UInt64(changes.entities.values.reduce(0) { $0 + $1.inserted.count + $1.updated.count }),
                                          ordering: .relaxed)
        counters.edgesWritten.add(UInt64(overlay.edges.liveCount), ordering: .relaxed)
        return changes
    }
}

/// A relation proxy that can undo what a put did to it: a `ToOne` whose assignment the put
/// stored becomes the user's unsaved assignment again; a `ToMany` the put attached to its new
/// owner is detached.
protocol RelationPutUndo: AnyObject {
    func undoPut()
}
