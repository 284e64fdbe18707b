#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The transactions open on the current thread, so that box operations inside
/// `runInTransaction` join it. Thread-local (not task-local): a task started inside a
/// transaction must not write into it after it has ended.
enum TransactionContext {
    private final class Stack {
        // One thread's: no access can overlap another, and a point read looks here first, so
        // the runtime's exclusivity check (a thread-local lookup each time) is not paid.
        @exclusivity(unchecked) var transactions: [Transaction] = []
    }

    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        #if canImport(Darwin)
        pthread_key_create(&key) { Unmanaged<AnyObject>.fromOpaque($0).release() }
        #else
        pthread_key_create(&key) { if let p = $0 { Unmanaged<AnyObject>.fromOpaque(p).release() } }
        #endif
        return key
    }()

    private static var stack: Stack? {
        guard let p = pthread_getspecific(key) else { return nil }
        return Unmanaged<Stack>.fromOpaque(p).takeUnretainedValue()
    }

    /// The innermost transaction of `store` open on this thread.
    static func current(for store: Store) -> Transaction? {
        guard let s = stack, !s.transactions.isEmpty else { return nil }
        for t in s.transactions.reversed() where t.store === store { return t }
        return nil
    }

    static func push(_ transaction: Transaction) {
        let s: Stack
        if let existing = stack {
            s = existing
        } else {
            s = Stack()
            pthread_setspecific(key, Unmanaged.passRetained(s as AnyObject).toOpaque())
        }
        s.transactions.append(transaction)
    }

    static func pop() {
        stack?.transactions.removeLast()
    }
}
