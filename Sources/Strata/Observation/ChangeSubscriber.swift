import StrataStorage

/// One observer's mailbox: the changes of the entities it watches, merged until it takes them.
/// Offering never blocks and never waits for the observer, and the mailbox holds at most one
/// (merged) value, so a slow or stuck observer costs a writer nothing and its memory is bounded
/// by the ids changed, never by the number of commits.
///
/// Two ways to take: ``next()`` suspends an async consumer until something arrives; a callback
/// observer gives a `wake` closure, called (outside the lock) when the mailbox goes from
/// empty to full, which schedules the callback.
final class ChangeSubscriber: Sendable {
    private struct State {
        var pending: StoreChanges?
        var waiter: CheckedContinuation<StoreChanges?, Never>?
        /// Cancelled, released or its store closed: takes nothing more.
        var finished = false
    }

    let entityNames: Set<String>
    private let state = LockedValue(State())
    private let wake: (@Sendable () -> Void)?

    init(entityNames: Set<String>, wake: (@Sendable () -> Void)? = nil) {
        self.entityNames = entityNames
        self.wake = wake
    }

    /// Adds a commit's changes if they touch the watched entities. Returns whether a callback
    /// observer needs ``wakeUp()`` (the mailbox went from empty to full): the hub wakes each
    /// observer once per burst of commits, after offering them all.
    func offer(_ changes: StoreChanges) -> Bool {
        guard changes.touches(entityNames) else { return false }
        // Most observers watch every entity a commit touched: no copy then.
        let mine = changes.entities.keys.allSatisfy(entityNames.contains) ? changes : changes.restricted(to: entityNames)
        let (resume, value, needsWake) = state.withLock { s -> (CheckedContinuation<StoreChanges?, Never>?, StoreChanges?, Bool) in
            guard !s.finished else { return (nil, nil, false) }
            let wasEmpty = s.pending == nil
            if s.pending == nil { s.pending = mine } else { s.pending!.merge(mine) }
            guard let w = s.waiter else { return (nil, nil, wasEmpty) }
            s.waiter = nil
            defer { s.pending = nil }
            return (w, s.pending, false)
        }
        resume?.resume(returning: value)
        return needsWake
    }

    /// Tells a callback observer that its mailbox holds changes.
    func wakeUp() { self.wake?() }

    /// Takes what is pending, or nil.
    func take() -> StoreChanges? {
        state.withLock { s in
            defer { s.pending = nil }
            return s.pending
        }
    }

    var isFinished: Bool { state.withLock { $0.finished } }

    /// The next changes; nil once finished (cancelled, released, store closed) with nothing
    /// pending. A cancelled task gets nil at once.
    func next() async -> StoreChanges? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<StoreChanges?, Never>) in
                let now: StoreChanges?? = state.withLock { s in
                    if let p = s.pending {
                        s.pending = nil
                        return .some(p)
                    }
                    if s.finished || Task.isCancelled { return .some(nil) }
                    s.waiter = c
                    return .none
                }
                if let now { c.resume(returning: now) }
            }
        } onCancel: {
            // Only the waiting consumer ends; the mailbox stays for a later next() to see
            // it finished only if the observer itself is released or cancelled.
            let w = state.withLock { s in
                defer { s.waiter = nil }
                return s.waiter
            }
            w?.resume(returning: nil)
        }
    }

    /// Ends the mailbox: a waiting consumer gets what is pending, or nil; later offers are
    /// dropped. Idempotent.
    func finish() {
        let w = state.withLock { s -> CheckedContinuation<StoreChanges?, Never>? in
            s.finished = true
            defer { s.waiter = nil }
            return s.waiter
        }
        w?.resume(returning: take())
        wake?()
    }
}
