import Foundation
import Strata
import StrataStorage
import Testing

/// `Store.putStoredObjects`: objects put without their Swift type (what `strata load` does)
/// are the objects a typed put makes: same reads, edges both ways, indexes, id counters.
@Suite struct StoredObjectLoaderTests {
    static func everything(_ store: Store) throws -> [StoredObject] {
        var out: [StoredObject] = []
        try store.storedObjects(of: "Everything") { out.append($0); return true }
        return out
    }

    static func objects(_ store: Store, _ entity: String) throws -> [StoredObject] {
        var out: [StoredObject] = []
        try store.storedObjects(of: entity) { out.append($0); return true }
        return out
    }

    static func edges(_ store: Store, _ relation: String) throws -> [StoredEdge] {
        var out: [StoredEdge] = []
        try store.storedEdges(of: relation) { out.append($0); return true }
        return out
    }

    @Test func copiesEveryTypeAndEveryRelationExactly() throws {
        let source = TemporaryDirectory(), copy = TemporaryDirectory()
        do {
            let store = try Store(directoryPath: source.path, options: .testing())
            var e = Everything()
            e.int8 = -7; e.uint64 = .max; e.int64 = .min; e.float = 1.5; e.double = .nan; e.string = "ü"
            e.date = Date(timeIntervalSince1970: 1_234_567.25); e.bytes = [1, 2, 3]; e.optionalInt = 5; e.optionalString = "s"
            try store.box(for: Everything.self).put(&e)
            try store.box(for: Everything.self).put(Everything())
            let buyers = [Buyer(name: "a"), Buyer(name: "b")]
            try store.box(for: Purchase.self).put([Purchase(summary: "p1", buyer: buyers[0]), Purchase(summary: "p2", buyer: buyers[0]),
                                                   Purchase(summary: "p3", buyer: buyers[1]), Purchase(summary: "p4")])
            let teachers = [Teacher(name: "t1"), Teacher(name: "t2")]
            let s = Student(name: "s1")
            s.teachers.append(contentsOf: [teachers[1], teachers[0]])
            try store.box(for: Student.self).put(s)
            store.close()
        }
        let store = try Store(directoryPath: source.path, options: .testing())
        defer { store.close() }
        let target = try Store(directoryPath: copy.path, options: .testing())
        defer { target.close() }
        // The schema, as the app would have created it.
        _ = target.box(for: Everything.self); _ = target.box(for: Buyer.self); _ = target.box(for: Purchase.self)
        _ = target.box(for: Teacher.self); _ = target.box(for: Student.self)
        for entity in ["Everything", "Buyer", "Purchase", "Teacher", "Student"] {
            try target.putStoredObjects(try Self.objects(store, entity), of: entity)
        }
        for entity in ["Everything", "Buyer", "Purchase", "Teacher", "Student"] {
            // Compared as text: NaN is not equal to itself.
            #expect(try "\(Self.objects(target, entity))" == "\(Self.objects(store, entity))", "\(entity)")
        }
        #expect(try Self.edges(target, "Purchase.buyer") == Self.edges(store, "Purchase.buyer"))
        #expect(try Self.edges(target, "Student.teachers") == Self.edges(store, "Student.teachers"))
        #expect(try target.verifyGraph().problems.isEmpty)
        // Typed reads see the same objects, backlinks included; typed puts go on after the ids.
        #expect(try target.box(for: Everything.self).all() == store.box(for: Everything.self).all())
        let buyer = try #require(try target.box(for: Buyer.self).get(1))
        #expect(buyer.purchases.map(\.summary).sorted() == ["p1", "p2"])
        #expect(try target.box(for: Teacher.self).get(2)?.students.map(\.name) == ["s1"])
        let fresh = Buyer(name: "c")
        try target.box(for: Buyer.self).put(fresh)
        #expect(fresh.id == 3)
    }

    @Test func refusesWhatDoesNotFitAndWritesNothing() throws {
        let dir = TemporaryDirectory()
        let store = try Store(directoryPath: dir.path, options: .testing())
        defer { store.close() }
        _ = store.box(for: Everything.self); _ = store.box(for: Purchase.self); _ = store.box(for: Buyer.self)
        _ = store.box(for: Account.self)
        func fails(_ objects: [StoredObject], _ entity: String, _ check: (StrataError) -> Bool) {
            #expect(performing: { try store.putStoredObjects(objects, of: entity) }, throws: { error in
                guard let e = error as? StrataError else { return false }
                return check(e)
            })
        }
        let ok = StoredObject(id: 1, values: [("int8", .int(1))])
        fails([ok, StoredObject(id: 2, values: [("int8", .int(300))])], "Everything") {
            if case let .invalidValue(_, id, property, reason) = $0 { return id == 2 && property == "int8" && reason.contains("range") }
            return false
        }
        fails([StoredObject(id: 2, values: [("nothing", .int(1))])], "Everything") {
            if case .invalidValue(_, _, "nothing", _) = $0 { return true } else { return false }
        }
        fails([StoredObject(id: 2, values: [("string", .int(1))])], "Everything") {
            if case .invalidValue(_, _, "string", _) = $0 { return true } else { return false }
        }
        fails([StoredObject(id: 2, values: [("int", .null)])], "Everything") {
            if case .invalidValue(_, _, "int", _) = $0 { return true } else { return false }
        }
        fails([StoredObject(id: 0, values: [])], "Everything") { $0 == .invalidId(entity: "Everything") }
        fails([StoredObject(id: 1, values: [("buyer", .toOne(9))])], "Purchase") { $0 == .objectNotFound(entity: "Buyer", id: 9) }
        fails([ok], "Nobody") { $0 == .unknownEntity("Nobody") }
        try store.putStoredObjects([StoredObject(id: 4, values: [("email", .string("a@x")), ("age", .int(3))])], of: "Account")
        fails([StoredObject(id: 5, values: [("email", .string("a@x"))])], "Account") {
            if case .uniqueViolation(_, "email", _, 4) = $0 { return true } else { return false }
        }
        // Nothing of the failed calls was written.
        #expect(try store.box(for: Everything.self).count() == 0)
        #expect(try store.box(for: Purchase.self).count() == 0)
        #expect(try store.box(for: Account.self).count() == 1)
        #expect(try store.box(for: Account.self).query { Account.age == 3 }.build().count() == 1)
        // Replacing an object moves its index entries.
        try store.putStoredObjects([StoredObject(id: 4, values: [("email", .string("b@x")), ("age", .int(8))])], of: "Account")
        #expect(try store.box(for: Account.self).query { Account.age == 3 }.build().count() == 0)
        #expect(try store.box(for: Account.self).query { Account.email == "b@x" }.build().findUnique()?.id == 4)
        #expect(try store.verifyGraph().problems.isEmpty)
    }

    @Test func idCountersMovePastLoadedIdsWithOrWithoutATypedBinding() throws {
        let dir = TemporaryDirectory()
        do {
            let s = try Store(directoryPath: dir.path, options: .testing())
            _ = s.box(for: Buyer.self)
            s.close()
        }
        do {
            // No binding in this session: the load's own counter, then a binding made after it.
            let s = try Store(directoryPath: dir.path, options: .testing())
            try s.putStoredObjects([StoredObject(id: 40, values: [("name", .string("forty"))])], of: "Buyer")
            let b = Buyer(name: "next")
            try s.box(for: Buyer.self).put(b)
            #expect(b.id == 41)
            s.close()
        }
        let s = try Store(directoryPath: dir.path, options: .testing())
        defer { s.close() }
        try s.putStoredObjects([StoredObject(id: 90, values: [])], of: "Buyer")
        let c = Buyer(name: "after reopen")
        try s.box(for: Buyer.self).put(c)
        #expect(c.id == 91)
        #expect(try s.box(for: Buyer.self).count() == 4)
    }

    /// Inside a write transaction, objects and edges read without their type are those the
    /// transaction sees: its own puts and removals included (issue 39).
    @Test func storedObjectsAndEdgesSeeTheTransactionsOwnWrites() throws {
        let dir = TemporaryDirectory()
        let s = try Store(directoryPath: dir.path, options: .testing())
        defer { s.close() }
        let ada = Buyer(name: "Ada")
        try s.box(for: Purchase.self).put(Purchase(summary: "kept", buyer: ada))
        let gone = try s.box(for: Buyer.self).put(Buyer(name: "Gone"))
        try s.runInTransaction {
            try s.box(for: Purchase.self).put(Purchase(summary: "new", buyer: ada))
            try s.box(for: Buyer.self).remove(gone)
            var names: [String] = []
            try s.storedObjects(of: "Buyer") { o in
                if case let .string(n)? = o.values.first(where: { $0.name == "name" })?.value { names.append(n) }
                return true
            }
            #expect(names == ["Ada"])
            var summaries: [String] = []
            try s.storedObjects(of: "Purchase") { o in
                if case let .string(n)? = o.values.first(where: { $0.name == "summary" })?.value { summaries.append(n) }
                return true
            }
            #expect(summaries == ["kept", "new"])
            var edges = 0
            try s.storedEdges(of: "Purchase.buyer") { _ in edges += 1; return true }
            #expect(edges == 2)
        }
    }
}
