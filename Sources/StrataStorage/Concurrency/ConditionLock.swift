#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A mutex with a condition variable, for the places where threads must wait for a state change
/// (the commit queue, flush completion). `Synchronization.Mutex` has no wait, hence this small
/// wrapper over pthreads. Memory is heap-allocated so the pthread objects never move.
///
/// ```swift
/// lock.withLock { while !ready { lock.wait() } }
/// ```
public final class ConditionLock: @unchecked Sendable {
    // @unchecked Sendable: it is the lock; its mutex and condition are only used through pthread calls.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let cond: UnsafeMutablePointer<pthread_cond_t>

    public init() {
        mutex = .allocate(capacity: 1)
        cond = .allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(cond, nil)
    }

    deinit {
        pthread_cond_destroy(cond)
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
        cond.deallocate()
    }

    public func lock() { pthread_mutex_lock(mutex) }
    public func unlock() { pthread_mutex_unlock(mutex) }
    /// REQUIRES: the lock is held. Releases it while waiting.
    public func wait() { pthread_cond_wait(cond, mutex) }
    public func broadcast() { pthread_cond_broadcast(cond) }

    /// REQUIRES: the lock is held. Like ``wait()``, but returns after `timeoutSeconds` at most
    /// (a background thread that also works on a timer).
    public func wait(timeoutSeconds: Double) {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        let nanos = Int(now.tv_nsec) + Int(max(0, min(timeoutSeconds, 3600)) * 1e9)
        var deadline = timespec()
        deadline.tv_sec = now.tv_sec + nanos / 1_000_000_000
        deadline.tv_nsec = nanos % 1_000_000_000
        _ = pthread_cond_timedwait(cond, mutex, &deadline)
    }

    @inline(__always)
    public func withLock<R>(_ body: () throws -> R) rethrows -> R {
        lock()
        defer { unlock() }
        return try body()
    }
}
