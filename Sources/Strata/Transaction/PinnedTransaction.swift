/// The transaction a box from ``StoreTransaction/box(for:)`` (and every query made from it) is
/// bound to: its calls run in that transaction directly, without looking up the transactions
/// open on the thread. `Box` is `Sendable`, so a bound box can be carried out of its body or to
/// another thread; each use checks that the body is still running on the calling thread, and
/// throws ``StrataError/transactionEnded`` otherwise, before anything is read or written.
struct PinnedTransaction: @unchecked Sendable {
    // @unchecked: the transaction is only used after `running()` has confirmed, on the calling
    // thread, that this is the thread running its body; its state is that thread's alone.
    let transaction: Transaction

    /// The transaction, when its body is running on this thread.
    @inline(__always)
    func running() throws(StrataError) -> Transaction {
        guard transaction.isRunningOnCurrentThread else { throw .transactionEnded }
        return transaction
    }
}
