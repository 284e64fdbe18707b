import StrataTestSupport
import Foundation
import Synchronization
import Testing
@testable import StrataStorage

/// A call into the engine from its event listener (which runs while a flush or a compaction
/// waits for it) is a typed error, not a deadlock (issue 39).
@Suite struct CallbackReentryTests {
    final class Ref: @unchecked Sendable {
        var engine: Engine?
    }

    @Test(.timeLimit(.minutes(1)))
    func engineCallsFromTheEventListenerAreRefusedNotDeadlocked() throws {
        let ref = Ref()
        let outcomes = Mutex<[String]>([])
        var options = EngineOptions.testing()
        options.eventListener = { event in
            guard case .flushBegan = event, let e = ref.engine else { return }
            for (name, call) in [("flush", { try e.flush() }), ("put", { try e.put("x", "y", in: e.defaultKeySpace) }),
                                 ("get", { _ = try e.getString("a", in: e.defaultKeySpace) }),
                                 ("compact", { _ = try e.compact() })] as [(String, () throws -> Void)] {
                do {
                    try call()
                    outcomes.withLock { $0.append("\(name) ran") }
                } catch StorageError.calledFromCallback(let callback) {
                    outcomes.withLock { $0.append("\(name) refused in \(callback)") }
                } catch {
                    outcomes.withLock { $0.append("\(name) failed: \(error)") }
                }
            }
        }
        let dir = TemporaryDirectory()
        let e = try Engine.open(directory: dir.path, options: options)
        ref.engine = e
        try e.put("a", "b", in: e.defaultKeySpace)
        try e.flush()
        #expect(outcomes.withLock { $0 } == ["flush", "put", "get", "compact"].map { "\($0) refused in the engine's event listener" })
        // Outside the callback everything works as before.
        try e.put("c", "d", in: e.defaultKeySpace)
        #expect(try e.getString("a", in: e.defaultKeySpace) == "b")
        e.close()
    }

    /// The progress callback of `compact(progress:)` runs inside the compaction queue: a call
    /// back into the engine from it used to deadlock (another compaction) or trap (issue 54).
    @Test(.timeLimit(.minutes(1)))
    func engineCallsFromTheCompactionProgressCallbackAreRefusedNotDeadlocked() throws {
        let dir = TemporaryDirectory()
        let e = try Engine.open(directory: dir.path, options: .testing(memtableBytes: 64 << 10))
        defer { e.close() }
        for i in 0..<4_000 { try e.put("k\(i)", String(repeating: "v", count: 600), in: e.defaultKeySpace) }
        let outcomes = Mutex<Set<String>>([])
        _ = try e.compact { _ in
            for (name, call) in [("flush", { try e.flush() }), ("put", { try e.put("x", "y", in: e.defaultKeySpace) }),
                                 ("get", { _ = try e.getString("k1", in: e.defaultKeySpace) }),
                                 ("compact", { _ = try e.compact() })] as [(String, () throws -> Void)] {
                do {
                    try call()
                    outcomes.withLock { _ = $0.insert("\(name) ran") }
                } catch StorageError.calledFromCallback(let callback) {
                    outcomes.withLock { _ = $0.insert("\(name) refused in \(callback)") }
                } catch {
                    outcomes.withLock { _ = $0.insert("\(name) failed: \(error)") }
                }
            }
        }
        #expect(outcomes.withLock { $0 } == Set(["flush", "put", "get", "compact"].map { "\($0) refused in the compaction progress callback" }))
        try e.put("c", "d", in: e.defaultKeySpace)
        #expect(try e.getString("k1", in: e.defaultKeySpace) == String(repeating: "v", count: 600))
    }

    @Test(.timeLimit(.minutes(1)))
    func closeFromTheEventListenerClosesOnceTheCallbackReturns() throws {
        let ref = Ref()
        var options = EngineOptions.testing()
        options.eventListener = { event in
            if case .flushEnded = event { ref.engine?.close() }
        }
        let dir = TemporaryDirectory()
        let e = try Engine.open(directory: dir.path, options: options)
        ref.engine = e
        try e.put("a", "b", in: e.defaultKeySpace)
        try e.flush()
        let deadline = Date().addingTimeInterval(20)
        while e.isOpen && Date() < deadline { usleep(1_000) }
        #expect(!e.isOpen)
        // The directory is free again: the close released the lock.
        var reopened: Engine?
        while reopened == nil && Date() < deadline { reopened = try? Engine.open(directory: dir.path, options: .testing()) }
        #expect(try reopened?.getString("a", in: reopened!.defaultKeySpace) == "b")
        reopened?.close()
    }
}
