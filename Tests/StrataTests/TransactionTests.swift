import Foundation
import Strata
import StrataStorage
import Testing

@Suite struct TransactionTests {
    @Test func aThrowRollsEverythingBack() throws {
        let dir = TemporaryDirectory()
        let store = try Store(directoryPath: dir.path, options: .testing())
        let customers = store.box(for: Customer.self)
        let notes = store.box(for: Note.self)
        let kept = Customer(name: "kept")
        try customers.put(kept)

        let fresh = Customer(name: "fresh")
        #expect(throws: Boom.self) {
            try store.runInTransaction {
                try customers.put(fresh)
                #expect(fresh.id == 2)
                try notes.put(Note(text: "lost"))
                kept.name = "changed"
                try customers.put(kept)
                try customers.remove(kept.id)
                throw Boom()
            }
        }
        #expect(fresh.id == 0)   // the id given inside the rolled-back transaction is taken back
        #expect(try customers.all().map(\.name) == ["kept"])
        #expect(try notes.isEmpty())
        // Ids are not reused, even those of a rolled-back transaction.
        #expect(try customers.put(fresh) == 3)
    }

    /// A store holds the transaction that reads outside any transaction, and every transaction
    /// refers to its store: a store its app lets go of without `close()` must still be freed
    /// (no cycle), releasing its directory's lock for the next open.
    @Test func aStoreLetGoWithoutCloseIsFreedAndItsDirectoryOpensAgain() throws {
        let dir = TemporaryDirectory()
        weak var released: Store?
        do {
            let store = try Store(directoryPath: dir.path, options: .testing())
            released = store
            let notes = store.box(for: Note.self)
            try notes.put([Note(text: "a"), Note(text: "b")])
            _ = try notes.get(1)                                      // the latest transaction
            _ = try store.runInReadOnlyTransaction { try notes.count() }
            _ = try notes.query { Note.text == "b" }.build().findFirst()
            try store.runInTransaction { try notes.put(Note(text: "c")) }
        }
        #expect(released == nil)
        let again = try Store(directoryPath: dir.path, options: .testing())
        #expect(try again.box(for: Note.self).count() == 3)
        again.close()
    }

    @Test func readsInsideAWriteTransactionSeeItsOwnWrites() throws {
        let dir = TemporaryDirectory()
        let store = try Store(directoryPath: dir.path, options: .testing())
        let notes = store.box(for: Note.self)
        try notes.put([Note(text: "a"), Note(text: "b"), Note(text: "c")])
        try store.runInTransaction {
            try notes.remove(2)
            try notes.put(Note(id: 3, text: "C"))
            try notes.put(Note(text: "d"))
            #expect(try notes.get(2) == nil)
            #expect(try notes.get(3)?.text == "C")
            #expect(try notes.contains(4))
            #expect(try notes.count() == 3)
            #expect(try notes.all().map(\.text) == ["a", "C", "d"])
            #expect(try notes.get([4, 2, 1]).map(\.text) == ["d", "a"])
            // Another thread sees none of it until the commit.
            let outside = Thread.detachNewThreadAndWait { (try? notes.all().map(\.text)) ?? [] }
            #expect(outside == ["a", "b", "c"])
        }
        #expect(try notes.all().map(\.text) == ["a", "C", "d"])
    }

    @Test func aNestedTransactionThatThrowsRollsBackToItsSavepoint() throws {
        let dir = TemporaryDirectory()
        let store = try Store(directoryPath: dir.path, options: .testing())
        let notes = store.box(for: Note.self)
        let customers = store.box(for: Customer.self)
        try store.runInTransaction {
            try notes.put(Note(text: "outer"))
            try store.runInTransaction { try notes.put(Note(text: "inner")) }
            #expect(try notes.count() == 2)
        }
        #expect(try notes.count() == 2)

        let doomed = Customer(name: "doomed")
        try store.runInTransaction {
            try notes.put(Note(text: "kept"))
            do {
                try store.runInTransaction {
                    try notes.put(Note(text: "inner"))
                    try customers.put(doomed)
                    try notes.remove(1)
                    #expect(try notes.count() == 3)
                    throw Boom()
                }
            } catch is Boom {}   // the outer code handles the error and goes on
            #expect(doomed.id == 0)            // the id given inside the savepoint is taken back
            #expect(try notes.count() == 3)    // "inner" is gone, the removal of 1 is undone
            #expect(try notes.get(1)?.text == "outer")
            try notes.put(Note(text: "after"))
        }
        #expect(try notes.all().map(\.text) == ["outer", "inner", "kept", "after"])
        #expect(try customers.isEmpty())
        #expect(try store.verifyGraph().problems.isEmpty)
    }

    @Test func readOnlyTransactionsSeeOneSnapshotAndRefuseWrites() throws {
        let dir = TemporaryDirectory()
        let store = try Store(directoryPath: dir.path, options: .testing())
        let notes = store.box(for: Note.self)
        try notes.put(Note(text: "before"))
        try store.runInReadOnlyTransaction { () throws in
            // A commit from another thread during the transaction stays invisible.
            let writer = Thread.detachNewThreadAndWait { (try? notes.put(Note(text: "after"))) ?? 0 }
            #expect(writer == 2)
            #expect(try notes.count() == 1)
            #expect(try notes.get(2) == nil)
            #expect(throws: StrataError.readOnly) { try notes.put(Note(text: "no")) }
            #expect(throws: StrataError.readOnly) { try store.runInTransaction {} }
        }
        #expect(try notes.count() == 2)
    }

    @Test func durableCommitsSurviveAKill() throws {
        // Every transaction below is durable (`.sync`, the default) when runInTransaction returns.
        let dir = TemporaryDirectory()
        do {
            let store = try Store(directoryPath: dir.path)
            #expect(store.durability == .sync)
            try store.runInTransaction {
                try store.box(for: Note.self).put(Note(text: "durable"))
            }
            // No close: the engine's write-ahead log alone must bring it back.
            _ = Unmanaged.passRetained(store)   // never deinitialised, like a killed process
        }
        // The leaked store still holds the lock, so read the log through a copy of the directory.
        let copy = TemporaryDirectory()
        try FileManager.default.copyItem(atPath: dir.path, toPath: copy.path)
        try? FileManager.default.removeItem(atPath: copy.path + "/LOCK")
        let reopened = try Store(directoryPath: copy.path)
        #expect(try reopened.box(for: Note.self).all().map(\.text) == ["durable"])
    }
}

extension Thread {
    /// Runs `body` on a new thread and waits for its result.
    static func detachNewThreadAndWait<R: Sendable>(_ body: @escaping @Sendable () -> R) -> R {
        let result = LockedValue<R?>(nil)
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            result.withLock { $0 = body() }
            done.signal()
        }
        done.wait()
        return result.withLock { $0! }
    }
}
