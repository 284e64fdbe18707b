import Dispatch

/// A registration with a store's observers; releasing it (or ``cancel()``) stops the
/// observation at once: its mailbox is finished and dropped.
final class ObservationRegistration: Sendable {
    let subscriber: ChangeSubscriber
    private let hub: ChangeHub
    private let id: UInt64

    init(hub: ChangeHub, subscriber: ChangeSubscriber) throws(StrataError) {
        self.hub = hub
        self.subscriber = subscriber
        id = try hub.add(subscriber)
    }

    func cancel() { hub.remove(id) }

    deinit { hub.remove(id) }
}

/// The committed changes of some entities, as an `AsyncSequence`: one element per commit that
/// touched them, or, when the consumer was busy, one element for all the commits since it
/// last took one (their net effect; ``StoreChanges/commits`` counts them). Memory stays
/// bounded whatever the pace of writers.
///
/// Observation starts when the sequence is made, so a commit right after
/// `Store.changes(of:)` returns is never missed. Only commits are seen (never a rollback or a
/// rolled-back savepoint), after they are durable at the store's level and after their writer
/// released the write lock. The sequence finishes when the store is closed (after the changes
/// it already holds), when the consuming task is cancelled, or when it is released.
///
/// ```swift
/// let changes = try store.changes(of: Customer.self, Order.self)
/// Task {
///     for await change in changes {
///         refresh(customers: change[Customer.self].all, orders: change[Order.self].all)
///     }
/// }
/// ```
public struct StoreChangeSequence: AsyncSequence, Sendable {
    public typealias Element = StoreChanges
    public typealias Failure = Never

    let registration: ObservationRegistration

    public struct AsyncIterator: AsyncIteratorProtocol {
        let registration: ObservationRegistration

        public mutating func next() async -> StoreChanges? {
            await registration.subscriber.next()
        }

        public mutating func next(isolation actor: isolated (any Actor)?) async -> StoreChanges? {
            await registration.subscriber.next()
        }
    }

    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(registration: registration) }

    /// Stops the observation: a waiting `next()` returns nil, and so does every later one.
    public func cancel() { registration.cancel() }
}

/// Keeps a callback observation alive; ``cancel()`` or releasing it stops the callbacks at once
/// (a callback already running finishes).
///
/// ```swift
/// let token = try store.subscribe(to: Customer.self) { changes in print(changes[Customer.self]) }
/// // …
/// token.cancel()
/// ```
public final class ObservationToken: Sendable {
    let registration: ObservationRegistration

    init(_ registration: ObservationRegistration) { self.registration = registration }

    /// Stops the callbacks. Idempotent.
    public func cancel() { registration.cancel() }
}

extension Store {
    /// Observes the committed changes of `types` (see ``StoreChangeSequence``).
    ///
    /// Throws ``StrataError/storeClosed`` on a closed store.
    ///
    /// ```swift
    /// for await change in try store.changes(of: Customer.self) {
    ///     print(change[Customer.self].inserted)
    /// }
    /// ```
    public func changes(of types: any Entity.Type...) throws(StrataError) -> StoreChangeSequence {
        try changes(of: types)
    }

    /// Observes the committed changes of `types` (see ``StoreChangeSequence``).
    public func changes(of types: [any Entity.Type]) throws(StrataError) -> StoreChangeSequence {
        try checkOpen()
        let subscriber = ChangeSubscriber(entityNames: Set(types.map { $0._strataSchema.name }))
        return StoreChangeSequence(registration: try ObservationRegistration(hub: changeHub, subscriber: subscriber))
    }

    /// Calls `callback` on `queue` (by default a serial queue of the observation's own) after
    /// every commit that touched `types`; while a callback runs, later commits are merged
    /// into the next call, so callbacks never pile up. Never called for a rollback, never
    /// while a writer holds the write lock; a slow callback delays no writer.
    ///
    /// Keep the returned token: releasing it, or ``ObservationToken/cancel()``, ends the
    /// observation. Closing the store ends it too. Throws ``StrataError/storeClosed`` on a
    /// closed store.
    ///
    /// ```swift
    /// let token = try store.subscribe(to: Customer.self, Order.self) { changes in
    ///     print(changes[Order.self].inserted.count, "new orders")
    /// }
    /// ```
    public func subscribe(to types: any Entity.Type..., queue: DispatchQueue? = nil,
                          _ callback: @escaping @Sendable (StoreChanges) -> Void) throws(StrataError) -> ObservationToken {
        try checkOpen()
        let names = Set(types.map { $0._strataSchema.name })
        return ObservationToken(try CallbackObservation.start(names: names, hub: changeHub, queue: queue) { changes in
            callback(changes)
        })
    }
}

/// Runs an observation's callback on a serial queue: at most one call scheduled or running at
/// a time, each taking everything merged since the previous one.
enum CallbackObservation {
    /// `delay`, when given, says how long to wait before the next call (nil: call now); the
    /// changes that land meanwhile are merged into that call.
    static func start(names: Set<String>, hub: ChangeHub, queue: DispatchQueue?,
                      _ deliver: @escaping @Sendable (StoreChanges) -> Void,
                      delay: (@Sendable () -> Duration?)? = nil) throws(StrataError) -> ObservationRegistration {
        let queue = queue ?? DispatchQueue(label: "strata.observer")
        // The mailbox calls `wake` when it goes from empty to full: one block is scheduled
        // per batch, and it drains what is there when it runs.
        let box = WeakSubscriber()
        let drain: @Sendable () -> Void = {
            guard let s = box.subscriber, !s.isFinished, let changes = s.take() else { return }
            deliver(changes)
        }
        let subscriber = ChangeSubscriber(entityNames: names) {
            queue.async {
                if let wait = delay?(), wait > .zero {
                    let (seconds, attoseconds) = wait.components
                    let nanoseconds = Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000)
                    queue.asyncAfter(deadline: .now() + .nanoseconds(nanoseconds), execute: drain)
                } else {
                    drain()
                }
            }
        }
        box.subscriber = subscriber
        return try ObservationRegistration(hub: hub, subscriber: subscriber)
    }
}

/// The mailbox, seen from the blocks it schedules without keeping it alive.
private final class WeakSubscriber: @unchecked Sendable {
    // @unchecked Sendable: `subscriber` is set once, before any block that reads it is scheduled.
    // Set once, before the subscriber is registered (and so before any block runs).
    weak var subscriber: ChangeSubscriber?
}
