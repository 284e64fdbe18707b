import Foundation
import Strata
import StrataTestSupport
import Testing

/// A box from `StoreTransaction.box(for:)` is bound to that transaction: its calls and its
/// queries run in it, and used anywhere else (after the body, on another thread) they throw
/// `transactionEnded` before reading or writing anything.
@Suite struct BoundTransactionTests {
    @Test func aBoundBoxWritesIntoItsTransactionAndSeesItsWrites() async throws {
        let dir = TemporaryDirectory()
        let store = try Store(directoryPath: dir.path, options: .testing())
        defer { store.close() }
        let seen = try await store.write { tx in
            let buyers = tx.box(for: Buyer.self)
            let id = try buyers.put(Buyer(name: "Ada"))
            // The uncommitted object, through the box, a query and a property query of it.
            return (try buyers.get(id)?.name, try buyers.count(),
                    try buyers.query { Buyer.name == "Ada" }.build().find().count,
                    try buyers.query().build().property(Buyer.name).findValues())
        }
        #expect(seen.0 == "Ada")
        #expect(seen.1 == 1)
        #expect(seen.2 == 1)
        #expect(seen.3 == ["Ada"])

        // A body that throws rolls back what its bound box wrote.
        struct Cancelled: Error {}
        await #expect(throws: Cancelled.self) {
            try await store.write { tx in
                try tx.box(for: Buyer.self).put(Buyer(name: "Alan"))
                throw Cancelled()
            }
        }
        #expect(try store.box(for: Buyer.self).count() == 1)
    }

    @Test func aBoundBoxOfAReadTransactionReadsItsSnapshotAndRefusesWrites() async throws {
        let dir = TemporaryDirectory()
        let store = try Store(directoryPath: dir.path, options: .testing())
        defer { store.close() }
        try store.box(for: Buyer.self).put(Buyer(name: "Ada"))
        let (count, refused) = try await store.read { tx in
            let buyers = tx.box(for: Buyer.self)
            // A commit from another thread during the body is not in the body's snapshot.
            let done = DispatchSemaphore(value: 0)
            let thread = Thread {
                _ = try? store.box(for: Buyer.self).put(Buyer(name: "Grace"))
                done.signal()
            }
            thread.start()
            done.wait()
            var refused = false
            do { try buyers.put(Buyer(name: "Alan")) } catch StrataError.readOnly { refused = true }
            return (try buyers.count(), refused)
        }
        #expect(count == 1)
        #expect(refused)
        #expect(try store.box(for: Buyer.self).count() == 2)
    }

    @Test func aBoundBoxUsedAfterItsBodyThrowsTransactionEnded() async throws {
        let dir = TemporaryDirectory()
        let store = try Store(directoryPath: dir.path, options: .testing())
        defer { store.close() }
        try store.box(for: Buyer.self).put(Buyer(name: "Ada"))
        // `Box` is Sendable, so it can be carried out of the body: every use then throws.
        let escapedRead = try await store.read { tx in tx.box(for: Buyer.self) }
        let escapedWrite = try await store.write { tx in tx.box(for: Buyer.self) }
        for box in [escapedRead, escapedWrite] {
            #expect(throws: StrataError.transactionEnded) { try box.count() }
            #expect(throws: StrataError.transactionEnded) { try box.get(1) }
            #expect(throws: StrataError.transactionEnded) { try box.get([1]) }
            #expect(throws: StrataError.transactionEnded) { try box.query().build().find() }
            #expect(throws: StrataError.transactionEnded) { try box.put(Buyer(name: "Alan")) }
            #expect(throws: StrataError.transactionEnded) { try box.remove(1) }
        }
        // Nothing was written through them.
        #expect(try store.box(for: Buyer.self).all().map(\.name) == ["Ada"])
        // Inside another transaction on the same thread, it still belongs to the ended one.
        try store.runInTransaction {
            #expect(throws: StrataError.transactionEnded) { try escapedWrite.put(Buyer(name: "Alan")) }
        }
        #expect(try store.box(for: Buyer.self).count() == 1)
    }

    @Test func aBoundBoxUsedOnAnotherThreadDuringItsBodyThrows() async throws {
        let dir = TemporaryDirectory()
        let store = try Store(directoryPath: dir.path, options: .testing())
        defer { store.close() }
        let outcome = try await store.write { tx -> String in
            let buyers = tx.box(for: Buyer.self)
            try buyers.put(Buyer(name: "Ada"))
            let result = LockedResult()
            let done = DispatchSemaphore(value: 0)
            let thread = Thread {
                do {
                    _ = try buyers.count()
                    result.set("read")
                } catch StrataError.transactionEnded {
                    result.set("transactionEnded")
                } catch {
                    result.set("\(error)")
                }
                done.signal()
            }
            thread.start()
            done.wait()
            return result.get()
        }
        #expect(outcome == "transactionEnded")
        #expect(try store.box(for: Buyer.self).count() == 1)
    }
}

/// A string one thread sets and another reads after a semaphore.
private final class LockedResult: @unchecked Sendable {
    private let lock = NSLock()
    private var value = ""
    func set(_ v: String) { lock.withLock { value = v } }
    func get() -> String { lock.withLock { value } }
}
