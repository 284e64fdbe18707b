import Dispatch
import StrataStorage
import Synchronization

/// Hands each commit's changes to the store's observers, in commit order, after the commit is
/// durable and after its writer released the write lock, on a delivery queue of its own: a
/// writer pays two short lock sections and at most one dispatch per commit, whatever the
/// number of observers. (Delivering in the writer's thread made it wake every idle observer
/// itself, a system call each: 10 query observers took 78% of its throughput that way in one
/// run, 30-50% with this queue.)
///
/// Ordering: a writer takes a sequence number while it still holds the write lock
/// (``reserve()``), so numbers follow commit order, and hands its changes over after unlocking
/// (``publish(_:_:)``). Two writers may hand over out of order; the delivery queue delivers
/// number n only after n - 1. Delivering merges each commit into the mailboxes of the
/// observers that watch its entities (``ChangeSubscriber``); observers run elsewhere.
///
/// State sits behind a pthread mutex (`LockedValue`), which ThreadSanitizer sees (it does not
/// see `Synchronization.Mutex`'s futex on Linux).
final class ChangeHub: Sendable {
    private struct State {
        var subscribers: [UInt64: ChangeSubscriber] = [:]
        var nextSubscriberId: UInt64 = 1
        var nextSequence: UInt64 = 0
        var nextToDeliver: UInt64 = 0
        /// Commits handed over and not yet delivered, by sequence number.
        var pending: [UInt64: ChangeSet] = [:]
        var deliveryScheduled = false
        var closed = false
    }

    private let state = LockedValue(State())
    /// Commits handed over so far: the lingering delivery thread polls it without the lock.
    private let published = Atomic<UInt64>(0)
    /// How long the delivery thread waits for more commits before going idle.
    static let lingerNanoseconds: UInt64 = 20_000
    private let queue = DispatchQueue(label: "strata.changes")
    private let catalog: LockedValue<Catalog>

    init(catalog: LockedValue<Catalog>) {
        self.catalog = catalog
    }

    /// The catalog's records by entity id, to name the entities of a change set.
    private func records() -> [UInt32: EntityRecord] {
        catalog.withLock { c in Dictionary(uniqueKeysWithValues: c.records.values.map { ($0.entityId, $0) }) }
    }


    /// How many observers are registered.
    var subscriberCount: Int { state.withLock { $0.subscribers.count } }

    /// Registers `subscriber`; throws ``StrataError/storeClosed`` once the store is closed.
    func add(_ subscriber: ChangeSubscriber) throws(StrataError) -> UInt64 {
        let id: UInt64? = state.withLock { s in
            guard !s.closed else { return nil }
            defer { s.nextSubscriberId += 1 }
            s.subscribers[s.nextSubscriberId] = subscriber
            return s.nextSubscriberId
        }
        guard let id else { throw .storeClosed }
        return id
    }

    /// Unregisters and finishes a subscriber (cancelled or released).
    func remove(_ id: UInt64) {
        state.withLock { $0.subscribers.removeValue(forKey: id) }?.finish()
    }

    /// The sequence number of a commit about to be published, or nil when nobody observes (the
    /// commit then skips handing over its changes). Called with the write lock held; every
    /// number taken must be published.
    func reserve() -> UInt64? {
        state.withLock { s in
            guard !s.subscribers.isEmpty else { return nil }
            defer { s.nextSequence += 1 }
            return s.nextSequence
        }
    }

    /// Hands over commit `sequence`'s changes. Called after the write lock is released.
    func publish(_ sequence: UInt64, _ changes: ChangeSet) {
        let schedule = state.withLock { s -> Bool in
            guard !s.closed else { return false }
            s.pending[sequence] = changes
            guard !s.deliveryScheduled, s.pending[s.nextToDeliver] != nil else { return false }
            s.deliveryScheduled = true
            return true
        }
        published.add(1, ordering: .releasing)
        if schedule { queue.async { self.deliver() } }
    }

    /// Delivers every commit that is next in order. Runs on `queue`. Each commit goes into
    /// the mailboxes one by one (so each observer counts only the commits it watches), but the
    /// observers are woken once for all the commits found waiting together: a burst costs one
    /// wake-up per observer, not one per commit.
    private func deliver() {
        var names: [UInt32: EntityRecord]?
        var idleSince: UInt64 = 0, lingering = true
        while true {
            // Finding nothing deliverable and giving up the delivery happen under one lock: a
            // commit handed over after that schedules a new delivery.
            let next = state.withLock { s -> ([ChangeSet], [ChangeSubscriber])? in
                var sets: [ChangeSet] = []
                while !s.closed, let changes = s.pending.removeValue(forKey: s.nextToDeliver) {
                    sets.append(changes)
                    s.nextToDeliver += 1
                }
                guard !sets.isEmpty || s.closed || !lingering else {
                    s.deliveryScheduled = false
                    return nil
                }
                return (sets, Array(s.subscribers.values))
            }
            guard let (sets, subscribers) = next else { return }
            if sets.isEmpty {
                // Linger a little before going idle: a writer at full speed commits again
                // within microseconds, and finding the delivery still scheduled it hands over
                // without waking this thread (a system call on the writer's side).
                let now = DispatchTime.now().uptimeNanoseconds
                if idleSince == 0 { idleSince = now }
                if now - idleSince >= Self.lingerNanoseconds { lingering = false }
                let seen = published.load(ordering: .acquiring)
                var spins = 0
                while published.load(ordering: .acquiring) == seen && spins < 2_000 { spins += 1 }
                continue
            }
            idleSince = 0
            lingering = true
            if subscribers.isEmpty { continue }
            var toWake = Set<ObjectIdentifier>()
            for set in sets {
                // Entity ids never change meaning, so naming them after the commit is exact;
                // the records are read again only for an entity bound since the last read.
                if names == nil || set.entities.keys.contains(where: { names?[$0] == nil })
                    || set.relations.keys.contains(where: { names?[$0.entityId] == nil }) {
                    names = records()
                }
                let changes = StoreChanges(set, records: names ?? [:])
                for subscriber in subscribers where subscriber.offer(changes) {
                    toWake.insert(ObjectIdentifier(subscriber))
                }
            }
            for subscriber in subscribers where toWake.contains(ObjectIdentifier(subscriber)) { subscriber.wakeUp() }
        }
    }

    /// Returns once every commit published so far (and next in order) has reached the
    /// observers' mailboxes.
    func waitForDelivery() {
        queue.sync {}
    }

    /// Ends every observation: commits published before it still reach the mailboxes, then
    /// sequences finish after what they hold, callbacks stop, and later `add` calls throw.
    /// Idempotent.
    func close() {
        waitForDelivery()
        let all = state.withLock { s in
            s.closed = true
            s.pending.removeAll()
            defer { s.subscribers.removeAll() }
            return Array(s.subscribers.values)
        }
        for subscriber in all { subscriber.finish() }
    }
}
