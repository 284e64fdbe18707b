import Foundation
import Strata

@Entity
final class GCustomer {
    var id: Id = 0
    var name = ""
    @Unique var email = ""
    @Backlink(\GOrder.customer) var orders: ToMany<GOrder> = nil
}

@Entity
final class GOrder {
    var id: Id = 0
    var summary = ""
    @Index var amount: Int64 = 0
    var date: Int64 = 0
    var customer: ToOne<GCustomer> = nil
}

@Entity
final class GTeacher {
    var id: Id = 0
    var name = ""
    @Backlink(\GStudent.teachers) var students: ToMany<GStudent> = nil
}

@Entity
final class GStudent {
    var id: Id = 0
    var name = ""
    var teachers: ToMany<GTeacher> = nil
}

struct StrataGraph: GraphSystem {
    static let name = "strata"
    let directory: String
    var store: Store

    init(directory: String) throws {
        try self.init(directory: directory, store: try Store(directoryPath: directory, options: BenchDurability.current.strataOptions))
    }

    /// Over a store the caller opened (with options of its own: an archive, say).
    init(directory: String, store: Store) throws {
        self.directory = directory
        self.store = store
        // Like GRDB's CREATE TABLE in its init, untimed: register the entities (catalog
        // records, index key space).
        _ = store.box(for: GCustomer.self)
        _ = store.box(for: GOrder.self)
        _ = store.box(for: GTeacher.self)
        _ = store.box(for: GStudent.self)
    }

    func insertCustomers(_ data: GraphData) throws { try insertCustomers(data, committed: nil) }

    /// `committed(entity, lastIndex)` after each transaction: the replica benchmark times each
    /// commit's arrival on a replica by it (index i has id i + 1).
    @inline(never)   // a frame of its own: profiles attribute each phase by it
    func insertCustomers(_ data: GraphData, committed: ((String, Int) -> Void)?) throws {
        let box = store.box(for: GCustomer.self)
        for chunk in stride(from: 0, to: data.sizes.customers, by: 1_000) {
            let end = min(chunk + 1_000, data.sizes.customers)
            try box.put((chunk..<end).map { i in
                let c = GCustomer()
                c.name = GraphData.customerName(i)
                c.email = GraphData.customerEmail(i)
                return c
            })
            committed?("GCustomer", end - 1)
        }
    }

    func insertOrders(_ data: GraphData) throws { try insertOrders(data, committed: nil) }

    @inline(never)   // a frame of its own: profiles attribute each phase by it
    func insertOrders(_ data: GraphData, committed: ((String, Int) -> Void)?) throws {
        let box = store.box(for: GOrder.self)
        for chunk in stride(from: 0, to: data.sizes.orders, by: 1_000) {
            let end = min(chunk + 1_000, data.sizes.orders)
            try box.put((chunk..<end).map { i in
                let o = GOrder()
                o.summary = data.orderSummary[i]
                o.amount = data.orderAmount[i]
                o.date = data.orderDate[i]
                o.customer.targetId = Id(data.orderCustomer[i] + 1)
                return o
            })
            committed?("GOrder", end - 1)
        }
    }

    @inline(never)   // a frame of its own: profiles attribute each phase by it
    func forward(_ data: GraphData) throws -> Int64 {
        let box = store.box(for: GOrder.self)
        var sum: Int64 = 0
        for i in data.forward {
            guard let o = try box.get(Id(i + 1)) else { continue }
            sum += Int64(o.customer.target?.name.utf8.count ?? 0)
        }
        return sum
    }

    @inline(never)   // a frame of its own: profiles attribute each phase by it
    func backlink(_ data: GraphData) throws -> Int64 {
        let box = store.box(for: GCustomer.self)
        var sum: Int64 = 0
        for i in data.backlink {
            guard let c = try box.get(Id(i + 1)) else { continue }
            for o in c.orders { sum += o.amount }
        }
        return sum
    }

    @inline(never)   // a frame of its own: profiles attribute each phase by it
    func prefetch(_ data: GraphData) throws -> Int64 {
        let box = store.box(for: GOrder.self)
        let orders = try box.get((1...Id(min(100_000, data.sizes.orders))).map { $0 })
        try box.prefetch(\.customer, for: orders)
        var sum: Int64 = 0
        for o in orders { sum += o.amount + Int64(o.customer.target?.name.utf8.count ?? 0) }
        return sum
    }

    @inline(never)   // a frame of its own: profiles attribute each phase by it
    func queryEquality(_ data: GraphData) throws -> Int64 {
        let q = try store.box(for: GCustomer.self).query { GCustomer.email == "" }.build()
        var sum: Int64 = 0
        for c in data.queryCustomers {
            try q.setParameter(GCustomer.email, to: GraphData.customerEmail(c))
            if let found = try q.findFirst() { sum += Int64(found.id) }
        }
        return sum
    }

    @inline(never)   // a frame of its own: profiles attribute each phase by it
    func queryRange(_ data: GraphData) throws -> Int64 {
        let q = try store.box(for: GOrder.self).query { GOrder.amount.between(0, 0) }.build()
        var count: Int64 = 0, ids: Int64 = 0
        for x in data.queryRanges {
            try q.setParameters(GOrder.amount, to: x, x + 99)
            for o in try q.find() {
                count += 1
                ids += Int64(o.id)
            }
        }
        return count * 1_000_000 + ids % 1_000_000
    }

    @inline(never)   // a frame of its own: profiles attribute each phase by it
    func queryLink(_ data: GraphData) throws -> Int64 {
        let orders = store.box(for: GOrder.self)
        var sum: Int64 = 0
        for c in data.queryCustomers.prefix(100) {
            let email = GraphData.customerEmail(c)
            let q = try orders.query { GOrder.amount > 90_000 }.link(GOrder.customer) { GCustomer.email == email }.build()
            for o in try q.find() { sum += Int64(o.id) }
        }
        return sum
    }

    func insertSchool(_ data: GraphData) throws { try insertSchool(data, committed: nil) }

    @inline(never)   // a frame of its own: profiles attribute each phase by it
    func insertSchool(_ data: GraphData, committed: ((String, Int) -> Void)?) throws {
        let teachers = (0..<data.sizes.teachers).map { i in
            let t = GTeacher()
            t.name = GraphData.teacherName(i)
            return t
        }
        try store.box(for: GTeacher.self).put(teachers)
        committed?("GTeacher", teachers.count - 1)
        let students = store.box(for: GStudent.self)
        for chunk in stride(from: 0, to: data.sizes.students, by: 1_000) {
            let end = min(chunk + 1_000, data.sizes.students)
            try students.put((chunk..<end).map { i in
                let s = GStudent()
                s.name = GraphData.studentName(i)
                s.teachers.append(contentsOf: data.studentTeachers[i].map { teachers[$0] })
                return s
            })
            committed?("GStudent", end - 1)
        }
    }

    @inline(never)   // a frame of its own: profiles attribute each phase by it
    func manyToMany(_ data: GraphData) throws -> Int64 {
        var sum: Int64 = 0
        let students = store.box(for: GStudent.self)
        for i in data.manyToMany {
            guard let s = try students.get(Id(i + 1)) else { continue }
            for t in s.teachers { sum += Int64(t.id) }
        }
        // One teacher at a time, like GRDB's loop over rows: nothing stays cached.
        let teachers = store.box(for: GTeacher.self)
        for id in 1...Id(data.sizes.teachers) {
            guard let t = try teachers.get(id) else { continue }
            for s in t.students { sum += Int64(s.id) }
        }
        return sum
    }

    @inline(never)   // a frame of its own: profiles attribute each phase by it
    func removeCustomers(_ data: GraphData) throws {
        let box = store.box(for: GCustomer.self)
        for chunk in stride(from: 0, to: data.removals.count, by: 100) {
            try box.remove(data.removals[chunk..<min(chunk + 100, data.removals.count)].map { Id($0 + 1) })
        }
    }

    func verifyRemoval() throws -> (Int, Int) {
        // In chunks, so that the check does not hold a million orders at once (peak RSS).
        let box = store.box(for: GOrder.self)
        var count = 0, cleared = 0
        for chunk in stride(from: Id(1), through: Id(try box.count()), by: 10_000) {
            let orders = try box.get(Array(chunk..<(chunk + 10_000)))
            count += orders.count
            cleared += orders.filter { $0.customer.targetId == nil }.count
        }
        return (count, cleared)
    }

    @inline(never)
    mutating func reopen() throws -> Int {
        // STRATA_BENCH_REOPEN_SPLIT=1 prints how the phase divides between the close (which
        // waits for a running flush or compaction) and the open.
        let start = DispatchTime.now().uptimeNanoseconds
        store.close()
        let closed = DispatchTime.now().uptimeNanoseconds
        store = try Store(directoryPath: directory, options: BenchDurability.current.strataOptions)
        let opened = DispatchTime.now().uptimeNanoseconds
        let count = try store.box(for: GOrder.self).count()
        if ProcessInfo.processInfo.environment["STRATA_BENCH_REOPEN_SPLIT"] == "1" {
            let end = DispatchTime.now().uptimeNanoseconds
            FileHandle.standardError.write(String(format: "%.3f reopen%@: close %.2f ms, open %.2f ms, count %.2f ms\n",
                                                  Double(end) / 1e9, BenchDurability.current.strataOptions.engine.encryptionKey == nil ? "" : " (encrypted)", Double(closed - start) / 1e6, Double(opened - closed) / 1e6, Double(end - opened) / 1e6).data(using: .utf8)!)
        }
        return count
    }

    func close() { store.close() }
}
