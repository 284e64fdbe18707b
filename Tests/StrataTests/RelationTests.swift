import Foundation
import Strata
import Testing

@Suite struct RelationTests {
    /// ObjectBox: "To-One Relations" — put(order) puts the new customer too.
    @Test func toOnePutsNewTargetsAndReadsLazily() throws {
        let dir = TemporaryDirectory()
        let store = try Store(directoryPath: dir.path, options: .testing())
        #expect(try store.box(for: Buyer.self).isEmpty())
        #expect(try store.box(for: Purchase.self).isEmpty())

        let customer = Buyer(name: "Joe")
        let order = Purchase(summary: "shoes")
        order.buyer.target = customer
        let orderId = try store.box(for: Purchase.self).put(order)   // puts order and customer
        #expect(try store.box(for: Buyer.self).count() == 1)
        #expect(try store.box(for: Purchase.self).count() == 1)
        #expect(customer.id != 0)

        let read = try #require(try store.box(for: Purchase.self).get(orderId))
        #expect(read.buyer.targetId == customer.id)     // without loading the target
        #expect(!read.buyer.isTargetLoaded)
        #expect(read.buyer.target?.name == "Joe")
        #expect(read.buyer.isTargetLoaded)

        // Removing the relation, four equivalent ways; never removes the customer.
        read.buyer.target = nil
        try store.box(for: Purchase.self).put(read)
        #expect(try store.box(for: Purchase.self).get(orderId)?.buyer.targetId == nil)
        #expect(try store.box(for: Buyer.self).count() == 1)
        for clear: (Purchase) -> Void in [{ $0.buyer.targetId = nil }, { $0.buyer = nil }, { $0.buyer = ToOne<Buyer>(target: nil) }] {
            let o = try #require(try store.box(for: Purchase.self).get(orderId))
            o.buyer.target = customer
            try store.box(for: Purchase.self).put(o)
            clear(o)
            try store.box(for: Purchase.self).put(o)
            #expect(try store.box(for: Purchase.self).get(orderId)?.buyer.targetId == nil)
            #expect(try store.box(for: Buyer.self).get(customer.id)?.purchases.count == 0)
        }
    }

    /// ObjectBox: "One-to-Many Relations" — the backlink sees both orders.
    /// A to-one whose target is a struct: assigned new (the put stores the copy with its id),
    /// read lazily, prefetched, reset and cleared, like a class target.
    @Test func toOneToAStructTarget() throws {
        let dir = TemporaryDirectory()
        let store = try Store(directoryPath: dir.path, options: .testing())
        let members = store.box(for: BadgeHolder.self)
        let member = BadgeHolder()
        member.name = "ann"
        member.badge.target = Badge(label: "gold")
        let memberId = try members.put(member)
        let badgeId = try #require(member.badge.targetId)
        #expect(member.badge.target?.id == badgeId)
        #expect(member.badge.target?.label == "gold")
        #expect(try store.box(for: Badge.self).get(badgeId)?.label == "gold")

        let read = try #require(try members.get(memberId))
        #expect(read.badge.targetId == badgeId)
        #expect(!read.badge.isTargetLoaded)
        #expect(read.badge.target?.label == "gold")
        #expect(read.badge.isTargetLoaded)
        read.badge.reset()
        #expect(!read.badge.isTargetLoaded)
        #expect(read.badge.target?.id == badgeId)

        let all = try members.all()
        try members.prefetch(\.badge, for: all)
        #expect(all.allSatisfy { $0.badge.isTargetLoaded && $0.badge.target?.label == "gold" })

        read.badge.target = Badge(label: "silver")
        try members.put(read)
        let silverId = try #require(read.badge.targetId)
        #expect(silverId != badgeId)
        #expect(try members.get(memberId)?.badge.target?.label == "silver")
        read.badge.target = nil
        #expect(read.badge.target == nil)
        try members.put(read)
        #expect(try members.get(memberId)?.badge.targetId == nil)
        #expect(try store.box(for: Badge.self).count() == 2)
    }

    @Test func backlinkOfAToOne() throws {
        let dir = TemporaryDirectory()
        let store = try Store(directoryPath: dir.path, options: .testing())
        let customer = Buyer(name: "Ann")
        let order1 = Purchase(summary: "one", buyer: customer)
        let order2 = Purchase(summary: "two", buyer: customer)
        try store.box(for: Purchase.self).put([order1, order2])
        #expect(customer.id != 0)
        let read = try #require(try store.box(for: Buyer.self).get(customer.id))
        #expect(!read.purchases.isResolved)
        #expect(read.purchases.count == 2)
        #expect(Array(read.purchases).map(\.summary) == ["one", "two"])
    }

    /// ObjectBox: "Modifying One-to-Many Relations" — replace on a backlink rewrites the ToOnes,
    /// puts new objects (1.4+), and replace([]) clears every reference without removing anything.
    @Test func modifyingABacklinkRewritesTheToOnes() throws {
        let dir = TemporaryDirectory()
        let store = try Store(directoryPath: dir.path, options: .testing())
        let purchases = store.box(for: Purchase.self)
        let aCustomer = Buyer(name: "Bo")
        let oldOrder = Purchase(summary: "old", buyer: aCustomer)
        let dropped = Purchase(summary: "dropped", buyer: aCustomer)
        try purchases.put([oldOrder, dropped])

        let customer = try #require(try store.box(for: Buyer.self).get(aCustomer.id))
        let newOrder = Purchase(summary: "Shoes")
        customer.purchases.replace([newOrder, oldOrder])
        try customer.purchases.applyToDb()
        #expect(newOrder.id != 0)
        #expect(try purchases.get(newOrder.id)?.buyer.targetId == customer.id)
        #expect(try purchases.get(dropped.id)?.buyer.targetId == nil)
        #expect(try store.box(for: Buyer.self).get(customer.id)?.purchases.map(\.summary).sorted() == ["Shoes", "old"])

        customer.purchases.replace([])
        try customer.purchases.applyToDb()
        #expect(try purchases.count() == 3)
        #expect(try purchases.all().allSatisfy { $0.buyer.targetId == nil })
    }

    /// ObjectBox: "Many-to-Many (N:M)" and its reverse direction.
    @Test func manyToManyBothWays() throws {
        let dir = TemporaryDirectory()
        let store = try Store(directoryPath: dir.path, options: .testing())
        let teacher1 = Teacher(name: "T1")
        let teacher2 = Teacher(name: "T2")
        let student1 = Student(name: "S1")
        let student2 = Student(name: "S2")
        try store.box(for: Student.self).put([student1, student2])

        student1.teachers.append(teacher1)
        student1.teachers.append(teacher2)
        student2.teachers.append(teacher2)
        try student1.teachers.applyToDb()
        try student2.teachers.applyToDb()
        #expect(teacher1.id != 0 && teacher2.id != 0)   // new teachers were put by applyToDb

        let s1 = try #require(try store.box(for: Student.self).get(student1.id))
        #expect(s1.teachers.map(\.name) == ["T1", "T2"])   // insertion order kept
        let t2 = try #require(try store.box(for: Teacher.self).get(teacher2.id))
        #expect(t2.students.map(\.name) == ["S1", "S2"])

        // A student drops out of a class: the teacher stays.
        s1.teachers.remove(at: 0)
        try s1.teachers.applyToDb()
        #expect(try store.box(for: Student.self).get(student1.id)?.teachers.map(\.name) == ["T2"])
        #expect(try store.box(for: Teacher.self).get(teacher1.id)?.students.count == 0)
        #expect(try store.box(for: Teacher.self).count() == 2)

        // Editing the N:M backlink edits the students' lists.
        let t1 = try #require(try store.box(for: Teacher.self).get(teacher1.id))
        t1.students.append(s1)
        t1.students.append(Student(name: "S3"))
        try t1.students.applyToDb()
        #expect(try store.box(for: Student.self).get(student1.id)?.teachers.map(\.name) == ["T2", "T1"])
        #expect(try store.box(for: Student.self).count() == 3)
    }

    /// ObjectBox: "Modelling Tree Relations".
    @Test func trees() throws {
        let dir = TemporaryDirectory()
        let store = try Store(directoryPath: dir.path, options: .testing())
        let nodes = store.box(for: TreeNode.self)
        let root = TreeNode(name: "root")
        let a = TreeNode(name: "a")
        let b = TreeNode(name: "b")
        let a1 = TreeNode(name: "a1")
        a.parent.target = root
        b.parent.target = root
        a1.parent.target = a
        try nodes.put([a1, b])   // puts a and root through the to-ones
        #expect(try nodes.count() == 4)

        let entity = try #require(try nodes.get(a.id))
        let parent = entity.parent.target
        let children = Array(entity.children)
        #expect(parent?.name == "root" && children.map(\.name) == ["a1"])
        #expect(try nodes.get(root.id)?.children.map(\.name) == ["a", "b"])

        // Removing an inner node: its child's parent becomes nil; nothing else is removed.
        try nodes.remove(a.id)
        #expect(try nodes.get(a1.id)?.parent.targetId == nil)
        #expect(try nodes.get(root.id)?.children.map(\.name) == ["b"])
        #expect(try nodes.count() == 3)
    }

    /// Removing an object clears every reference to it, on both sides of 1:N and N:M.
    @Test func removalNeverLeavesADanglingId() throws {
        let dir = TemporaryDirectory()
        let store = try Store(directoryPath: dir.path, options: .testing())
        let buyer = Buyer(name: "gone")
        let orders = (0..<5).map { Purchase(summary: "o\($0)", buyer: buyer) }
        try store.box(for: Purchase.self).put(orders)
        let teacher = Teacher(name: "leaving")
        let students = (0..<3).map { i -> Student in let s = Student(name: "s\(i)"); s.teachers.append(teacher); return s }
        try store.box(for: Student.self).put(students)
        #expect(try store.box(for: Teacher.self).get(teacher.id)?.students.count == 3)

        try store.box(for: Buyer.self).remove(buyer.id)
        try store.box(for: Teacher.self).remove(teacher)
        #expect(try store.box(for: Purchase.self).count() == 5)
        #expect(try store.box(for: Purchase.self).all().allSatisfy { $0.buyer.targetId == nil && $0.buyer.target == nil })
        #expect(try store.box(for: Student.self).all().allSatisfy { $0.teachers.isEmpty })

        // The other side: removing a source removes its outgoing edges, targets stay.
        let t = Teacher(name: "stays")
        let s = Student(name: "goes")
        s.teachers.append(t)
        try store.box(for: Student.self).put(s)
        try store.box(for: Student.self).remove(s.id)
        #expect(try store.box(for: Teacher.self).get(t.id)?.students.isEmpty == true)
        let o = Purchase(summary: "goes", buyer: Buyer(name: "stays"))
        try store.box(for: Purchase.self).put(o)
        let stays = try #require(o.buyer.targetId)
        try store.box(for: Purchase.self).remove(o.id)
        #expect(try store.box(for: Buyer.self).get(stays)?.purchases.isEmpty == true)
    }

    /// A relation set by id must name a stored object.
    @Test func aToOneByIdMustPointAtAStoredObject() throws {
        let dir = TemporaryDirectory()
        let store = try Store(directoryPath: dir.path, options: .testing())
        let order = Purchase(summary: "x")
        order.buyer.targetId = 77
        #expect(throws: StrataError.objectNotFound(entity: "Buyer", id: 77)) { try store.box(for: Purchase.self).put(order) }
        #expect(try store.box(for: Purchase.self).count() == 0)
    }

    /// Relations survive flushes, compaction and a reopen; changes roll back with their transaction.
    @Test func relationsAcrossFlushCompactionReopenAndRollback() throws {
        let dir = TemporaryDirectory()
        do {
            let store = try Store(directoryPath: dir.path, options: .testing(memtableBytes: 16 << 10))
            let teachers = (0..<20).map { Teacher(name: "t\($0)") }
            try store.box(for: Teacher.self).put(teachers)
            try store.runInTransaction {
                for i in 0..<2_000 {
                    let s = Student(name: "s\(i)")
                    for k in 0..<3 { s.teachers.append(teachers[(i + k * 7) % 20]) }
                    try store.box(for: Student.self).put(s)
                }
            }
            #expect(throws: Boom.self) {
                try store.runInTransaction {
                    try store.box(for: Teacher.self).remove(teachers[0].id)
                    throw Boom()
                }
            }
            try store.compact()
            store.close()
        }
        let store = try Store(directoryPath: dir.path, options: .testing())
        let t0 = try #require(try store.box(for: Teacher.self).get(1))
        #expect(t0.students.count == 300)   // 2000 students × 3 teachers / 20
        let s = try #require(try store.box(for: Student.self).get(21 + 5))
        #expect(s.teachers.map(\.name) == ["t5", "t12", "t19"])
    }

    /// ObjectBox's section on structs: a fresh copy from the box can update its relations.
    @Test func structEntitiesWithRelations() throws {
        let dir = TemporaryDirectory()
        let store = try Store(directoryPath: dir.path, options: .testing())
        let box = store.box(for: Pupil.self)
        var student = Pupil(name: "Ida")
        try box.put(&student)
        let teacher = Teacher(name: "Mo")
        let updatableStudent = try #require(try box.get(student.id))
        updatableStudent.teachers.append(teacher)
        try updatableStudent.teachers.applyToDb()
        #expect(try box.get(student.id)?.teachers.map(\.name) == ["Mo"])
        // Better than ObjectBox: the struct that was put can update its relations too.
        student.teachers.append(Teacher(name: "Lu"))
        try student.teachers.applyToDb()
        #expect(try box.get(student.id)?.teachers.map(\.name) == ["Mo", "Lu"])
    }

    /// Caches: a to-many is read once, and reset() reads again.
    @Test func cachingAndReset() throws {
        let dir = TemporaryDirectory()
        let store = try Store(directoryPath: dir.path, options: .testing())
        let buyer = Buyer(name: "c")
        try store.box(for: Purchase.self).put(Purchase(summary: "1", buyer: buyer))
        let read = try #require(try store.box(for: Buyer.self).get(buyer.id))
        #expect(read.purchases.count == 1)
        try store.box(for: Purchase.self).put(Purchase(summary: "2", buyer: buyer))
        #expect(read.purchases.count == 1)   // cached
        read.purchases.reset()
        #expect(read.purchases.count == 2)
    }
}

@Suite struct PrefetchTests {
    @Test func prefetchReplacesPerObjectReads() throws {
        let dir = TemporaryDirectory()
        let store = try Store(directoryPath: dir.path, options: .testing())
        let buyers = (0..<10).map { Buyer(name: "b\($0)") }
        try store.box(for: Purchase.self).put((0..<100).map { Purchase(summary: "p\($0)", buyer: buyers[$0 % 10]) })
        let purchases = store.box(for: Purchase.self)

        // Lazy: reading orders reads no customer.
        var before = store.statistics()
        let orders = try purchases.all()
        #expect(store.statistics().objectsRead - before.objectsRead == 100)
        // Prefetch: one read per distinct customer, then no read at all.
        before = store.statistics()
        try purchases.prefetch(\.buyer, for: orders)
        #expect(store.statistics().objectsRead - before.objectsRead == 10)
        before = store.statistics()
        #expect(orders.allSatisfy { $0.buyer.isTargetLoaded })
        #expect(orders.map { $0.buyer.target!.name } == (0..<100).map { "b\($0 % 10)" })
        #expect(store.statistics() == before)

        // Backlinks: one prefix scan per owner, each order read once.
        let owners = try store.box(for: Buyer.self).all()
        before = store.statistics()
        try store.box(for: Buyer.self).prefetch(\.purchases, for: owners)
        #expect(store.statistics().objectsRead - before.objectsRead == 100)
        #expect(store.statistics().edgesRead - before.edgesRead == 100)
        before = store.statistics()
        #expect(owners.map { $0.purchases.count } == Array(repeating: 10, count: 10))
        #expect(store.statistics() == before)

        // Without prefetch, each backlink is read on first access only.
        let again = try #require(try store.box(for: Buyer.self).get(owners[0].id))
        before = store.statistics()
        _ = again.purchases.count
        _ = again.purchases.count
        #expect(store.statistics().objectsRead - before.objectsRead == 10)
    }

    /// Targets whose ids lie far apart (the prefetch sorts them) and close together (it tables
    /// them), with relations to nothing and to the same target many times.
    @Test func prefetchFindsSparseAndDenseTargets() throws {
        let dir = TemporaryDirectory()
        let store = try Store(directoryPath: dir.path, options: .testing())
        let buyers = (0..<1_000).map { Buyer(name: "b\($0)") }
        try store.box(for: Buyer.self).put(buyers)
        let purchases = store.box(for: Purchase.self)
        for picks in [[0, 999, 0, 500], [3, 4, 5, 4, 3, 6], [7]] {
            try purchases.removeAll()
            try purchases.put(picks.map { Purchase(summary: "to \($0)", buyer: buyers[$0]) } + [Purchase(summary: "none")])
            let read = try purchases.all()
            let before = store.statistics()
            try purchases.prefetch(\.buyer, for: read)
            #expect(store.statistics().objectsRead - before.objectsRead == UInt64(Set(picks).count))
            #expect(read.allSatisfy { $0.buyer.isTargetLoaded })
            #expect(read.map { $0.buyer.target?.name } == picks.map { "b\($0)" } + [nil])
        }
    }

    /// A to-one the app has set and not put yet holds the app's choice: a prefetch of the
    /// objects it belongs to leaves it as it is (as a to-many with unapplied changes), so that
    /// the next put stores what the app assigned.
    @Test func prefetchLeavesAnUnsavedAssignmentAlone() throws {
        let dir = TemporaryDirectory()
        let store = try Store(directoryPath: dir.path, options: .testing())
        let purchases = store.box(for: Purchase.self)
        let ann = Buyer(name: "Ann"), bob = Buyer(name: "Bob")
        try purchases.put([Purchase(summary: "one", buyer: ann), Purchase(summary: "two", buyer: ann),
                           Purchase(summary: "three", buyer: ann)])
        let read = try purchases.all()
        #expect(read.count == 3)
        read[0].buyer.target = Buyer(name: "Cid")   // new, no id until the put
        read[1].buyer.target = nil                  // cleared
        try store.box(for: Buyer.self).put(bob)
        read[2].buyer.targetId = bob.id             // set by id
        try purchases.prefetch(\.buyer, for: read)
        #expect(read[0].buyer.target?.name == "Cid")
        #expect(read[1].buyer.target == nil)
        #expect(read[2].buyer.target?.name == "Bob")
        try purchases.put(read)
        let again = try purchases.all()
        try purchases.prefetch(\.buyer, for: again)
        #expect(again.map { $0.buyer.target?.name } == ["Cid", nil, "Bob"])
        #expect(again.allSatisfy { $0.buyer.isTargetLoaded })
    }
}

@Suite struct EmbeddedObjectTests {
    @Test func embeddedObjectsLiveAndDieWithTheirParent() throws {
        let dir = TemporaryDirectory()
        let store = try Store(directoryPath: dir.path, options: .testing())
        let contacts = store.box(for: Contact.self)
        let addresses = store.box(for: Address.self)

        // Cannot be put on its own.
        #expect(throws: StrataError.self) { try addresses.put(Address(street: "x", city: "y")) }
        #expect(try addresses.count() == 0)

        let contact = Contact(name: "Nick", address: Address(street: "123 Fake St", city: "Springfield"))
        try contacts.put(contact)
        let first = try #require(contact.address.targetId)
        #expect(try addresses.get(first)?.city == "Springfield")

        // Editing the embedded object and putting the parent updates it.
        contact.address.target?.city = "Shelbyville"
        try contacts.put(contact)
        #expect(try addresses.get(first)?.city == "Shelbyville")

        // Replacing it removes the old one.
        contact.address.target = Address(street: "742 Evergreen Terrace", city: "Springfield")
        try contacts.put(contact)
        #expect(try addresses.get(first) == nil)
        #expect(try addresses.count() == 1)

        // One parent only.
        let other = Contact(name: "Thief")
        other.address.targetId = contact.address.targetId
        #expect(throws: StrataError.self) { try contacts.put(other) }

        // Clearing the reference removes it; so does removing the parent.
        contact.address = nil
        try contacts.put(contact)
        #expect(try addresses.count() == 0)
        let withAddress = Contact(name: "Ann", address: Address(street: "1 Main St", city: "Ogdenville"))
        try contacts.put(withAddress)
        #expect(try addresses.count() == 1)
        try contacts.remove(withAddress.id)
        #expect(try addresses.count() == 0)
        #expect(try contacts.count() == 1)
    }

    @Test func embeddedToManyCascades() throws {
        let dir = TemporaryDirectory()
        let store = try Store(directoryPath: dir.path, options: .testing())
        let businesses = store.box(for: Business.self)
        let business = Business(name: "Kwik-E-Mart")
        business.addresses.append(Address(street: "1", city: "a"))
        business.addresses.append(Address(street: "2", city: "b"))
        try businesses.put(business)
        #expect(try store.box(for: Address.self).count() == 2)
        business.addresses.remove(at: 0)
        try business.addresses.applyToDb()
        #expect(try store.box(for: Address.self).all().map(\.street) == ["2"])
        try businesses.remove(business)
        #expect(try store.box(for: Address.self).count() == 0)
    }
}

@Suite struct ChangeTrackingTests {
    /// applyToDb writes only what changed: one appended element costs its reverse edge and the
    /// list, not a rewrite of the other 99 elements or of any object.
    @Test func applyToDbWritesOnlyTheChanges() throws {
        let dir = TemporaryDirectory()
        let store = try Store(directoryPath: dir.path, options: .testing())
        let teachers = (0..<101).map { Teacher(name: "t\($0)") }
        try store.box(for: Teacher.self).put(teachers)
        let student = Student(name: "s")
        student.teachers.append(contentsOf: teachers.prefix(100))
        try store.box(for: Student.self).put(student)

        var before = store.statistics()
        student.teachers.append(teachers[100])
        try student.teachers.applyToDb()
        #expect(store.statistics().objectsWritten - before.objectsWritten == 0)
        #expect(store.statistics().edgesWritten - before.edgesWritten == 2)   // the list + one reverse edge

        before = store.statistics()
        student.teachers.remove(at: 0)
        try student.teachers.applyToDb()
        #expect(store.statistics().edgesWritten - before.edgesWritten == 2)

        before = store.statistics()
        try student.teachers.applyToDb()   // nothing changed: nothing written
        #expect(store.statistics() == before)
        #expect(try store.box(for: Student.self).get(student.id)?.teachers.count == 100)
    }
}
