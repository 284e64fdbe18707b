import StrataStorage

/// Hands each commit's changes to the store's observers, in commit order, after the commit is
/// durable and outside the write lock.
///
/// A commit is queued (``enqueue(_:)``) while its writer still holds the write lock, so the
/// queue is in commit order; the writer delivers (``deliverPending()``) after releasing it.
/// Whoever delivers drains the whole queue, and a writer that finds a delivery under way leaves
/// its commit to it: delivery is ordered without anyone waiting for anyone. Delivering only
/// merges into each observer's mailbox (``ChangeSubscriber``): observers run elsewhere.
/// State sits behind a pthread mutex (`LockedValue`), which ThreadSanitizer sees.
final class ChangeHub: Sendable {
    private struct State {
        var subscribers: [UInt64: ChangeSubscriber] = [:]
        var nextId: UInt64 = 1
        var queue: [StoreChanges] = []
        var delivering = false
        var closed = false
    }

    private let state = LockedValue(State())

    /// Whether anyone observes: commits skip building their public changes when nobody does.
    var hasSubscribers: Bool { state.withLock { !$0.subscribers.isEmpty } }

    /// Registers `subscriber`; throws ``StrataError/storeClosed`` once the store is closed.
    func add(_ subscriber: ChangeSubscriber) throws(StrataError) -> UInt64 {
        let id: UInt64? = state.withLock { s in
            guard !s.closed else { return nil }
            defer { s.nextId += 1 }
            s.subscribers[s.nextId] = subscriber
            return s.nextId
        }
        guard let id else { throw .storeClosed }
        return id
    }

    /// Unregisters and finishes a subscriber (cancelled or released).
    func remove(_ id: UInt64) {
        state.withLock { $0.subscribers.removeValue(forKey: id) }?.finish()
    }

    /// Queues a commit's changes. Called with the write lock held.
    func enqueue(_ changes: StoreChanges) {
        state.withLock { s in if !s.closed { s.queue.append(changes) } }
    }

    /// Delivers every queued commit, oldest first, unless another thread is delivering (it
    /// will deliver these too). Called without the write lock.
    func deliverPending() {
        let start = state.withLock { s -> Bool in
            if s.delivering || s.queue.isEmpty { return false }
            s.delivering = true
            return true
        }
        guard start else { return }
        while true {
            // Finding the queue empty and giving up the delivery happen under one lock: a
            // commit queued after that finds nobody delivering and delivers itself.
            let next = state.withLock { s -> (StoreChanges, [ChangeSubscriber])? in
                if s.queue.isEmpty {
                    s.delivering = false
                    return nil
                }
                return (s.queue.removeFirst(), Array(s.subscribers.values))
            }
            guard let (changes, subscribers) = next else { return }
            for subscriber in subscribers { subscriber.offer(changes) }
        }
    }

    /// Ends every observation: sequences finish after what they have pending, callbacks stop,
    /// and later `add` calls throw. Idempotent.
    func close() {
        let all = state.withLock { s in
            s.closed = true
            s.queue.removeAll()
            defer { s.subscribers.removeAll() }
            return Array(s.subscribers.values)
        }
        for subscriber in all { subscriber.finish() }
    }
}
