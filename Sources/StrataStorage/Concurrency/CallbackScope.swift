#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

/// Runs an app's callback (an engine event listener, a store's index progress) so that a call
/// back into the engine or the store from inside it is refused with
/// ``StorageError/calledFromCallback(_:)`` instead of waiting for the work that is waiting for
/// the callback: a deadlock.
///
/// ```swift
/// options.eventListener = { event in
///     // try engine.flush()   // would throw StorageError.calledFromCallback
///     DispatchQueue.global().async { try? engine.flush() }   // fine: runs after the callback
/// }
/// ```
public enum CallbackScope {
    /// Callbacks running on any thread: when 0 (nearly always), the check costs one load.
    private static let running = Atomic<Int>(0)

    /// This thread's callback, as an index into ``names`` + 1 (0: none).
    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        return key
    }()

    /// Runs `body`, a callback named `name` (for the error), marking this thread as inside it.
    public static func run(_ name: StaticString, _ body: () -> Void) {
        let previous = pthread_getspecific(key)
        running.add(1, ordering: .relaxed)
        pthread_setspecific(key, UnsafeRawPointer(name.utf8Start))
        defer {
            pthread_setspecific(key, previous)
            running.subtract(1, ordering: .relaxed)
        }
        body()
    }

    /// The name of the callback running on this thread, if any.
    public static var current: String? {
        guard running.load(ordering: .relaxed) != 0, let p = pthread_getspecific(key) else { return nil }
        return String(cString: p.assumingMemoryBound(to: CChar.self))
    }

    /// Throws ``StorageError/calledFromCallback(_:)`` inside a callback.
    @inline(__always)
    public static func check() throws(StorageError) {
        if running.load(ordering: .relaxed) != 0, let name = current { throw .calledFromCallback(name) }
    }
}
