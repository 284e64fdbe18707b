import Dispatch

/// The transaction an async ``Store/write(_:)`` or ``Store/read(_:)`` body runs in, passed to
/// it explicitly. It is valid only inside that body, on the thread running it: it is not
/// `Sendable`, so the compiler keeps it (and the objects read through it) from escaping into
/// another task.
///
/// ```swift
/// let id = try await store.write { tx in
///     try tx.box(for: Customer.self).put(Customer(name: "Ada"))
/// }
/// ```
public struct StoreTransaction {
    /// The store the transaction belongs to.
    public let store: Store
    /// Whether the body may write.
    public let isWrite: Bool
    private let pinned: PinnedTransaction

    init(_ transaction: Transaction) {
        store = transaction.store
        isWrite = transaction.isWrite
        pinned = PinnedTransaction(transaction: transaction)
    }

    /// The box of `type`, bound to this transaction: its calls, and the queries made from it,
    /// run in this transaction without looking it up. Used after the body returned, or on
    /// another thread, it throws ``StrataError/transactionEnded``.
    ///
    /// ```swift
    /// let names = try await store.read { tx in
    ///     try tx.box(for: Customer.self).query { $0.city == "Oslo" }.build().find().map(\.name)
    /// }
    /// ```
    public func box<T: Entity>(for type: T.Type) -> Box<T> {
        Box(store: store, binding: store.binding(for: type), pinned: pinned)
    }
}

@available(*, unavailable, message: "a transaction belongs to the body it was passed to")
extension StoreTransaction: Sendable {}

extension Store {
    /// Runs `body` in one write transaction on a thread of the store's, off the caller's: the
    /// caller's task suspends (it blocks no thread) while the transaction waits for the write
    /// lock, runs and commits, the commit's fsync included. Returns what `body` returns, or
    /// throws what it throws (everything it wrote is then rolled back). Writers stay
    /// serialised, whatever thread or task they come from.
    ///
    /// Throws `CancellationError` when the task is cancelled before the transaction starts.
    ///
    /// ```swift
    /// let id = try await store.write { tx in
    ///     let c = Customer(name: "Ada")
    ///     return try tx.box(for: Customer.self).put(c)
    /// }
    /// ```
    public func write<R>(_ body: @escaping @Sendable (StoreTransaction) throws -> sending R) async throws -> sending R {
        try await runOff(asyncQueues.writes) { [self] in
            try withWriteTransaction { try body(StoreTransaction($0)) }
        }
    }

    /// Runs `body` against one consistent snapshot on a thread of the store's, off the
    /// caller's; reads run in parallel with each other and with writers.
    ///
    /// The result is `sending`: objects the body read (entities are not `Sendable`) cross to
    /// the caller, a `@MainActor` view model say, because nothing else holds them once the
    /// body returns. Their lazy relations still load, outside any transaction, from the
    /// store's latest state. What may not cross: the ``StoreTransaction`` itself, and objects
    /// the body stored somewhere else as well (the compiler refuses both).
    ///
    /// ```swift
    /// @MainActor final class CustomersModel {
    ///     var customers: [Customer] = []
    ///     func load(from store: Store) async throws {
    ///         customers = try await store.read { tx in try tx.box(for: Customer.self).all() }
    ///         print(customers.first?.orders.count ?? 0)   // loads on the main actor
    ///     }
    /// }
    /// ```
    public func read<R>(_ body: @escaping @Sendable (StoreTransaction) throws -> sending R) async throws -> sending R {
        try await runOff(asyncQueues.reads) { [self] in
            try withReadTransaction { try body(StoreTransaction($0)) }
        }
    }

    private func runOff<R>(_ queue: DispatchQueue, _ work: @escaping @Sendable () throws -> sending R) async throws -> sending R {
        try Task.checkCancellation()
        try checkOpen()
        return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<R, any Error>) in
            queue.async {
                do {
                    continuation.resume(returning: try work())
                } catch {
                    continuation.resume(throwing: error)
                }
            }
        }
    }
}

/// The queues async transactions run on. Writes go through one serial queue: they would
/// only wait for the write lock on many threads otherwise. Reads share a concurrent one.
struct AsyncQueues: Sendable {
    let writes = DispatchQueue(label: "strata.writes")
    let reads = DispatchQueue(label: "strata.reads", attributes: .concurrent)
}
