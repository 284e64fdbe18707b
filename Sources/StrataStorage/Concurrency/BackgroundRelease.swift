import Dispatch

/// Memory a closing engine or a dropped segment no longer needs (the block cache's blocks, the
/// opened id blocks of encrypted segments), freed on one background thread, a chunk at a time,
/// each chunk after any engine open in progress (``OpensInProgress``).
///
/// Why one thread: a closing engine drops its cache and then, segment by segment, the blocks
/// its encrypted segments opened. Each on a thread of its own (two or more on a 2-core machine)
/// took every core from the caller, who is often opening the store again, and their `free`
/// calls held the allocator's lock against its `malloc` calls: in a profile of the object-graph
/// benchmark's encrypted close, open and count (35 ms), the opening thread waited 8 ms off CPU
/// on that lock. A serial queue frees one chunk at a time, and leaves the other cores to the
/// caller.
enum BackgroundRelease {
    private static let queue = DispatchQueue(label: "strata.background-release", qos: .utility)

    /// How long items wait before the release thread starts on them.
    ///
    /// Why: waiting for opens in progress was not enough. A caller who closes a store mostly goes
    /// on at once: it opens the store again, drops the store it closed (whose engine's segments
    /// hand their opened blocks here as they go), and reads. Released at once, the closing
    /// engine's memory was freed during all of that, on the second core and under the allocator's
    /// lock: in the object-graph benchmark's reopen phase, dropping the closed encrypted store
    /// took 1.8–8.0 ms (plaintext 0.9–2.5 ms) with frees starting at once, 1.8–2.7 ms
    /// (0.5–1.6 ms) with them starting 50 ms later (2026-12-08, 5 runs each). The memory is
    /// accounted as free when it is handed over (``OpenedBlockBudget``); only its return to the
    /// allocator waits.
    static let startDelaySeconds = 0.05

    /// Drops `items` on the release thread, `chunk` at a time (the last ones first), starting
    /// ``startDelaySeconds`` later, each chunk after any engine open in progress, never waiting
    /// longer than a quarter of a second for one.
    static func drop<Item>(_ items: [Item], chunk: Int) {
        guard !items.isEmpty else { return }
        let held = Held(items)
        let chunk = max(1, chunk)
        queue.asyncAfter(deadline: .now() + startDelaySeconds) {
            while !held.items.isEmpty {
                OpensInProgress.waitUntilNone(atMostSeconds: 0.25)
                held.items.removeLast(min(chunk, held.items.count))
            }
        }
    }

    /// Items on their way to the release thread: owned by one thread at a time (the caller's,
    /// then the release thread's).
    private final class Held<Item>: @unchecked Sendable {
        // @unchecked Sendable: handed from the caller to the release thread, never shared.
        var items: [Item]
        init(_ items: [Item]) { self.items = items }
    }
}
