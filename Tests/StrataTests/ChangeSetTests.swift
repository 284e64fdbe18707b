import Foundation
import Strata
import StrataTestSupport
import Testing

/// What one commit hands to observers (`StoreChanges`, through a public subscription): puts,
/// updates, removals, relation edits and removals that clear references elsewhere; rolled-back
/// savepoints and objects inserted then removed leave no trace; a transaction that writes
/// nothing hands over nothing.
@Suite struct ChangeSetTests {
    /// Collects what a subscription delivers, one commit at a time.
    final class Collected: Sendable {
        private let pending = Locked<[StoreChanges]>([])
        func add(_ c: StoreChanges) { pending.withLock { $0.append(c) } }

        /// The next delivered commit (waiting up to 10 s), which must be exactly one commit.
        func next() throws -> StoreChanges {
            let deadline = Date().addingTimeInterval(10)
            while Date() < deadline {
                if let c = pending.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) {
                    #expect(c.commits == 1, "one commit per delivery")
                    return c
                }
                usleep(1_000)
            }
            throw StrataError.invalidQuery(reason: "no change delivered within 10 s")
        }

        var isEmpty: Bool { pending.withLock { $0.isEmpty } }
    }

    @Test func aCommitReportsInsertsUpdatesRemovalsAndRelations() throws {
        let dir = TemporaryDirectory()
        let store = try Store(directoryPath: dir.path, options: .testing())
        defer { store.close() }
        let buyers = store.box(for: Buyer.self), purchases = store.box(for: Purchase.self)
        let notes = store.box(for: Note.self)
        let students = store.box(for: Student.self), teachers = store.box(for: Teacher.self)
        _ = (try teachers.count(), try notes.count())   // bind every type before subscribing
        let collected = Collected()
        // A serial queue, and each step waits for its delivery: commits are never merged.
        let token = try store.subscribe(to: Buyer.self, Purchase.self, Note.self, Student.self, Teacher.self) { collected.add($0) }
        defer { token.cancel() }

        let ann = Buyer(name: "Ann"), bob = Buyer(name: "Bob")
        let p1 = Purchase(summary: "p1", buyer: ann), p2 = Purchase(summary: "p2", buyer: ann)
        try purchases.put([p1, p2])
        var changes = try collected.next()
        #expect(changes[Purchase.self].inserted == [p1.id, p2.id])
        #expect(changes[Buyer.self].inserted == [ann.id])
        try buyers.put(bob)
        changes = try collected.next()
        #expect(changes[Buyer.self] == EntityChanges(inserted: [bob.id]))
        #expect(changes[Purchase.self].isEmpty)

        try store.runInTransaction {
            p1.summary = "p1'"
            try purchases.put(p1)                    // update
            try buyers.remove(ann.id)                // clears p2's (and p1's) to-one
            try notes.put(Note(text: "temporary"))   // inserted and removed: no trace
            try notes.remove(1)
            try? store.runInTransaction {            // rolled back: no trace
                try buyers.put(Buyer(name: "ghost"))
                throw Boom()
            }
            p2.buyer.target = bob
            try purchases.put(p2)
        }
        changes = try collected.next()
        #expect(changes[Buyer.self].removed == [ann.id] && changes[Buyer.self].inserted.isEmpty)
        // Bob's backlink gained p2.
        #expect(changes[Buyer.self].relationsChanged == [bob.id])
        #expect(changes[Purchase.self] == EntityChanges(updated: [p1.id, p2.id]))
        #expect(changes[Note.self].isEmpty)

        // A to-many's edit names its owner (relations changed) and the target's backlink.
        let s = Student(name: "s")
        try students.put(s)
        changes = try collected.next()
        #expect(changes[Student.self].inserted == [s.id])
        let t = Teacher(name: "t")
        s.teachers.append(t)
        try s.teachers.applyToDb()
        changes = try collected.next()
        #expect(changes[Teacher.self].inserted == [t.id])
        #expect(changes[Student.self] == EntityChanges(relationsChanged: [s.id]))

        // A transaction that writes nothing, or rolls back, hands over nothing: the next
        // delivery is the next real commit alone.
        try store.runInTransaction {}
        try? store.runInTransaction { try notes.put(Note(text: "x")); throw Boom() }
        let kept = try notes.put(Note(text: "kept"))
        changes = try collected.next()
        #expect(changes.entities.keys.sorted() == ["Note"])
        #expect(changes[Note.self] == EntityChanges(inserted: [kept]))
        usleep(20_000)
        #expect(collected.isEmpty)
    }
}
