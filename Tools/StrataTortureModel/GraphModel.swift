import Strata
import StrataTestSupport

/// What the store must hold after a prefix of the workload: plain dictionaries that the same
/// operations are applied to. Ids follow the store's rule (per entity, one more than the last
/// id ever given, never reused).
public struct GraphModel: Equatable, Sendable {
    public struct Order: Equatable, Sendable {
        public var seq: Int64
        public var customer: Id?
    }

    public struct Student: Equatable, Sendable {
        public var name: String
        public var teachers: [Id]
    }

    public var customers: [Id: String] = [:]
    public var orders: [Id: Order] = [:]
    public var students: [Id: Student] = [:]
    public var teachers: [Id: String] = [:]
    /// Number of the last applied transaction.
    public var last: Int64 = 0
    var nextCustomer: Id = 1
    var nextOrder: Id = 1
    var nextStudent: Id = 1
    var nextTeacher: Id = 1

    public init() {}
}

/// One step of the workload.
public enum GraphOperation: Equatable, Sendable {
    case newCustomer(name: String)
    /// A new order pointing at an existing customer, or at none.
    case newOrder(seq: Int64, customer: Id?)
    /// A new order and its new customer, put as one tree.
    case newOrderWithNewCustomer(seq: Int64, name: String)
    case setCustomer(order: Id, customer: Id?)
    case removeOrder(Id)
    /// Clears the to-one of every order that pointed at it.
    case removeCustomer(Id)
    case newTeacher(name: String)
    case newStudent(name: String, teachers: [Id])
    /// Appends a teacher to a student's to-many (written with `applyToDb`).
    case addTeacher(student: Id, teacher: Id)
    /// Removes the first teacher of a student's to-many.
    case dropFirstTeacher(student: Id)
    /// Removes a teacher from every to-many that held it.
    case removeTeacher(Id)
}

extension GraphModel {
    /// The operations of transaction `number` of the workload seeded `seed`, chosen from the
    /// model's current state (which existing objects to touch), so that a replay of the same
    /// numbers on a fresh model yields the same operations.
    public func operations(transaction number: Int64, seed: UInt64) -> [GraphOperation] {
        var rng = SplitMix64(state: seed &+ UInt64(number) &* 0x9E37_79B9_7F4A_7C15)
        var scratch = self
        var ops: [GraphOperation] = []
        for _ in 0..<(1 + rng.below(3)) {
            let op = scratch.randomOperation(number: number, rng: &rng)
            scratch.apply(op)
            ops.append(op)
        }
        return ops
    }

    private func pick(_ ids: Dictionary<Id, some Any>.Keys, _ rng: inout SplitMix64) -> Id? {
        guard !ids.isEmpty else { return nil }
        let sorted = ids.sorted()
        return sorted[rng.below(sorted.count)]
    }

    private func randomOperation(number: Int64, rng: inout SplitMix64) -> GraphOperation {
        let roll = rng.below(100)
        switch roll {
        case 0..<10: return .newCustomer(name: "customer-\(number)")
        case 10..<35: return .newOrder(seq: number, customer: rng.below(5) == 0 ? nil : pick(customers.keys, &rng))
        case 35..<42: return .newOrderWithNewCustomer(seq: number, name: "new-\(number)")
        case 42..<52:
            guard let o = pick(orders.keys, &rng) else { return .newCustomer(name: "customer-\(number)") }
            return .setCustomer(order: o, customer: rng.below(4) == 0 ? nil : pick(customers.keys, &rng))
        case 52..<60:
            guard let o = pick(orders.keys, &rng) else { return .newTeacher(name: "teacher-\(number)") }
            return .removeOrder(o)
        case 60..<64:
            guard let c = pick(customers.keys, &rng) else { return .newTeacher(name: "teacher-\(number)") }
            return .removeCustomer(c)
        case 64..<70: return .newTeacher(name: "teacher-\(number)")
        case 70..<80:
            var chosen: [Id] = []
            for _ in 0..<rng.below(3) { if let t = pick(teachers.keys, &rng), !chosen.contains(t) { chosen.append(t) } }
            return .newStudent(name: "student-\(number)", teachers: chosen)
        case 80..<90:
            guard let s = pick(students.keys, &rng), let t = pick(teachers.keys, &rng) else { return .newTeacher(name: "teacher-\(number)") }
            return students[s]!.teachers.contains(t) ? .dropFirstTeacher(student: s) : .addTeacher(student: s, teacher: t)
        case 90..<95:
            guard let s = pick(students.keys, &rng) else { return .newCustomer(name: "customer-\(number)") }
            return .dropFirstTeacher(student: s)
        default:
            guard let t = pick(teachers.keys, &rng) else { return .newTeacher(name: "teacher-\(number)") }
            return .removeTeacher(t)
        }
    }

    /// Applies one operation with the store's semantics.
    public mutating func apply(_ op: GraphOperation) {
        switch op {
        case let .newCustomer(name):
            customers[nextCustomer] = name
            nextCustomer += 1
        case let .newOrder(seq, customer):
            orders[nextOrder] = Order(seq: seq, customer: customer)
            nextOrder += 1
        case let .newOrderWithNewCustomer(seq, name):
            // The put assigns the order's id first, then puts the new target.
            let customer = nextCustomer
            customers[customer] = name
            nextCustomer += 1
            orders[nextOrder] = Order(seq: seq, customer: customer)
            nextOrder += 1
        case let .setCustomer(order, customer):
            orders[order]?.customer = customer
        case let .removeOrder(id):
            orders[id] = nil
        case let .removeCustomer(id):
            customers[id] = nil
            for (o, order) in orders where order.customer == id { orders[o]?.customer = nil }
        case let .newTeacher(name):
            teachers[nextTeacher] = name
            nextTeacher += 1
        case let .newStudent(name, list):
            students[nextStudent] = Student(name: name, teachers: list)
            nextStudent += 1
        case let .addTeacher(student, teacher):
            students[student]?.teachers.append(teacher)
        case let .dropFirstTeacher(student):
            if students[student]?.teachers.isEmpty == false { students[student]?.teachers.removeFirst() }
        case let .removeTeacher(id):
            teachers[id] = nil
            for (s, student) in students where student.teachers.contains(id) {
                students[s]?.teachers.removeAll { $0 == id }
            }
        }
    }

    /// Applies transaction `number` and records it as the last.
    public mutating func applyTransaction(_ number: Int64, seed: UInt64) {
        for op in operations(transaction: number, seed: seed) { apply(op) }
        last = number
    }

    /// The model after transactions 1...count of the workload seeded `seed`.
    public static func replayed(_ count: Int64, seed: UInt64) -> GraphModel {
        var model = GraphModel()
        if count > 0 { for n in 1...count { model.applyTransaction(n, seed: seed) } }
        return model
    }
}

extension SplitMix64 {
    /// A value in 0..<n (0 when n ≤ 1).
    mutating func below(_ n: Int) -> Int { n <= 1 ? 0 : Int(next() % UInt64(n)) }
}
