import Foundation

/// A value shared between a test and the callbacks it registers, behind a lock that
/// ThreadSanitizer sees. `Synchronization.Mutex` waits on a futex from a library built without
/// TSan's instrumentation, so TSan reports the value's accesses from two threads as a race
/// although the mutex orders them.
public final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    public init(_ value: Value) { self.value = value }

    public func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
