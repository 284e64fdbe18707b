import StrataStorage

/// How a store runs transactions: the public `runInTransaction` (savepoints when nested) and
/// `runInReadOnlyTransaction`, and the two entry points every box operation goes through,
/// ``Store/write(in:_:)`` and ``Store/read(consistent:in:_:)``, which find the running
/// transaction (a bound box's, or the thread's) or start one.
extension Store {
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
        try withWriteTransaction { _ in try body() }
    }

    /// ``runInTransaction(_:)`` handing `body` the transaction it runs in (the thread's, as a
    /// savepoint, or a new one), so that nothing below looks it up again.
    func withWriteTransaction<R>(_ body: (Transaction) throws -> R) throws -> R {
        try checkOpen()
        if let current = TransactionContext.current(for: self) { return try Self.join(current, body) }
        return try startWriteTransaction(body)
    }

    /// Runs `body` in the running transaction `t` as a savepoint; a read transaction refuses.
    private static func join<R>(_ t: Transaction, _ body: (Transaction) throws -> R) throws -> R {
        guard t.isWrite else { throw StrataError.readOnly }
        return try withSavepoint(t) { try body(t) }
    }

    /// Starts, runs and commits a write transaction, for a caller that found none running on
    /// this thread (and checked that the store is open).
    private func startWriteTransaction<R>(_ body: (Transaction) throws -> R) throws -> R {
        guard !isReadOnly else { throw StrataError.readOnly }
        writeLock.lock()
        let transaction = Transaction(store: self, kind: .write, snapshot: nil)
        TransactionContext.push(transaction)
        let result: R
        do {
            result = try body(transaction)
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
        try withReadTransaction { _ in try body() }
    }

    /// ``runInReadOnlyTransaction(_:)`` handing `body` the transaction it runs in (the
    /// thread's, which may be a write transaction, or a new read transaction).
    func withReadTransaction<R>(_ body: (Transaction) throws -> R) throws -> R {
        try checkOpen()
        if let current = TransactionContext.current(for: self) { return try body(current) }
        return try startReadTransaction(body)
    }

    /// Takes a snapshot and runs `body` in a read transaction on it, for a caller that found
    /// none running on this thread (and checked that the store is open).
    private func startReadTransaction<R>(_ body: (Transaction) throws -> R) throws -> R {
        let snapshot: Snapshot
        do { snapshot = try engine.snapshot() } catch { throw StrataError(error) }
        defer { snapshot.release() }
        let transaction = Transaction(store: self, kind: .read, snapshot: snapshot)
        TransactionContext.push(transaction)
        defer {
            TransactionContext.pop()
            transaction.end()
        }
        return try body(transaction)
    }

    /// Runs `body` in the current write transaction, as a savepoint (an operation that fails
    /// leaves nothing of itself behind), or in a new transaction. `pinned`, a bound box's
    /// transaction (``StoreTransaction/box(for:)``), is the current one without a lookup. The
    /// one place a write checks that the store is open: `body` gets the transaction and
    /// writes into it (``Transaction/put(_:mode:binding:)``), never coming back here.
    func write<R>(in pinned: PinnedTransaction? = nil, _ body: (Transaction) throws -> R) throws(StrataError) -> R {
        do {
            try checkOpen()
            if let t = try pinned?.running() ?? TransactionContext.current(for: self) { return try Self.join(t, body) }
            // None runs on this thread: start one without looking again.
            return try startWriteTransaction(body)
        } catch {
            throw StrataError(error)
        }
    }

    /// Runs `body` with the current transaction, or a new read transaction when `consistent`
    /// (several reads that must agree), or the store's ``latest`` (one read of the latest
    /// state). `pinned`, a bound box's transaction, is the current one without a lookup.
    func read<R>(consistent: Bool, in pinned: PinnedTransaction? = nil, _ body: (Transaction) throws -> R) throws(StrataError) -> R {
        do {
            if let t = try pinned?.running() ?? TransactionContext.current(for: self) { return try body(t) }
            if consistent {
                try checkOpen()
                return try startReadTransaction(body)
            }
            return try body(latest)
        } catch {
            throw StrataError(error)
        }
    }
}
