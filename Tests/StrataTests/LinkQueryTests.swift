import Foundation
import Strata
import Testing

// Three entities in a chain (orders → customer → region) and a to-many (order → tags), for
// relation conditions that nest and combine with `||`.

@Entity
final class LRegion {
    var id: Id = 0
    var name = ""
    @Backlink(\LCustomer.region) var customers: ToMany<LCustomer> = nil
}

@Entity
final class LCustomer {
    var id: Id = 0
    var name = ""
    var region: ToOne<LRegion> = nil
    @Backlink(\LOrder.customer) var orders: ToMany<LOrder> = nil
}

@Entity
final class LTag {
    var id: Id = 0
    var label = ""
}

@Entity
final class LOrder {
    var id: Id = 0
    var amount = 0
    var customer: ToOne<LCustomer> = nil
    var tags: ToMany<LTag> = nil
}

@Suite struct LinkQueryTests {
    /// A random graph with missing targets on every level, then some removals (which clear the
    /// references to what they remove).
    struct Graph {
        let store: Store
        var regions: [LRegion] = []
        var customers: [LCustomer] = []
        var tags: [LTag] = []
        var orders: [LOrder] = []

        init(_ store: Store, seed: UInt64) throws {
            self.store = store
            var rng = SplitMix64(state: seed)
            regions = (0..<5).map { i in let r = LRegion(); r.name = ["Europe", "Asia", "Americas", "Africa", "Oceania"][i]; return r }
            try store.box(for: LRegion.self).put(regions)
            customers = (0..<40).map { i in
                let c = LCustomer()
                c.name = "c\(i % 9)"
                if rng.below(6) != 0 { c.region.target = regions[Int(rng.below(5))] }
                return c
            }
            try store.box(for: LCustomer.self).put(customers)
            tags = (0..<6).map { i in let t = LTag(); t.label = "t\(i)"; return t }
            try store.box(for: LTag.self).put(tags)
            orders = (0..<400).map { _ in
                let o = LOrder()
                o.amount = Int(rng.below(1_000))
                if rng.below(8) != 0 { o.customer.target = customers[Int(rng.below(40))] }
                for _ in 0..<Int(rng.below(3)) { o.tags.append(tags[Int(rng.below(6))]) }
                return o
            }
            try store.box(for: LOrder.self).put(orders)
            // Remove a region, two customers and a tag: references to them are cleared.
            let gone = (regions[1].id, customers[3].id, customers[17].id, tags[2].id)
            try store.box(for: LRegion.self).remove(gone.0)
            try store.box(for: LCustomer.self).remove([gone.1, gone.2])
            try store.box(for: LTag.self).remove(gone.3)
            try reload()
        }

        /// The brute-force side reads everything back, relations resolved.
        mutating func reload() throws {
            regions = try store.box(for: LRegion.self).all()
            customers = try store.box(for: LCustomer.self).all()
            tags = try store.box(for: LTag.self).all()
            orders = try store.box(for: LOrder.self).all()
        }

        func region(of o: LOrder) -> LRegion? { o.customer.target?.region.target }
    }

    @Test(arguments: [1, 2, 3] as [UInt64])
    func nestedLinksAndLinksUnderOrAgreeWithABruteForceFilter(seed: UInt64) throws {
        let dir = TemporaryDirectory()
        let store = try Store(directoryPath: dir.path, options: .testing())
        let g = try Graph(store, seed: seed)
        let orders = store.box(for: LOrder.self), customers = store.box(for: LCustomer.self), regions = store.box(for: LRegion.self)

        func check(_ label: String, _ condition: QueryCondition<LOrder>, _ predicate: (LOrder) -> Bool) throws {
            let q = try orders.query { condition }.build()
            let expected = g.orders.filter(predicate).map(\.id)
            #expect(try q.findIds() == expected, "\(label)")
            #expect(try q.count() == expected.count, "\(label) count")
            #expect(try q.find().map(\.id) == expected, "\(label) find")
        }
        // Two levels: orders → customer → region.
        try check("nested", LOrder.customer.matches { LCustomer.region.matches { LRegion.name == "Europe" } }) {
            g.region(of: $0)?.name == "Europe"
        }
        // A link under ||, beside a plain condition and beside another link.
        try check("link || amount", LOrder.customer.matches { LCustomer.name == "c2" } || LOrder.amount > 900) {
            $0.customer.target?.name == "c2" || $0.amount > 900
        }
        try check("link || link", LOrder.tags.any { LTag.label == "t1" }
                  || LOrder.customer.matches { LCustomer.region.matches { LRegion.name.startsWith("A") } }) { o in
            o.tags.contains { $0.label == "t1" } || (g.region(of: o)?.name.hasPrefix("A") ?? false)
        }
        // Links under && and ||, with a nil check and parentheses.
        try check("mixed", (LOrder.amount < 300 && LOrder.customer.matches { LCustomer.region.isNil() })
                  || (LOrder.customer.isNil() && LOrder.tags.any { LTag.label != "t0" })) { o in
            (o.amount < 300 && o.customer.target != nil && o.customer.target!.region.target == nil)
                || (o.customer.target == nil && o.tags.contains { $0.label != "t0" })
        }
        // A link whose inner condition matches nothing, and one on a removed region's name.
        try check("nothing", LOrder.customer.matches { LCustomer.name == "nobody" }) { _ in false }
        try check("removed region", LOrder.customer.matches { LCustomer.region.matches { LRegion.name == "Asia" } }) { _ in false }

        // Backlinks, nested: regions with a customer who has an order over 950.
        let busy = try regions.query { LRegion.customers.any { LCustomer.orders.any { LOrder.amount > 950 } } }.build().findIds()
        #expect(busy == g.regions.filter { r in
            g.customers.contains { c in c.region.targetId == r.id && g.orders.contains { $0.customer.targetId == c.id && $0.amount > 950 } }
        }.map(\.id))
        // The builder's link is the same condition under &&.
        let viaBuilder = try customers.query { LCustomer.name == "c1" }.link(LCustomer.region) { LRegion.name == "Europe" }.build().findIds()
        let viaCondition = try customers.query { LCustomer.name == "c1" && LCustomer.region.matches { LRegion.name == "Europe" } }.build().findIds()
        #expect(viaBuilder == viaCondition)
        #expect(viaBuilder == g.customers.filter { $0.name == "c1" && $0.region.target?.name == "Europe" }.map(\.id))
        // Property queries and forEach see the same objects.
        let linked = try orders.query { LOrder.customer.matches { LCustomer.name == "c4" } || LOrder.amount == 7 }.build()
        let expected = g.orders.filter { $0.customer.target?.name == "c4" || $0.amount == 7 }
        #expect(try linked.property(LOrder.amount).sum() == expected.reduce(0) { $0 + $1.amount })
        var visited: [Id] = []
        try linked.forEach { visited.append($0.id); return true }
        #expect(visited == expected.map(\.id))
    }

    @Test func linksSeeTheTransactionsOwnWritesAndRollbacks() throws {
        let dir = TemporaryDirectory()
        let store = try Store(directoryPath: dir.path, options: .testing())
        let g = try Graph(store, seed: 9)
        let orders = store.box(for: LOrder.self), regions = store.box(for: LRegion.self)
        let q = try orders.query { LOrder.customer.matches { LCustomer.region.matches { LRegion.name == "Polar" } } }.build()
        #expect(try q.findIds() == [])
        struct Undo: Error {}
        let europe = try #require(g.regions.first { $0.name == "Europe" })
        #expect(throws: Undo.self) {
            try store.runInTransaction {
                europe.name = "Polar"
                try regions.put(europe)
                // Inside the transaction the rename is visible through two levels of links.
                let inside = try q.findIds()
                #expect(inside == g.orders.filter { g.region(of: $0)?.id == europe.id }.map(\.id))
                #expect(!inside.isEmpty)
                throw Undo()
            }
        }
        #expect(try q.findIds() == [])
        europe.name = "Polar"
        try regions.put(europe)
        #expect(try q.count() == g.orders.filter { g.region(of: $0)?.id == europe.id }.count)
    }

    @Test func ordersByTheCountOfAToManyOrABacklink() throws {
        let dir = TemporaryDirectory()
        let store = try Store(directoryPath: dir.path, options: .testing())
        let g = try Graph(store, seed: 4)
        let customers = store.box(for: LCustomer.self), orders = store.box(for: LOrder.self)
        let byOrders = try customers.query().ordered(by: LCustomer.orders.count, .descending).build().findIds()
        let count = { (c: LCustomer) in g.orders.filter { $0.customer.targetId == c.id }.count }
        #expect(byOrders == g.customers.sorted { a, b in count(a) != count(b) ? count(a) > count(b) : a.id < b.id }.map(\.id))
        let byTags = try orders.query { LOrder.amount < 500 }.ordered(by: LOrder.tags.count).ordered(by: LOrder.amount, .descending)
            .build().find(offset: 3, limit: 50).map(\.id)
        let expected = g.orders.filter { $0.amount < 500 }.sorted { a, b in
            a.tags.count != b.tags.count ? a.tags.count < b.tags.count : (a.amount != b.amount ? a.amount > b.amount : a.id < b.id)
        }.dropFirst(3).prefix(50).map(\.id)
        #expect(byTags == Array(expected))
    }

    @Test func anOrderingNoRunCouldFollowIsRefusedWhenTheQueryIsBuilt() throws {
        let dir = TemporaryDirectory()
        let store = try Store(directoryPath: dir.path, options: .testing())
        // A target's to-many has no single value; the error comes from build(), not from a run.
        #expect(throws: StrataError.self) {
            _ = try store.box(for: LOrder.self).query().ordered(by: LOrder.customer, LCustomer.orders).build()
        }
    }

    @Test func anObservedQueryWakesForChangesTwoLinksAway() async throws {
        let dir = TemporaryDirectory()
        let store = try Store(directoryPath: dir.path, options: .testing())
        let g = try Graph(store, seed: 2)
        let query = try store.box(for: LOrder.self).query {
            LOrder.customer.matches { LCustomer.region.matches { LRegion.name == "Polar" } }
        }.build()
        var counts = query.observeCount().makeAsyncIterator()
        #expect(try await counts.next() == 0)
        let europe = try #require(g.regions.first { $0.name == "Europe" })
        europe.name = "Polar"                   // a change of the entity two links away alone
        try store.box(for: LRegion.self).put(europe)
        #expect(try await counts.next() == g.orders.filter { g.region(of: $0)?.id == europe.id }.count)
        store.close()
    }
}
