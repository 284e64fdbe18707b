import Dispatch
import StrataStorage

/// A query's value now and after every commit that can change it, as an `AsyncSequence`: the
/// first element is the value when iteration starts; each later one is read after one or more
/// commits touched an entity the query reads (its own, and those its links and orderings
/// read). Commits that land while the consumer is busy are coalesced into one new read, so a
/// slow consumer always gets the latest value and never a backlog.
///
/// Reads are at least `minimumInterval` apart (5 ms by default, under a display frame): a
/// commit that follows a read by longer is read at once; commits that follow closely wait for
/// the end of the interval and are read together. Without it, every observer re-reads after
/// every commit of a fast writer and their reads take the writer's CPU.
///
/// Get one with ``Query/observe(minimumInterval:)``, ``Query/observeCount(minimumInterval:)`` or ``Query/observeIds(minimumInterval:)``. Each
/// value is read in the consuming task, from one consistent snapshot: objects never cross
/// tasks. The sequence finishes when the store is closed, the task is cancelled, or it is
/// released; a read that fails (for example a damaged object) throws from `next()`.
///
/// ```swift
/// let big = try orders.query { Order.amount > 100 }.build()
/// for try await list in big.observe() {
///     render(list)            // now, then after every commit that touches orders
/// }
/// ```
public struct QueryObservation<Value>: AsyncSequence {
    public typealias Element = Value
    public typealias Failure = StrataError

    let store: Store
    let entities: Set<String>
    let minimumInterval: Duration
    let read: () throws(StrataError) -> Value

    public struct AsyncIterator: AsyncIteratorProtocol {
        let observation: QueryObservation
        var registration: ObservationRegistration?
        var started = false
        var throttle: ReadThrottle

        public mutating func next() async throws(StrataError) -> Value? {
            try await next(isolation: nil)
        }

        public mutating func next(isolation actor: isolated (any Actor)?) async throws(StrataError) -> Value? {
            if !started {
                started = true
                // Registered before the first read: a commit between the two is not missed.
                registration = try ObservationRegistration(hub: observation.store.changeHub,
                                                           subscriber: ChangeSubscriber(entityNames: observation.entities))
                throttle.reading()
                return try observation.read()
            }
            guard let registration, await registration.subscriber.next() != nil else {
                self.registration = nil
                return nil
            }
            if let due = throttle.due {
                // Later commits merge meanwhile; cancellation ends the wait and the sequence.
                do { try await Task.sleep(until: due, clock: .continuous) } catch {
                    self.registration = nil
                    return nil
                }
                _ = registration.subscriber.take()
            }
            throttle.reading()
            return try observation.read()
        }
    }

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(observation: self, throttle: ReadThrottle(minimumInterval: minimumInterval))
    }
}

/// The defaults of query observation.
public enum QueryObservationDefaults {
    /// The shortest time between two reads of an observed query: 5 ms.
    public static let minimumInterval: Duration = .milliseconds(5)
}

/// A query and the serial queue it runs on: a `Query` is used by one thread at a time, and
/// every use of this one is a block on `queue`.
private final class QueryOnQueue<T: Entity>: @unchecked Sendable {
    let query: Query<T>
    init(_ query: Query<T>) { self.query = query }
}

extension Query {
    /// Observes the matching objects (see ``QueryObservation``).
    ///
    /// ```swift
    /// for try await customers in try customersBox.query { Customer.name.startsWith("A") }.build().observe() {
    ///     print(customers.count)
    /// }
    /// ```
    public func observe(minimumInterval: Duration = QueryObservationDefaults.minimumInterval) -> QueryObservation<[T]> {
        QueryObservation(store: box.store, entities: readEntities, minimumInterval: minimumInterval) { () throws(StrataError) in
            try self.find()
        }
    }

    /// Observes the number of matching objects (see ``QueryObservation``).
    public func observeCount(minimumInterval: Duration = QueryObservationDefaults.minimumInterval) -> QueryObservation<Int> {
        QueryObservation(store: box.store, entities: readEntities, minimumInterval: minimumInterval) { () throws(StrataError) in
            try self.count()
        }
    }

    /// Observes the ids of the matching objects, in the query's order (see ``QueryObservation``).
    public func observeIds(minimumInterval: Duration = QueryObservationDefaults.minimumInterval) -> QueryObservation<[Id]> {
        QueryObservation(store: box.store, entities: readEntities, minimumInterval: minimumInterval) { () throws(StrataError) in
            try self.findIds()
        }
    }

    /// Calls `callback` on `queue` (by default a serial queue of the observation's own) with
    /// the matching objects now, and again after every commit that can change them; commits
    /// that land while a call runs are coalesced into one later call, and calls are at least
    /// `minimumInterval` apart (see ``QueryObservation``). The query is used only from that
    /// queue from now on: do not run it elsewhere while subscribed.
    ///
    /// Keep the token: releasing it or ``ObservationToken/cancel()`` ends the observation,
    /// and so does closing the store. A read that fails is passed as `.failure`.
    ///
    /// ```swift
    /// let token = try query.subscribe { result in
    ///     if case let .success(orders) = result { print(orders.count) }
    /// }
    /// ```
    public func subscribe(queue: DispatchQueue? = nil, minimumInterval: Duration = QueryObservationDefaults.minimumInterval,
                          _ callback: @escaping @Sendable (Result<[T], StrataError>) -> Void) throws(StrataError) -> ObservationToken {
        try box.store.checkOpen()
        let queue = queue ?? DispatchQueue(label: "strata.query-observer")
        let q = QueryOnQueue(self)
        let throttle = LockedValue(ReadThrottle(minimumInterval: minimumInterval))
        let run: @Sendable () -> Void = {
            let result = Result { () throws(StrataError) in try q.query.find() }
            // The interval is counted from the call, not from the read: a slow read (a first
            // one, a busy machine) would otherwise bring the next call closer than promised.
            // Reads stay at least the interval apart all the same.
            throttle.withLock { $0.reading() }
            callback(result)
        }
        let registration = try CallbackObservation.start(names: readEntities, hub: box.store.changeHub, queue: queue) { _ in
            run()
        } delay: {
            throttle.withLock { $0.delay }
        }
        queue.async {
            if !registration.subscriber.isFinished { run() }
        }
        return ObservationToken(registration)
    }
}
