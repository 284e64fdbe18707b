import Foundation
import Strata
import StrataStorage
import Testing

@Entity
final class CxCustomer {
    var id: Id = 0
    var name = ""
}

@Entity
final class CxOrder {
    var id: Id = 0
    /// customer, then day, then note: a to-one leading a three-part index.
    @Index(with: \CxOrder.day, \CxOrder.note) var customer: ToOne<CxCustomer> = nil
    var day = 0
    var note: String? = nil
    @Index(with: \CxOrder.amount) var status = ""
    var amount = 0.0
    /// A case-insensitive index beside the composite ones.
    @Index(caseInsensitive: true) var tag = ""
}

/// The same entity without indexes: a store written with it gains the indexes at the first
/// binding of ``CxOrder``.
@Entity(name: "CxOrder")
final class CxOrderPlain {
    var id: Id = 0
    var customer: ToOne<CxCustomer> = nil
    var day = 0
    var note: String? = nil
    var status = ""
    var amount = 0.0
    var tag = ""
}

@Suite struct CompositeIndexTests {
    static let statuses = ["open", "paid", "shipped", ""]
    static let notes: [String?] = [nil, "rush", "gift", "Rush", ""]

    static func fill(_ store: Store, seed: UInt64) throws -> [CxCustomer] {
        var rng = SplitMix64(state: seed)
        let customers = (0..<12).map { i in let c = CxCustomer(); c.name = "c\(i)"; return c }
        try store.box(for: CxCustomer.self).put(customers)
        let orders = (0..<900).map { _ in
            let o = CxOrder()
            if rng.below(6) != 0 { o.customer.target = customers[Int(rng.below(customers.count))] }
            o.day = Int(rng.below(20)) - 5
            o.note = notes[Int(rng.below(notes.count))]
            o.status = statuses[Int(rng.below(statuses.count))]
            o.amount = Double(Int(rng.below(40))) / 4 - 2
            o.tag = ["A", "a", "b", "B"][Int(rng.below(4))]
            return o
        }
        try store.box(for: CxOrder.self).put(orders)
        return customers
    }

    @Test(arguments: [1, 2] as [UInt64])
    func compositeConditionsAgreeWithABruteForceFilter(seed: UInt64) throws {
        let dir = TemporaryDirectory()
        let store = try Store(directoryPath: dir.path, options: .testing())
        var customers = try Self.fill(store, seed: seed)
        let box = store.box(for: CxOrder.self)
        // Updates (a component and the leading to-one move), removals of orders, and removals
        // of customers, which clear the to-one of their orders and so move their entries.
        for o in try box.all() where o.id % 5 == 0 {
            o.day += 1
            if o.id % 3 == 0 { o.customer.target = customers[Int(o.id) % customers.count] }
            try box.put(o)
        }
        for o in try box.all() where o.id % 13 == 0 { try box.remove(o) }
        try store.box(for: CxCustomer.self).remove([customers[2].id, customers[7].id])
        customers = try store.box(for: CxCustomer.self).all()
        let all = try box.all()

        func check(_ label: String, _ condition: QueryCondition<CxOrder>, _ predicate: (CxOrder) -> Bool) throws {
            let q = try box.query { condition }.build()
            let expected = all.filter(predicate).map(\.id)
            #expect(try q.findIds() == expected, "\(label)")
            #expect(try q.count() == expected.count, "\(label) count")
        }
        for c in customers.prefix(5) {
            for d in [-5, 0, 3, 14] {
                try check("customer == \(c.name) && day == \(d)", CxOrder.customer == c && CxOrder.day == d) {
                    $0.customer.targetId == c.id && $0.day == d
                }
                try check("customer && day > \(d)", CxOrder.customer == c && CxOrder.day > d) { $0.customer.targetId == c.id && $0.day > d }
                try check("day <= && customer", CxOrder.day <= d && CxOrder.customer == c) { $0.customer.targetId == c.id && $0.day <= d }
                try check("customer && day between", CxOrder.customer == c && CxOrder.day.between(d, d + 4)) {
                    $0.customer.targetId == c.id && (d...(d + 4)).contains($0.day)
                }
                for n in Self.notes {
                    try check("all three", CxOrder.customer == c && CxOrder.day == d && CxOrder.note == n) {
                        $0.customer.targetId == c.id && $0.day == d && $0.note == n
                    }
                }
                try check("note startsWith", CxOrder.customer == c && CxOrder.day == d && CxOrder.note.startsWith("r")) {
                    $0.customer.targetId == c.id && $0.day == d && ($0.note?.hasPrefix("r") ?? false)
                }
            }
            try check("customer alone", CxOrder.customer == c) { $0.customer.targetId == c.id }
            try check("customer isIn", CxOrder.customer.isIn([c.id, customers[0].id])) { [c.id, customers[0].id].contains($0.customer.targetId ?? 0) }
        }
        try check("no customer && day", CxOrder.customer.isNil() && CxOrder.day == 2) { $0.customer.targetId == nil && $0.day == 2 }
        try check("removed customer", CxOrder.customer == 0 && CxOrder.day < 0) { $0.customer.targetId == nil && $0.day < 0 }
        for s in Self.statuses {
            try check("status && amount", CxOrder.status == s && CxOrder.amount >= 1.5) { $0.status == s && $0.amount >= 1.5 }
            try check("status && amount <", CxOrder.status == s && CxOrder.amount < 0) { $0.status == s && $0.amount < 0 }
            try check("status alone", CxOrder.status == s) { $0.status == s }
            try check("status startsWith", CxOrder.status.startsWith(String(s.prefix(1)))) { $0.status.hasPrefix(String(s.prefix(1))) }
            try check("status || composite", (CxOrder.status == s && CxOrder.amount == 0.5) || (CxOrder.customer == customers[0] && CxOrder.day == 1)) {
                ($0.status == s && $0.amount == 0.5) || ($0.customer.targetId == customers[0].id && $0.day == 1)
            }
        }
        try check("tag ci", CxOrder.tag.isEqual(to: "a", caseSensitive: false) && CxOrder.status == "open") {
            $0.tag.lowercased() == "a" && $0.status == "open"
        }
        #expect(try store.verifyGraph().problems.isEmpty)
    }

    @Test func aQueryOnTwoComponentsReadsOnlyItsEntries() throws {
        let dir = TemporaryDirectory()
        let store = try Store(directoryPath: dir.path, options: .testing())
        let customers = try Self.fill(store, seed: 5)
        let box = store.box(for: CxOrder.self)
        let expected = try box.all().filter { $0.customer.targetId == customers[4].id && $0.day == 7 }.count
        let before = store.statistics()
        let found = try box.query { CxOrder.customer == customers[4] && CxOrder.day == 7 }.build().count()
        let after = store.statistics()
        #expect(found == expected)
        #expect(after.indexEntriesRead - before.indexEntriesRead == UInt64(expected))
        #expect(after.objectsRead - before.objectsRead <= UInt64(expected))
    }

    @Test func aStoreWithoutTheIndexesGainsThemAtTheFirstBinding() throws {
        let dir = TemporaryDirectory()
        let customer = CxCustomer()
        do {
            let store = try Store(directoryPath: dir.path, options: .testing())
            let plain = store.box(for: CxOrderPlain.self)
            for i in 0..<50 {
                let o = CxOrderPlain()
                if i % 2 == 0 { o.customer.target = customer }
                o.day = i % 5
                o.status = i % 3 == 0 ? "open" : "paid"
                o.amount = Double(i)
                try plain.put(o)
            }
            store.close()
        }
        let store = try Store(directoryPath: dir.path, options: .testing())
        let box = store.box(for: CxOrder.self)
        #expect(try box.query { CxOrder.customer == customer && CxOrder.day == 2 }.build().count() == 5)
        #expect(try box.query { CxOrder.status == "open" && CxOrder.amount > 20 }.build().count() == 10)
        #expect(try store.verifyGraph().problems.isEmpty)
        let city = try #require(try store.storedEntities().first { $0.name == "CxOrder" }?.properties.first { $0.name == "customer" })
        #expect(city.index == .index)
        store.close()
        // And back: the plain declaration drops them.
        let again = try Store(directoryPath: dir.path, options: .testing())
        #expect(try again.box(for: CxOrderPlain.self).query { CxOrderPlain.day == 2 }.build().count() == 10)
        #expect(try again.verifyGraph().problems.isEmpty)
        #expect(try again.storedEntities().first { $0.name == "CxOrder" }?.properties.allSatisfy { $0.index == .none } == true)
    }

    /// SPEC.md §11.2 and §13: the composite flag and the components' ids in the record, and an
    /// entry holding the components' encodings one after another.
    @Test func entriesAndRecordsAreStoredAsTheSpecSays() throws {
        let dir = TemporaryDirectory()
        do {
            let store = try Store(directoryPath: dir.path, options: .testing())
            let c = CxCustomer()
            try store.box(for: CxCustomer.self).put(c)       // id 1
            let o = CxOrder()
            o.customer.target = c
            o.day = -2
            o.note = "a"
            o.status = "s"
            o.amount = 1
            o.tag = "T"
            try store.box(for: CxOrder.self).put(o)          // id 1
            store.close()
        }
        let stored = try StoredBytes(directory: dir.path)
        let engine = stored.engine, meta = stored.meta
        defer { engine.close() }
        let indexes = try #require(stored.indexes)
        let id: [UInt8] = [0, 0, 0, 0, 0, 0, 0, 1]
        // Entity 2 (CxOrder), property 1 (customer): the target id 1 (tag 2), day -2 (tag 1,
        // sign bit flipped), note "a" (tag 4, terminator), then the object's id.
        let customerEntry: [UInt8] = [0, 0, 0, 2, 0, 0, 0, 1, 2, 0, 0, 0, 0, 0, 0, 0, 1,
                                      1, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFE, 4, 0x61, 0, 1] + id
        let keys = try engine.scan(indexes).map(\.key)
        #expect(keys.contains(customerEntry))
        #expect(keys.count == 3)
        let record = try #require(try engine.get([2, 0, 0, 0, 2], in: meta))
        // customer: id 1, type 15, flags 64|4|1 (composite, indexed, optional), target, then the
        // default (nil, 0, nil: 00 · 01 8000000000000000 · 00) and the components 2 (day), 3 (note).
        let customer: [UInt8] = [1, 8] + Array("customer".utf8) + [15, 69, 10] + Array("CxCustomer".utf8)
            + [11, 0, 1, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 2, 2, 3]
        #expect(record.count > customer.count + 10)
        #expect(record.dropFirst(3 + 7 + 2).starts(with: customer))
    }
    /// A to-one stored as the id 0 (a crafted object: the writer stores null) reads as no target
    /// everywhere: in the Swift type, in a query's matcher and in the composite index, so that
    /// an index answer and a scan agree.
    @Test func aToOneStoredAsZeroIsNilToQueriesAndIndexes() throws {
        let dir = TemporaryDirectory()
        do {
            let store = try Store(directoryPath: dir.path, options: .testing())
            let c = CxCustomer()
            try store.box(for: CxCustomer.self).put(c)
            let lone = CxOrder(), owned = CxOrder()
            lone.day = 2
            owned.day = 2
            owned.customer.target = c
            try store.box(for: CxOrder.self).put([lone, owned])   // ids 1 and 2
            store.close()
        }
        do {
            let engine = try Engine.open(directory: dir.path, options: EngineOptions())
            let objects = try #require(engine.existingKeySpace(named: "objects") as KeySpace?)
            let key: [UInt8] = [0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 1]   // CxOrder (entity 2), id 1
            var bytes = try #require(try engine.get(key, in: objects))
            // codec version, then the customer (property 1) as null: tag 1 << 3 | 4.
            #expect(Array(bytes.prefix(2)) == [1, 0x0C])
            bytes.replaceSubrange(1...1, with: [0x08, 0x00])   // tag 1 << 3 | varint, then 0
            var batch = WriteBatch()
            batch.put(key, bytes, in: objects)
            try engine.write(batch, durability: .sync)
            engine.close()
        }
        let store = try Store(directoryPath: dir.path, options: .testing())
        let orders = store.box(for: CxOrder.self)
        let lone = try #require(try orders.get(1))
        #expect(lone.customer.targetId == nil)
        #expect(try orders.query { CxOrder.customer.isNil() && CxOrder.day == 2 }.build().findIds() == [1])
        #expect(try orders.query { CxOrder.customer.isNil() }.build().findIds() == [1])
        // A condition the index cannot serve: the matcher alone.
        #expect(try orders.query { CxOrder.customer.isNil() && CxOrder.amount > -1 }.build().findIds() == [1])
        #expect(try store.verifyGraph().problems.isEmpty)
    }
}
