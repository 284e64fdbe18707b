import Foundation
import Strata
import StrataTestSupport
import Synchronization
import Testing

// A shop and a school with delete rules (issue 55): removing a customer removes her orders and
// their lines (cascade, two levels), never the products lines point at (nullify); an order with
// an invoice cannot be removed (deny on a to-one); a teacher with students cannot be removed
// (deny on a backlink); removing a class removes its members and its teacher (cascade), which
// the teacher's deny then allows; a ring of nodes cascades around its cycle.

@Entity final class RuleCustomer {
    var id: Id = 0
    var name = ""
    @DeleteRule(.cascade) @Backlink(\RuleOrder.customer) var orders: ToMany<RuleOrder> = nil
    init(name: String = "") { self.name = name }
}

@Entity final class RuleOrder {
    var id: Id = 0
    var amount: Int64 = 0
    var customer: ToOne<RuleCustomer> = nil
    @DeleteRule(.cascade) var lines: ToMany<RuleLine> = nil
    @DeleteRule(.deny) var invoice: ToOne<RuleInvoice> = nil
    init(amount: Int64 = 0) { self.amount = amount }
}

@Entity final class RuleLine {
    var id: Id = 0
    var sku = ""
    var product: ToOne<RuleProduct> = nil
    init(sku: String = "") { self.sku = sku }
}

@Entity final class RuleProduct {
    var id: Id = 0
    var name = ""
    @Backlink(\RuleLine.product) var lines: ToMany<RuleLine> = nil
    init(name: String = "") { self.name = name }
}

@Entity final class RuleInvoice {
    var id: Id = 0
    var number = ""
}

@Entity final class RuleTeacher {
    var id: Id = 0
    var name = ""
    @DeleteRule(.deny) @Backlink(\RuleStudent.teachers) var students: ToMany<RuleStudent> = nil
    init(name: String = "") { self.name = name }
}

@Entity final class RuleStudent {
    var id: Id = 0
    var name = ""
    var teachers: ToMany<RuleTeacher> = nil
    init(name: String = "") { self.name = name }
}

@Entity final class RuleClass {
    var id: Id = 0
    @DeleteRule(.cascade) var members: ToMany<RuleStudent> = nil
    @DeleteRule(.cascade) var teacher: ToOne<RuleTeacher> = nil
}

@Entity final class RuleNode {
    var id: Id = 0
    var label = ""
    @DeleteRule(.cascade) var next: ToOne<RuleNode> = nil
}

@Suite struct DeleteRuleTests {
    /// Two customers, each with orders of two lines; every line points at one of two products.
    static func shop(_ store: Store) throws -> (customers: [RuleCustomer], products: [RuleProduct]) {
        let products = [RuleProduct(name: "tea"), RuleProduct(name: "cake")]
        let customers = [RuleCustomer(name: "Ada"), RuleCustomer(name: "Grace")]
        var orders: [RuleOrder] = []
        for (c, customer) in customers.enumerated() {
            for k in 0..<(c == 0 ? 3 : 1) {
                let order = RuleOrder(amount: Int64(10 * (k + 1)))
                order.customer.target = customer
                for l in 0..<2 {
                    let line = RuleLine(sku: "c\(c)-o\(k)-l\(l)")
                    line.product.target = products[l]
                    order.lines.append(line)
                }
                orders.append(order)
            }
        }
        try store.box(for: RuleOrder.self).put(orders)
        return (customers, products)
    }

    @Test func aCascadeRemovesWhatItReachesAndNothingElse() throws {
        let dir = TemporaryDirectory()
        var store = try Store(directoryPath: dir.path)
        let (customers, _) = try Self.shop(store)
        store.close()
        // A new session that opens only the customers' box: the rules of orders (their lines)
        // are learned through the relations' types.
        store = try Store(directoryPath: dir.path)
        defer { store.close() }
        let removed = Mutex<[String: Set<Id>]>([:])
        let token = try store.subscribe(to: RuleOrder.self, RuleLine.self) { changes in
            removed.withLock { r in
                for (name, c) in changes.entities { r[name, default: []].formUnion(c.removed) }
            }
        }
        defer { token.cancel() }
        #expect(try store.box(for: RuleCustomer.self).remove(customers[0].id))
        let orders = try store.box(for: RuleOrder.self).all()
        #expect(orders.count == 1 && orders[0].customer.targetId == customers[1].id)
        let lines = try store.box(for: RuleLine.self).all()
        #expect(lines.map(\.sku).sorted() == ["c1-o0-l0", "c1-o0-l1"])
        let products = try store.box(for: RuleProduct.self).all()
        #expect(products.count == 2)   // what the lines pointed at stays
        #expect(products.map { $0.lines.count } == [1, 1])
        #expect(try store.verifyGraph().isClean)
        // Observers hear of every removal: three orders and six lines.
        let deadline = Date().addingTimeInterval(10)
        while removed.withLock({ $0["RuleLine"]?.count ?? 0 }) < 6 && Date() < deadline { usleep(5_000) }
        #expect(removed.withLock { $0["RuleOrder"]?.count } == 3)
        #expect(removed.withLock { $0["RuleLine"]?.count } == 6)
    }

    @Test func aDenyRefusesTheRemovalAndWritesNothing() throws {
        let dir = TemporaryDirectory()
        let store = try Store(directoryPath: dir.path)
        defer { store.close() }
        let (customers, _) = try Self.shop(store)
        // Ada's second order gets an invoice: removing Ada would cascade to it, and an order
        // with an invoice is never removed.
        let orders = store.box(for: RuleOrder.self)
        let invoiced = try #require(try orders.all().filter { $0.customer.targetId == customers[0].id }.dropFirst().first)
        let invoice = RuleInvoice()
        invoice.number = "2026-001"
        invoiced.invoice.target = invoice
        try orders.put(invoiced)
        let before = try (orders.count(), store.box(for: RuleLine.self).count(), store.box(for: RuleCustomer.self).count())
        #expect(throws: StrataError.deleteDenied(entity: "RuleOrder", id: invoiced.id, relation: "RuleOrder.invoice", count: 1)) {
            try store.box(for: RuleCustomer.self).remove(customers[0])
        }
        #expect(try (orders.count(), store.box(for: RuleLine.self).count(), store.box(for: RuleCustomer.self).count()) == before)
        // Inside a transaction of the app's: the refused removal wrote nothing, the rest commits.
        try store.runInTransaction {
            try store.box(for: RuleCustomer.self).put(RuleCustomer(name: "Alan"))
            #expect(throws: StrataError.self) { try store.box(for: RuleCustomer.self).remove(customers[0]) }
        }
        #expect(try store.box(for: RuleCustomer.self).count() == 3)
        #expect(try orders.count() == before.0)
        // The invoice gone, the removal goes through.
        #expect(try store.box(for: RuleInvoice.self).remove(invoice.id))
        #expect(try store.box(for: RuleCustomer.self).remove(customers[0]))
        #expect(try orders.count() == 1)
        #expect(try store.verifyGraph().isClean)
    }

    @Test func aDenyOnABacklinkCountsOnlyWhatTheRemovalLeaves() throws {
        let dir = TemporaryDirectory()
        let store = try Store(directoryPath: dir.path)
        defer { store.close() }
        let teacher = RuleTeacher(name: "Hopper")
        let students = (0..<3).map { RuleStudent(name: "s\($0)") }
        for s in students { s.teachers.append(teacher) }
        let outsider = RuleStudent(name: "outsider")
        let klass = RuleClass()
        klass.members.append(contentsOf: students)
        klass.teacher.target = teacher
        try store.box(for: RuleClass.self).put(klass)
        #expect(throws: StrataError.deleteDenied(entity: "RuleTeacher", id: teacher.id, relation: "RuleTeacher.students", count: 3)) {
            try store.box(for: RuleTeacher.self).remove(teacher)
        }
        // Removing the class removes its members and its teacher: every student of the teacher
        // goes in the same removal, so the deny has nothing left to protect.
        outsider.teachers.append(teacher)
        try store.box(for: RuleStudent.self).put(outsider)
        #expect(throws: StrataError.deleteDenied(entity: "RuleTeacher", id: teacher.id, relation: "RuleTeacher.students", count: 1)) {
            try store.box(for: RuleClass.self).remove(klass)
        }
        #expect(try store.box(for: RuleStudent.self).count() == 4)
        outsider.teachers.removeAll()
        try store.box(for: RuleStudent.self).put(outsider)
        #expect(try store.box(for: RuleClass.self).remove(klass))
        #expect(try store.box(for: RuleStudent.self).all().map(\.name) == ["outsider"])
        #expect(try store.box(for: RuleTeacher.self).count() == 0)
        #expect(try store.verifyGraph().isClean)
    }

    @Test func cyclesAndSharedTargetsAreRemovedOnce() throws {
        let dir = TemporaryDirectory()
        let store = try Store(directoryPath: dir.path)
        defer { store.close() }
        let nodes = store.box(for: RuleNode.self)
        // A ring of five and a separate pair.
        let ring = (0..<5).map { i -> RuleNode in let n = RuleNode(); n.label = "r\(i)"; return n }
        try nodes.put(ring)
        for (i, n) in ring.enumerated() { n.next.target = ring[(i + 1) % ring.count] }
        try nodes.put(ring)
        let pair = (0..<2).map { i -> RuleNode in let n = RuleNode(); n.label = "p\(i)"; return n }
        pair[0].next.target = pair[1]
        try nodes.put(pair)
        #expect(try nodes.remove(ring[2].id))
        #expect(try nodes.all().map(\.label).sorted() == ["p0", "p1"])
        // Two orders sharing a line: removing one removes the line, and the other's list no
        // longer holds it.
        let orders = store.box(for: RuleOrder.self)
        let shared = RuleLine(sku: "shared")
        let a = RuleOrder(amount: 1), b = RuleOrder(amount: 2)
        a.lines.append(shared)
        b.lines.append(shared)
        b.lines.append(RuleLine(sku: "own"))
        try orders.put([a, b])
        #expect(try orders.remove(a.id))
        #expect(try store.box(for: RuleLine.self).all().map(\.sku) == ["own"])
        #expect(try orders.get(b.id)?.lines.map(\.sku) == ["own"])
        #expect(try orders.remove([b.id]) == 1)
        #expect(try store.box(for: RuleLine.self).count() == 0)
        #expect(try store.verifyGraph().isClean)
    }

    /// `removeAll()` and a query's `remove()` follow the rules too.
    @Test func removeAllAndQueryRemovalFollowTheRules() throws {
        let dir = TemporaryDirectory()
        let store = try Store(directoryPath: dir.path)
        defer { store.close() }
        let (customers, _) = try Self.shop(store)
        #expect(try store.box(for: RuleCustomer.self).query { RuleCustomer.name == "Grace" }.build().remove() == 1)
        #expect(try store.box(for: RuleOrder.self).all().allSatisfy { $0.customer.targetId == customers[0].id })
        #expect(try store.box(for: RuleCustomer.self).removeAll() == 1)
        #expect(try store.box(for: RuleOrder.self).count() == 0)
        #expect(try store.box(for: RuleLine.self).count() == 0)
        #expect(try store.box(for: RuleProduct.self).count() == 2)
        #expect(try store.verifyGraph().isClean)
    }
}
