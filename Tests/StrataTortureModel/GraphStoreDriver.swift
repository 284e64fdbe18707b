import Foundation
import Strata
import StrataStorage

/// Runs the workload's operations on a real store, and compares a store with a model.
public enum GraphStoreDriver {
    /// Opens a store for the workload (small memtable, so that flushes and compactions happen
    /// every few hundred transactions).
    public static func open(_ directory: String, durability: Durability = .none,
                            listener: (@Sendable (EngineEvent) -> Void)? = nil) throws -> Store {
        var options = StoreOptions()
        options.durability = durability
        options.engine.memtableBytes = 64 << 10
        options.engine.targetSegmentBytes = 64 << 10
        options.engine.eventListener = listener
        options.engine.encryptionKey = encryptionKey
        return try Store(directoryPath: directory, options: options)
    }

    /// The key of an encrypted run: `STRATA_TORTURE_KEY`, 64 hex digits (the kill test's child
    /// inherits it), so that the crash campaigns run on an encrypted store too. A test key in a
    /// test's environment; a real key never goes there.
    public static var encryptionKey: [UInt8]? {
        guard let hex = ProcessInfo.processInfo.environment["STRATA_TORTURE_KEY"], hex.utf8.count == 64 else { return nil }
        let digits = Array(hex.utf8)
        return stride(from: 0, to: 64, by: 2).compactMap { UInt8(String(decoding: digits[$0..<($0 + 2)], as: UTF8.self), radix: 16) }
    }

    /// The number of the last committed transaction (0 for a fresh store).
    public static func lastTransaction(_ store: Store) throws -> Int64 {
        try store.box(for: TLedger.self).get(1)?.last ?? 0
    }

    /// Runs transaction `number` on `model` and atomically on `store`; returns what it touched.
    /// When the store's transaction fails, the model is ahead of the store: stop there.
    /// `beforeCommit` runs inside the transaction after its last write (a check of what it is
    /// about to commit).
    @discardableResult
    public static func runTransaction(_ number: Int64, seed: UInt64, store: Store, model: inout GraphModel,
                                      beforeCommit: () throws -> Void = {}) throws -> TouchedObjects {
        let (ops, touched) = model.nextTransaction(number, seed: seed)
        try store.runInTransaction {
            for op in ops { try apply(op, to: store) }
            let ledgers = store.box(for: TLedger.self)
            let ledger = try ledgers.get(1) ?? TLedger()
            ledger.last = number
            try ledgers.put(ledger)
            try beforeCommit()
        }
        return touched
    }

    /// One operation through the public object API.
    public static func apply(_ op: GraphOperation, to store: Store) throws {
        let customers = store.box(for: TCustomer.self), orders = store.box(for: TOrder.self)
        let students = store.box(for: TStudent.self), teachers = store.box(for: TTeacher.self)
        switch op {
        case let .newCustomer(name):
            let c = TCustomer()
            c.name = name
            try customers.put(c)
        case let .newOrder(seq, customer):
            let o = TOrder()
            o.seq = seq
            if let customer { o.customer.target = try customers.get(customer) }
            try orders.put(o)
        case let .newOrderWithNewCustomer(seq, name):
            let o = TOrder(), c = TCustomer()
            o.seq = seq
            c.name = name
            o.customer.target = c
            try orders.put(o)
        case let .setCustomer(order, customer):
            guard let o = try orders.get(order) else { throw DriverError.missing("TOrder \(order)") }
            o.customer.target = try customer.flatMap { try customers.get($0) }
            try orders.put(o)
        case let .removeOrder(id):
            try orders.remove(id)
        case let .removeCustomer(id):
            try customers.remove(id)
        case let .newTeacher(name):
            let t = TTeacher()
            t.name = name
            try teachers.put(t)
        case let .newStudent(name, list):
            let s = TStudent()
            s.name = name
            for id in list {
                guard let t = try teachers.get(id) else { throw DriverError.missing("TTeacher \(id)") }
                s.teachers.append(t)
            }
            try students.put(s)
        case let .addTeacher(student, teacher):
            guard let s = try students.get(student), let t = try teachers.get(teacher) else {
                throw DriverError.missing("TStudent \(student) or TTeacher \(teacher)")
            }
            s.teachers.append(t)
            try s.teachers.applyToDb()
        case let .dropFirstTeacher(student):
            guard let s = try students.get(student) else { throw DriverError.missing("TStudent \(student)") }
            if !s.teachers.isEmpty {
                s.teachers.remove(at: 0)
                try s.teachers.applyToDb()
            }
        case let .removeTeacher(id):
            try teachers.remove(id)
        case let .newNodeCycle(size):
            let nodes = (0..<size).map { _ in TNode() }
            for i in nodes.indices { nodes[i].parent.target = nodes[(i + 1) % size] }
            try store.box(for: TNode.self).put(nodes[0])
        case let .removeNode(id):
            try store.box(for: TNode.self).remove(id)
        case let .rolledBack(inner):
            do {
                try store.runInTransaction {
                    try apply(inner, to: store)
                    throw DriverError.rollback
                }
            } catch DriverError.rollback {}
        case let .retriedNewOrderWithNewCustomer(seq, name):
            let o = TOrder(), c = TCustomer()
            o.seq = seq
            c.name = name
            o.customer.target = c
            try putTwice(o, in: orders, store: store, news: [o, c])
        case let .retriedNewStudent(name, list, newTeacher):
            let s = TStudent(), t = TTeacher()
            s.name = name
            t.name = newTeacher
            for id in list {
                guard let existing = try teachers.get(id) else { throw DriverError.missing("TTeacher \(id)") }
                s.teachers.append(existing)
            }
            s.teachers.append(t)
            try putTwice(s, in: students, store: store, news: [s, t])
        case let .staleStudentEdit(student, removed, added):
            guard let s = try students.get(student), let t = try teachers.get(added) else {
                throw DriverError.missing("TStudent \(student) or TTeacher \(added)")
            }
            _ = s.teachers.count   // loaded now, stale after the removal
            try teachers.remove(removed)
            s.teachers.append(t)
            try s.teachers.applyToDb()
        case let .staleOrderPut(order):
            guard let o = try orders.get(order) else { throw DriverError.missing("TOrder \(order)") }
            if let customer = o.customer.target { try customers.remove(customer.id) }
            try orders.put(o)
        }
    }

    /// Puts `object` in a nested transaction that throws, checks that the ids it gave to `news`
    /// were taken back, and puts it again.
    private static func putTwice<T: Entity>(_ object: T, in box: Box<T>, store: Store, news: [any Entity]) throws {
        do {
            try store.runInTransaction {
                try box.put(object)
                throw DriverError.rollback
            }
        } catch DriverError.rollback {}
        guard news.allSatisfy({ $0._strataId == 0 }) else { throw DriverError.idsKeptAfterRollback }
        try box.put(object)
    }

    /// Every difference between the store and the model, both directions of every relation
    /// included; empty when they agree.
    public static func differences(_ store: Store, _ model: GraphModel) throws -> [String] {
        try store.runInReadOnlyTransaction {
            var out: [String] = []
            let last = try lastTransaction(store)
            if last != model.last { out.append("ledger says \(last), model \(model.last)") }
            let customers = try store.box(for: TCustomer.self).all()
            let storedCustomers = Dictionary(uniqueKeysWithValues: customers.map { ($0.id, $0.name) })
            if storedCustomers != model.customers { out.append("customers differ: store \(storedCustomers.count), model \(model.customers.count)") }
            let orders = try store.box(for: TOrder.self).all()
            let storedOrders = Dictionary(uniqueKeysWithValues: orders.map { ($0.id, GraphModel.Order(seq: $0.seq, customer: $0.customer.targetId)) })
            if storedOrders != model.orders {
                let wrong = Set(storedOrders.keys).union(model.orders.keys).filter { storedOrders[$0] != model.orders[$0] }.sorted().prefix(5)
                out.append("orders differ at \(Array(wrong)): store \(wrong.map { storedOrders[$0].map { "\($0)" } ?? "none" }), model \(wrong.map { model.orders[$0].map { "\($0)" } ?? "none" })")
            }
            for c in customers {
                let expected = (model.ordersOfCustomer[c.id] ?? []).sorted()
                let backlink = c.orders.map(\.id).sorted()
                if backlink != expected { out.append("TCustomer \(c.id).orders is \(backlink), expected \(expected)") }
            }
            let students = try store.box(for: TStudent.self).all()
            let storedStudents = Dictionary(uniqueKeysWithValues: students.map { ($0.id, GraphModel.Student(name: $0.name, teachers: $0.teachers.map(\.id))) })
            if storedStudents != model.students { out.append("students differ") }
            let teachers = try store.box(for: TTeacher.self).all()
            if Dictionary(uniqueKeysWithValues: teachers.map { ($0.id, $0.name) }) != model.teachers { out.append("teachers differ") }
            for t in teachers {
                let expected = (model.studentsOfTeacher[t.id] ?? []).sorted()
                let backlink = t.students.map(\.id).sorted()
                if backlink != expected { out.append("TTeacher \(t.id).students is \(backlink), expected \(expected)") }
            }
            let nodes = try store.box(for: TNode.self).all()
            let storedNodes = Dictionary(uniqueKeysWithValues: nodes.map { ($0.id, $0.parent.targetId) })
            if storedNodes != model.nodes { out.append("nodes differ: store \(storedNodes.count), model \(model.nodes.count)") }
            for n in nodes where n.children.map(\.id).sorted() != (model.childrenOfNode[n.id] ?? []).sorted() {
                out.append("TNode \(n.id).children is \(n.children.map(\.id).sorted()), expected \((model.childrenOfNode[n.id] ?? []).sorted())")
            }
            return out
        }
    }

    /// The differences in the objects an operation touched: each one read back by id, with its
    /// relations in both directions.
    public static func differences(_ store: Store, _ model: GraphModel, touched: TouchedObjects) throws -> [String] {
        var out: [String] = []
        let customers = store.box(for: TCustomer.self), orders = store.box(for: TOrder.self)
        let students = store.box(for: TStudent.self), teachers = store.box(for: TTeacher.self)
        for id in touched.customers {
            let c = try customers.get(id)
            if c?.name != model.customers[id] { out.append("TCustomer \(id) is \(c?.name ?? "absent"), expected \(model.customers[id] ?? "absent")") }
            if let c, c.orders.map(\.id).sorted() != (model.ordersOfCustomer[id] ?? []).sorted() {
                out.append("TCustomer \(id).orders is \(c.orders.map(\.id).sorted()), expected \((model.ordersOfCustomer[id] ?? []).sorted())")
            }
        }
        for id in touched.orders {
            let o = try orders.get(id).map { GraphModel.Order(seq: $0.seq, customer: $0.customer.targetId) }
            if o != model.orders[id] { out.append("TOrder \(id) is \(o.map { "\($0)" } ?? "absent"), expected \(model.orders[id].map { "\($0)" } ?? "absent")") }
        }
        for id in touched.students {
            let s = try students.get(id).map { GraphModel.Student(name: $0.name, teachers: $0.teachers.map(\.id)) }
            if s != model.students[id] { out.append("TStudent \(id) is \(s.map { "\($0)" } ?? "absent"), expected \(model.students[id].map { "\($0)" } ?? "absent")") }
        }
        for id in touched.teachers {
            let t = try teachers.get(id)
            if t?.name != model.teachers[id] { out.append("TTeacher \(id) is \(t?.name ?? "absent"), expected \(model.teachers[id] ?? "absent")") }
            if let t, t.students.map(\.id).sorted() != (model.studentsOfTeacher[id] ?? []).sorted() {
                out.append("TTeacher \(id).students is \(t.students.map(\.id).sorted()), expected \((model.studentsOfTeacher[id] ?? []).sorted())")
            }
        }
        let nodes = store.box(for: TNode.self)
        for id in touched.nodes {
            let n = try nodes.get(id)
            let parent: Id?? = n.map { $0.parent.targetId }
            if parent != model.nodes[id] { out.append("TNode \(id) has parent \(String(describing: parent)), expected \(String(describing: model.nodes[id]))") }
            if let n, n.children.map(\.id).sorted() != (model.childrenOfNode[id] ?? []).sorted() {
                out.append("TNode \(id).children is \(n.children.map(\.id).sorted()), expected \((model.childrenOfNode[id] ?? []).sorted())")
            }
        }
        return out
    }

    public enum DriverError: Error {
        case missing(String)
        /// Thrown on purpose to roll a nested transaction back.
        case rollback
        case idsKeptAfterRollback
    }
}
