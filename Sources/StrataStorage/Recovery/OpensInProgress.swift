import Dispatch

/// The engine opens under way in this process, so that work which can wait gives them the CPU.
///
/// An open replays its log and opens its segments on every core it has; freeing the block cache
/// of the engine closed just before (tens of thousands of blocks, long out of the CPU caches,
/// about 7 ms of one core) took a core from it: the object-graph benchmark's close, open and
/// count took 10.4 ms with a full cache freed beside the open, 7.9 ms with none to free. The
/// freeing waits for the opens, never for long (``waitUntilNone(atMostSeconds:)``), and still
/// happens; it only no longer runs beside an open.
enum OpensInProgress {
    private static let lock = ConditionLock()
    nonisolated(unsafe) private static var count = 0

    /// Runs `body` (an open's recovery) counted as an open in progress.
    static func during<R>(_ body: () throws -> R) rethrows -> R {
        lock.withLock { count += 1 }
        defer {
            lock.withLock {
                count -= 1
                if count == 0 { lock.broadcast() }
            }
        }
        return try body()
    }

    /// Returns once no open is in progress, or after `limit` seconds whatever the opens do (a
    /// process opening stores without pause must still free what it closed).
    static func waitUntilNone(atMostSeconds limit: Double) {
        lock.lock()
        defer { lock.unlock() }
        let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(max(0, limit) * 1e9)
        while count > 0 {
            let now = DispatchTime.now().uptimeNanoseconds
            if now >= deadline { return }
            let left = Double(deadline - now) / 1e9
            lock.wait(timeoutSeconds: left)
        }
    }
}
