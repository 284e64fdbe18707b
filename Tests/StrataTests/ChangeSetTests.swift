import Foundation
@testable import Strata
import Testing

/// The change set each commit produces (the input of change observation): what it holds for
/// puts, updates, removals, relation edits and removals that clear references elsewhere, and
/// that rolled-back savepoints and inserted-then-removed objects leave no trace.
@Suite struct ChangeSetTests {
    private func entityId<T: Entity>(_ type: T.Type, _ store: Store) throws -> UInt32 {
        try store.binding(for: T.self).get().entityId
    }

    private func relation<T: Entity>(_ type: T.Type, _ property: String, _ store: Store) throws -> ChangeSet.Relation {
        let b = try store.binding(for: T.self).get()
        let position = try #require(T._strataSchema.properties.firstIndex { $0.name == property })
        return ChangeSet.Relation(entityId: b.entityId, propertyId: b.propertyIds[position])
    }

    @Test func aCommitReportsInsertsUpdatesRemovalsAndRelations() throws {
        let dir = TemporaryDirectory()
        let store = try Store(directoryPath: dir.path, options: .testing())
        let buyers = store.box(for: Buyer.self), purchases = store.box(for: Purchase.self)
        let notes = store.box(for: Note.self)
        let ann = Buyer(name: "Ann"), bob = Buyer(name: "Bob")
        let p1 = Purchase(summary: "p1", buyer: ann), p2 = Purchase(summary: "p2", buyer: ann)
        try purchases.put([p1, p2])
        try buyers.put(bob)
        let buyer = try entityId(Buyer.self, store), purchase = try entityId(Purchase.self, store)
        let toBuyer = try relation(Purchase.self, "buyer", store)

        var changes = store.committedChanges.withLock { $0 }
        #expect(changes.entities[buyer] == .init(inserted: [bob.id]))

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
        changes = store.committedChanges.withLock { $0 }
        #expect(changes.entities[buyer] == .init(removed: [ann.id]))
        #expect(changes.entities[purchase] == .init(updated: [p1.id, p2.id]))
        #expect(changes.entities[try entityId(Note.self, store)] == nil)
        #expect(changes.relations == [toBuyer: [p1.id, p2.id]])

        // A to-many's edit names its owner.
        let students = store.box(for: Student.self)
        let s = Student(name: "s")
        try students.put(s)
        s.teachers.append(Teacher(name: "t"))
        try s.teachers.applyToDb()
        changes = store.committedChanges.withLock { $0 }
        #expect(changes.entities[try entityId(Teacher.self, store)]?.inserted.count == 1)
        #expect(changes.entities[try entityId(Student.self, store)] == nil)
        #expect(changes.relations == [try relation(Student.self, "teachers", store): [s.id]])

        // A transaction that writes nothing changes nothing.
        let before = changes
        try store.runInTransaction {}
        try? store.runInTransaction { try notes.put(Note(text: "x")); throw Boom() }
        #expect(store.committedChanges.withLock { $0 } == before)
    }
}
