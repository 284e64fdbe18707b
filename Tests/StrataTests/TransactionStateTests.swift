import Foundation
import Strata
import Testing

/// A member of a buyer's club: a unique handle and a to-one, so that a put can fail (a handle
/// taken) after it has put a new related object.
@Entity
final class Member {
    var id: Id = 0
    @Unique var handle = ""
    var club: ToOne<Buyer> = nil

    init() {}
    init(handle: String, club: Buyer? = nil) {
        self.handle = handle
        self.club = ToOne(target: club)
    }
}

/// Relation state follows the transaction (README "Transactions, rollbacks and stale objects"):
/// the app patterns of a serious database's users, each of which went wrong before the write
/// overlay, savepoints and the relation undo log.
@Suite struct TransactionStateTests {
    private func open(_ dir: TemporaryDirectory) throws -> Store {
        try Store(directoryPath: dir.path, options: .testing())
    }

    @Test func aStaleToManyAppliesItsChangesWithoutBringingBackARemovedTarget() throws {
        let dir = TemporaryDirectory()
        let store = try open(dir)
        let students = store.box(for: Student.self), teachers = store.box(for: Teacher.self)
        let s = Student(name: "s")
        let t1 = Teacher(name: "T1"), t2 = Teacher(name: "T2"), t3 = Teacher(name: "T3")
        s.teachers.append(contentsOf: [t1, t2])
        try students.put(s)

        let stale = try #require(try students.get(s.id))
        #expect(stale.teachers.map(\.name) == ["T1", "T2"])   // loaded and cached
        try teachers.remove(t1.id)
        stale.teachers.append(t3)
        try stale.teachers.applyToDb()

        #expect(stale.teachers.map(\.name) == ["T2", "T3"])
        #expect(try students.get(s.id)!.teachers.map(\.name) == ["T2", "T3"])
        #expect(try teachers.get(t2.id)!.students.map(\.id) == [s.id])
        #expect(try store.verifyGraph().problems.isEmpty)

        // A change made elsewhere meanwhile stays: the stale copy writes its own changes only.
        let other = try #require(try students.get(s.id))
        let stale2 = try #require(try students.get(s.id))
        _ = stale2.teachers.count
        let t4 = Teacher(name: "T4")
        other.teachers.append(t4)
        try other.teachers.applyToDb()
        stale2.teachers.remove(at: 0)   // T2
        try stale2.teachers.applyToDb()
        #expect(try students.get(s.id)!.teachers.map(\.name) == ["T3", "T4"])
        #expect(stale2.teachers.map(\.name) == ["T3", "T4"])

        // Adding an object that is not stored (any more) is refused, not stored dangling.
        let gone = Teacher(name: "gone")
        try teachers.put(gone)
        try teachers.remove(gone.id)
        stale2.teachers.append(gone)
        #expect(throws: StrataError.objectNotFound(entity: "Teacher", id: gone.id)) { try stale2.teachers.applyToDb() }
        #expect(try students.get(s.id)!.teachers.map(\.name) == ["T3", "T4"])
        #expect(try store.verifyGraph().problems.isEmpty)
    }

    @Test func aStaleBacklinkEditNeitherBringsBackNorStealsSources() throws {
        let dir = TemporaryDirectory()
        let store = try open(dir)
        let buyers = store.box(for: Buyer.self), purchases = store.box(for: Purchase.self)
        let ann = Buyer(name: "Ann")
        ann.purchases.append(contentsOf: [Purchase(summary: "p1"), Purchase(summary: "p2")])
        try buyers.put(ann)
        let stale = try #require(try buyers.get(ann.id))
        #expect(stale.purchases.map(\.summary) == ["p1", "p2"])
        let p1 = stale.purchases[0].id
        try purchases.remove(p1)
        // Elsewhere, a new purchase joins Ann.
        try purchases.put(Purchase(summary: "p3", buyer: try buyers.get(ann.id)))
        stale.purchases.append(Purchase(summary: "p4"))
        try stale.purchases.applyToDb()
        #expect(try purchases.get(p1) == nil)
        #expect(try buyers.get(ann.id)!.purchases.map(\.summary) == ["p2", "p3", "p4"])
        #expect(Set(stale.purchases.map(\.summary)) == ["p2", "p3", "p4"])
        #expect(try store.verifyGraph().problems.isEmpty)
    }

    @Test func applyToDbInARolledBackTransactionIsUnsavedAgain() throws {
        let dir = TemporaryDirectory()
        let store = try open(dir)
        let students = store.box(for: Student.self), teachers = store.box(for: Teacher.self)
        let s = Student(name: "s")
        try students.put(s)
        let t = Teacher(name: "new")
        s.teachers.append(t)
        #expect(throws: Boom.self) {
            try store.runInTransaction {
                try s.teachers.applyToDb()
                #expect(t.id != 0)
                throw Boom()
            }
        }
        #expect(t.id == 0)
        #expect(try teachers.isEmpty())
        try s.teachers.applyToDb()   // the retry writes it
        #expect(try students.get(s.id)!.teachers.map(\.name) == ["new"])
        #expect(try teachers.count() == 1)
        #expect(try store.verifyGraph().problems.isEmpty)
    }

    @Test func aPutRetriedAfterARollbackWritesTheWholeGraph() throws {
        let dir = TemporaryDirectory()
        let store = try open(dir)
        let students = store.box(for: Student.self), teachers = store.box(for: Teacher.self)
        let s = Student(name: "s")
        s.teachers.append(contentsOf: [Teacher(name: "a"), Teacher(name: "b")])
        #expect(throws: Boom.self) {
            try store.runInTransaction {
                try students.put(s)
                throw Boom()
            }
        }
        #expect(s.id == 0 && s.teachers.allSatisfy { $0.id == 0 })
        try students.put(s)
        #expect(try students.get(s.id)!.teachers.map(\.name) == ["a", "b"])
        #expect(try teachers.count() == 2)
        #expect(try store.verifyGraph().problems.isEmpty)

        // The same with a to-one to a new object and a struct owner with a to-many.
        let buyer = Buyer(name: "new")
        let purchase = Purchase(summary: "x", buyer: buyer)
        #expect(throws: Boom.self) {
            try store.runInTransaction {
                try store.box(for: Purchase.self).put(purchase)
                throw Boom()
            }
        }
        #expect(purchase.id == 0 && buyer.id == 0)
        try store.box(for: Purchase.self).put(purchase)
        #expect(try store.box(for: Purchase.self).get(purchase.id)?.buyer.target?.name == "new")
        #expect(try store.verifyGraph().problems.isEmpty)
    }

    @Test func cyclesOfNewObjectsArePutWhole() throws {
        let dir = TemporaryDirectory()
        let store = try open(dir)
        let nodes = store.box(for: TreeNode.self)
        let a = TreeNode(name: "a"), b = TreeNode(name: "b")
        a.parent.target = b
        b.parent.target = a
        try nodes.put(a)
        #expect(a.id != 0 && b.id != 0)
        #expect(try nodes.get(a.id)?.parent.targetId == b.id)
        #expect(try nodes.get(b.id)?.parent.targetId == a.id)
        #expect(try nodes.get(a.id)?.children.map(\.id) == [b.id])

        let selfParent = TreeNode(name: "self")
        selfParent.parent.target = selfParent
        try nodes.put(selfParent)
        #expect(try nodes.get(selfParent.id)?.parent.targetId == selfParent.id)
        #expect(try nodes.get(selfParent.id)?.children.map(\.id) == [selfParent.id])

        // A longer cycle, through to-one and backlink.
        let x = TreeNode(name: "x"), y = TreeNode(name: "y"), z = TreeNode(name: "z")
        x.parent.target = y
        y.parent.target = z
        z.parent.target = x
        try nodes.put(z)
        #expect(try [x, y, z].map { try nodes.get($0.id)?.parent.targetId } == [y.id, z.id, x.id])
        #expect(try store.verifyGraph().problems.isEmpty)

        // Removing one clears the reference to it, keeps the others.
        try nodes.remove(b.id)
        #expect(try nodes.get(a.id)?.parent.targetId == nil)
        #expect(try store.verifyGraph().problems.isEmpty)
    }

    @Test func aFailedPutInsideATransactionLeavesNothingOfItself() throws {
        let dir = TemporaryDirectory()
        let store = try open(dir)
        let members = store.box(for: Member.self), buyers = store.box(for: Buyer.self)
        try members.put(Member(handle: "taken"))
        let club = Buyer(name: "club")
        let late = Member(handle: "taken", club: club)
        try store.runInTransaction {
            try buyers.put(Buyer(name: "before"))
            // The put puts the new club first, then finds the handle taken.
            #expect(throws: StrataError.self) { try members.put(late) }
            #expect(late.id == 0 && club.id == 0)
            #expect(try buyers.all().map(\.name) == ["before"])
            late.handle = "free"
            try members.put(late)   // the retry writes the member and its club
        }
        #expect(try buyers.all().map(\.name) == ["before", "club"])
        #expect(try members.get(late.id)?.club.target?.name == "club")
        #expect(try members.query { Member.handle == "free" }.build().find().map(\.id) == [late.id])
        #expect(try store.verifyGraph().problems.isEmpty)

        // A put that fails in its to-many (a removed teacher), after the new teacher and the
        // student itself were written: the outer transaction keeps none of it.
        let students = store.box(for: Student.self), teachers = store.box(for: Teacher.self)
        let removed = Teacher(name: "removed")
        try teachers.put(removed)
        try teachers.remove(removed.id)
        let s = Student(name: "s")
        let fresh = Teacher(name: "fresh")
        s.teachers.append(contentsOf: [fresh, removed])
        try store.runInTransaction {
            try students.put(Student(name: "kept"))
            #expect(throws: StrataError.objectNotFound(entity: "Teacher", id: removed.id)) { try students.put(s) }
            #expect(s.id == 0 && fresh.id == 0)
        }
        #expect(try students.all().map(\.name) == ["kept"])
        #expect(try teachers.isEmpty())
        s.teachers.remove(at: 1)
        try students.put(s)
        #expect(try students.get(s.id)!.teachers.map(\.name) == ["fresh"])
        #expect(try store.verifyGraph().problems.isEmpty)
    }

    @Test func uniqueValuesFollowSavepointsAndSwapsInsideATransaction() throws {
        let dir = TemporaryDirectory()
        let store = try open(dir)
        let members = store.box(for: Member.self)
        let m1 = Member(handle: "one"), m2 = Member(handle: "two")
        try members.put([m1, m2])
        try store.runInTransaction {
            // A value left by one object is free for another in the same transaction.
            m1.handle = "tmp"
            try members.put(m1)
            m2.handle = "one"
            try members.put(m2)
            m1.handle = "two"
            try members.put(m1)
            // A value taken inside a rolled-back savepoint is free again.
            try? store.runInTransaction {
                try members.put(Member(handle: "three"))
                throw Boom()
            }
            try members.put(Member(handle: "three"))
            #expect(try members.query { Member.handle == "one" }.build().find().map(\.id) == [m2.id])
            let report = try store.verifyGraph()   // verify sees the transaction's own writes
            #expect(report.problems.isEmpty && report.objects == 3 && report.indexEntries == 3)
        }
        #expect(try members.query { Member.handle == "two" }.build().find().map(\.id) == [m1.id])
        #expect(try members.query { Member.handle == "three" }.build().count() == 1)
        #expect(try store.verifyGraph().problems.isEmpty)
    }

    @Test func aStaleObjectWhoseTargetWasRemovedNeverRecreatesTheLink() throws {
        let dir = TemporaryDirectory()
        let store = try open(dir)
        let buyers = store.box(for: Buyer.self), purchases = store.box(for: Purchase.self)
        let ann = Buyer(name: "Ann")
        let p = Purchase(summary: "p", buyer: ann)
        try purchases.put(p)
        let loaded = try #require(try purchases.get(p.id))
        _ = loaded.buyer.target   // resolved before the removal, too
        try buyers.remove(ann.id)

        // Both the loaded copy and the instance that was put are stale now.
        loaded.summary = "edited"
        try purchases.put(loaded)
        #expect(try purchases.get(p.id)?.summary == "edited")
        #expect(try purchases.get(p.id)?.buyer.targetId == nil)
        p.summary = "edited again"
        try purchases.put(p)
        #expect(try purchases.get(p.id)?.buyer.targetId == nil)
        #expect(try store.verifyGraph().problems.isEmpty)

        // Assigning a removed object is refused.
        loaded.buyer.targetId = ann.id
        #expect(throws: StrataError.objectNotFound(entity: "Buyer", id: ann.id)) { try purchases.put(loaded) }
        #expect(try store.verifyGraph().problems.isEmpty)
    }

    /// Inside a write transaction, a target found stored is remembered (a bulk put links many
    /// objects to the same few) and a new object's relations are read from the transaction
    /// alone; neither shortcut may outlive a removal, a rollback or a failed put in it.
    @Test func existenceKnownInATransactionFollowsItsRemovalsAndRollbacks() throws {
        let dir = TemporaryDirectory()
        let store = try open(dir)
        let students = store.box(for: Student.self), teachers = store.box(for: Teacher.self)
        let t = Teacher(name: "T")
        try teachers.put(t)

        try store.runInTransaction {
            let s1 = Student(name: "s1")
            s1.teachers.append(t)
            try students.put(s1)            // t found stored
            try teachers.remove(t.id)       // then removed in the same transaction
            let s2 = Student(name: "s2")
            s2.teachers.append(t)
            #expect(throws: StrataError.objectNotFound(entity: "Teacher", id: t.id)) { try students.put(s2) }
            #expect(try students.get(s1.id)!.teachers.isEmpty)
        }
        #expect(try teachers.get(t.id) == nil)
        #expect(try store.verifyGraph().problems.isEmpty)

        // A teacher put and rolled back is not stored, though its id was given in the
        // transaction; a new student's list is read from the transaction alone.
        let t2 = Teacher(name: "T2")
        try store.runInTransaction {
            let s3 = Student(name: "s3")
            try students.put(s3)
            s3.teachers.append(Teacher(name: "new"))
            try s3.teachers.applyToDb()
            let again = try #require(try students.get(s3.id))
            #expect(again.teachers.map(\.name) == ["new"])
            let failing = { () throws in
                try store.runInTransaction {
                    try teachers.put(t2)
                    throw StrataError.invalidRelation(reason: "rolled back")
                }
            }
            #expect(throws: StrataError.self) { try failing() }
            #expect(t2.id == 0)
            let lost = Teacher(name: "lost")
            try teachers.put(lost)
            let lostId = lost.id
            try teachers.remove(lostId)
            again.teachers.append(lost)
            #expect(throws: StrataError.objectNotFound(entity: "Teacher", id: lostId)) { try again.teachers.applyToDb() }
            again.teachers.reset()
            #expect(again.teachers.map(\.name) == ["new"])
        }
        #expect(try students.query { Student.name == "s3" }.build().findFirst()?.teachers.map(\.name) == ["new"])
        #expect(try store.verifyGraph().problems.isEmpty)
    }
}
