import Foundation
import Strata
import StrataTestSupport
import Testing

/// Delete rules against a model (issue 55): random transactions over the entities of
/// `DeleteRuleTests` (cascades two levels deep and around cycles, denies on a to-one and on a
/// backlink, shared targets, nullified references), each compared in full with an in-memory
/// model that applies the rules on its own terms; then again after a reopen. A removal the
/// model refuses must throw `deleteDenied` and change nothing.
@Suite struct DeleteRuleModelTests {
    /// The whole graph, as plain values: what the store must hold.
    struct Model: Equatable {
        var customers: Set<Id> = []
        var orders: [Id: Order] = [:]
        var lines: [Id: Id?] = [:]            // line -> product
        var products: Set<Id> = []
        var invoices: Set<Id> = []
        var teachers: Set<Id> = []
        var students: [Id: [Id]] = [:]        // student -> teachers, in order
        var classes: [Id: Klass] = [:]
        var nodes: [Id: Id?] = [:]            // node -> next

        struct Order: Equatable { var customer: Id?; var lines: [Id]; var invoice: Id? }
        struct Klass: Equatable { var members: [Id]; var teacher: Id? }

        enum Kind: CaseIterable { case customer, order, line, product, invoice, teacher, student, klass, node }
        struct Ref: Hashable { var kind: Kind; var id: Id }

        func ids(_ kind: Kind) -> [Id] {
            switch kind {
            case .customer: customers.sorted()
            case .order: orders.keys.sorted()
            case .line: lines.keys.sorted()
            case .product: products.sorted()
            case .invoice: invoices.sorted()
            case .teacher: teachers.sorted()
            case .student: students.keys.sorted()
            case .klass: classes.keys.sorted()
            case .node: nodes.keys.sorted()
            }
        }

        /// What the rules of `r` reach: (cascaded, denied-by) per the declarations of
        /// DeleteRuleTests' entities.
        func cascades(_ r: Ref) -> [Ref] {
            switch r.kind {
            case .customer: orders.filter { $0.value.customer == r.id }.keys.sorted().map { Ref(kind: .order, id: $0) }
            case .order: (orders[r.id]?.lines ?? []).map { Ref(kind: .line, id: $0) }
            case .klass: (classes[r.id]?.members ?? []).map { Ref(kind: .student, id: $0) }
                + (classes[r.id]?.teacher.map { [Ref(kind: .teacher, id: $0)] } ?? [])
            case .node: (nodes[r.id] ?? nil).map { [Ref(kind: .node, id: $0)] } ?? []
            default: []
            }
        }

        func denies(_ r: Ref) -> [Ref] {
            switch r.kind {
            case .order: (orders[r.id]?.invoice).map { [Ref(kind: .invoice, id: $0)] } ?? []
            case .teacher: students.filter { $0.value.contains(r.id) }.keys.map { Ref(kind: .student, id: $0) }
            default: []
            }
        }

        /// Removes `root` under the rules; false (and nothing changed) when a deny refuses.
        mutating func remove(_ root: Ref) -> Bool {
            var planned: Set<Ref> = [root], pending = [root]
            while let next = pending.popLast() {
                for r in cascades(next) where planned.insert(r).inserted { pending.append(r) }
            }
            for r in planned where denies(r).contains(where: { !planned.contains($0) }) { return false }
            for r in planned {
                switch r.kind {
                case .customer: customers.remove(r.id)
                case .order: orders[r.id] = nil
                case .line: lines[r.id] = nil
                case .product: products.remove(r.id)
                case .invoice: invoices.remove(r.id)
                case .teacher: teachers.remove(r.id)
                case .student: students[r.id] = nil
                case .klass: classes[r.id] = nil
                case .node: nodes[r.id] = nil
                }
            }
            // Nullify: no reference to a removed object is left.
            func gone(_ kind: Kind, _ id: Id?) -> Bool { id.map { planned.contains(Ref(kind: kind, id: $0)) } ?? false }
            for (k, o) in orders {
                orders[k] = Order(customer: gone(.customer, o.customer) ? nil : o.customer,
                                  lines: o.lines.filter { !gone(.line, $0) }, invoice: gone(.invoice, o.invoice) ? nil : o.invoice)
            }
            for (k, p) in lines where gone(.product, p) { lines[k] = .some(nil) }
            for (k, t) in students { students[k] = t.filter { !gone(.teacher, $0) } }
            for (k, c) in classes {
                classes[k] = Klass(members: c.members.filter { !gone(.student, $0) }, teacher: gone(.teacher, c.teacher) ? nil : c.teacher)
            }
            for (k, n) in nodes where gone(.node, n) { nodes[k] = .some(nil) }
            return true
        }
    }

    /// The store's graph read back as a model.
    static func read(_ store: Store) throws -> Model {
        var m = Model()
        m.customers = Set(try store.box(for: RuleCustomer.self).all().map(\.id))
        for o in try store.box(for: RuleOrder.self).all() {
            m.orders[o.id] = Model.Order(customer: o.customer.targetId, lines: o.lines.map(\.id), invoice: o.invoice.targetId)
        }
        for l in try store.box(for: RuleLine.self).all() { m.lines[l.id] = .some(l.product.targetId) }
        m.products = Set(try store.box(for: RuleProduct.self).all().map(\.id))
        m.invoices = Set(try store.box(for: RuleInvoice.self).all().map(\.id))
        m.teachers = Set(try store.box(for: RuleTeacher.self).all().map(\.id))
        for s in try store.box(for: RuleStudent.self).all() { m.students[s.id] = s.teachers.map(\.id) }
        for c in try store.box(for: RuleClass.self).all() { m.classes[c.id] = Model.Klass(members: c.members.map(\.id), teacher: c.teacher.targetId) }
        for n in try store.box(for: RuleNode.self).all() { m.nodes[n.id] = .some(n.next.targetId) }
        return m
    }

    /// One random operation, on the store (inside the caller's transaction) and on the model.
    static func step(_ store: Store, _ model: inout Model, _ random: inout SplitMix64, denials: inout Int) throws {
        func pick(_ kind: Model.Kind) -> Id? {
            let ids = model.ids(kind)
            return ids.isEmpty ? nil : ids[Int(random.next() % UInt64(ids.count))]
        }
        let total = Model.Kind.allCases.map { model.ids($0).count }.reduce(0, +)
        // Below 150 objects, mostly growth; above, as many removals as additions.
        let removal = random.next() % 100 < (total < 150 ? 20 : 50)
        if removal {
            let kind = Model.Kind.allCases[Int(random.next() % UInt64(Model.Kind.allCases.count))]
            guard let id = pick(kind) else { return }
            var expected = model
            let allowed = expected.remove(Model.Ref(kind: kind, id: id))
            // As a Result: a `catch` of one case of a typed error crashed the 6.3.1 compiler.
            let outcome = Result { () throws(StrataError) -> Bool in
                switch kind {
                case .customer: try store.box(for: RuleCustomer.self).remove(id)
                case .order: try store.box(for: RuleOrder.self).remove(id)
                case .line: try store.box(for: RuleLine.self).remove(id)
                case .product: try store.box(for: RuleProduct.self).remove(id)
                case .invoice: try store.box(for: RuleInvoice.self).remove(id)
                case .teacher: try store.box(for: RuleTeacher.self).remove(id)
                case .student: try store.box(for: RuleStudent.self).remove(id)
                case .klass: try store.box(for: RuleClass.self).remove(id)
                case .node: try store.box(for: RuleNode.self).remove(id)
                }
            }
            switch outcome {
            case let .success(removed):
                #expect(allowed && removed, "\(kind) \(id): removed, the model refused")
            case .failure(.deleteDenied):
                #expect(!allowed, "\(kind) \(id): refused, the model allowed")
                denials += 1
                return
            case let .failure(error):
                throw error
            }
            model = expected
            return
        }
        switch random.next() % 8 {
        case 0:
            let c = RuleCustomer(name: "c")
            try store.box(for: RuleCustomer.self).put(c)
            model.customers.insert(c.id)
        case 1:
            let o = RuleOrder(amount: 1)
            if let c = pick(.customer), random.next() % 4 != 0 { o.customer.targetId = c }
            for _ in 0..<(random.next() % 3) {
                let l = RuleLine(sku: "l")
                if let p = pick(.product), random.next() % 3 != 0 { l.product.targetId = p }
                o.lines.append(l)
            }
            if random.next() % 6 == 0 {
                let i = RuleInvoice()
                try store.box(for: RuleInvoice.self).put(i)
                model.invoices.insert(i.id)
                o.invoice.targetId = i.id
            }
            try store.box(for: RuleOrder.self).put(o)
            for l in o.lines { model.lines[l.id] = .some(l.product.targetId) }
            model.orders[o.id] = Model.Order(customer: o.customer.targetId, lines: o.lines.map(\.id), invoice: o.invoice.targetId)
        case 2:
            // A line shared by a second order.
            guard let o = pick(.order), let l = pick(.line), let order = try store.box(for: RuleOrder.self).get(o),
                  !order.lines.contains(where: { $0.id == l }), let line = try store.box(for: RuleLine.self).get(l) else { return }
            order.lines.append(line)
            try store.box(for: RuleOrder.self).put(order)
            model.orders[o]!.lines.append(l)
        case 3:
            let p = RuleProduct(name: "p")
            try store.box(for: RuleProduct.self).put(p)
            model.products.insert(p.id)
        case 4:
            let t = RuleTeacher(name: "t")
            try store.box(for: RuleTeacher.self).put(t)
            model.teachers.insert(t.id)
        case 5:
            let s = RuleStudent(name: "s")
            var chosen: [Id] = []
            for _ in 0..<(random.next() % 3) { if let t = pick(.teacher), !chosen.contains(t) { chosen.append(t) } }
            for t in chosen { s.teachers.append(try #require(try store.box(for: RuleTeacher.self).get(t))) }
            try store.box(for: RuleStudent.self).put(s)
            model.students[s.id] = chosen
        case 6:
            let k = RuleClass()
            var members: [Id] = []
            for _ in 0..<(random.next() % 3) { if let s = pick(.student), !members.contains(s) { members.append(s) } }
            for s in members { k.members.append(try #require(try store.box(for: RuleStudent.self).get(s))) }
            if let t = pick(.teacher), random.next() % 2 == 0 { k.teacher.targetId = t }
            try store.box(for: RuleClass.self).put(k)
            model.classes[k.id] = Model.Klass(members: members, teacher: k.teacher.targetId)
        default:
            let n = RuleNode()
            n.label = "n"
            try store.box(for: RuleNode.self).put(n)
            model.nodes[n.id] = .some(nil)
            // Point it at a random node (itself included: a cycle of one), or point a random
            // node at it (closing longer cycles).
            if let target = pick(.node) {
                if random.next() % 2 == 0 {
                    n.next.targetId = target
                    try store.box(for: RuleNode.self).put(n)
                    model.nodes[n.id] = .some(target)
                } else if let other = try store.box(for: RuleNode.self).get(target) {
                    other.next.targetId = n.id
                    try store.box(for: RuleNode.self).put(other)
                    model.nodes[target] = .some(n.id)
                }
            }
        }
    }

    @Test func randomTransactionsMatchTheModel() throws {
        let dir = TemporaryDirectory()
        var store = try Store(directoryPath: dir.path)
        var model = Model()
        var random = SplitMix64(state: 0xDE1E7E)
        var denials = 0
        let transactions = 1_500
        for number in 1...transactions {
            var next = model
            try store.runInTransaction {
                for _ in 0..<(1 + random.next() % 3) { try Self.step(store, &next, &random, denials: &denials) }
            }
            model = next
            let stored = try Self.read(store)
            #expect(stored == model, "after transaction \(number)")
            if stored != model { break }
            if number % 100 == 0 { #expect(try store.verifyGraph().isClean, "verify after \(number)") }
        }
        store.close()
        store = try Store(directoryPath: dir.path)
        defer { store.close() }
        #expect(try Self.read(store) == model, "after reopen")
        #expect(try store.verifyGraph().isClean)
        #expect(denials >= 20, "\(denials) removals refused")
        print("delete rules model: \(transactions) transactions, \(denials) removals refused, \(Model.Kind.allCases.map { model.ids($0).count }.reduce(0, +)) objects at the end")
    }
}
