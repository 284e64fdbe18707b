#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A value behind a pthread mutex. Used instead of `Synchronization.Mutex` where threads
/// really contend: on Linux, Mutex locks through futex calls inside the prebuilt
/// Synchronization library, which ThreadSanitizer cannot see, so every access it protects was
/// reported as a race (seen with Swift 6.3.1). pthread locks are intercepted by TSan, so race
/// reports stay meaningful. Public so that the object layer shares the same primitive.
///
/// ```swift
/// let counter = LockedValue(0)
/// counter.withLock { $0 += 1 }
/// ```
public final class LockedValue<Value>: @unchecked Sendable {
    // @unchecked Sendable: the value is reached only inside `withLock`, under the lock.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    /// Only touched with the mutex held, which already excludes a second access (a nested
    /// `withLock` on the same value would deadlock before it could overlap): the dynamic
    /// exclusivity check Swift adds to a class's stored property is dead weight on every read
    /// of the engine's state.
    @exclusivity(unchecked) private var value: Value

    public init(_ value: Value) {
        self.value = value
        mutex = .allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    @inline(__always)
    public func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
