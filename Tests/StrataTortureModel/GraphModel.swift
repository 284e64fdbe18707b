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
    /// Node → its parent.
    public var nodes: [Id: Id?] = [:]
    /// The backlinks, kept alongside: customer → its orders, teacher → its students.
    public private(set) var ordersOfCustomer: [Id: Set<Id>] = [:]
    public private(set) var studentsOfTeacher: [Id: Set<Id>] = [:]
    public private(set) var childrenOfNode: [Id: Set<Id>] = [:]
    /// Number of the last applied transaction.
    public var last: Int64 = 0
    var nextCustomer: Id = 1
    var nextOrder: Id = 1
    var nextStudent: Id = 1
    var nextTeacher: Id = 1
    var nextNode: Id = 1

    public init() {}
}

/// The objects one operation changed, or whose backlinks it changed.
public struct TouchedObjects: Sendable {
    public var customers = Set<Id>()
    public var orders = Set<Id>()
    public var students = Set<Id>()
    public var teachers = Set<Id>()
    public var nodes = Set<Id>()
    /// Operations applied.
    public var operations = 0

    public init() {}

    public mutating func formUnion(_ other: TouchedObjects) {
        customers.formUnion(other.customers)
        orders.formUnion(other.orders)
        students.formUnion(other.students)
        teachers.formUnion(other.teachers)
        nodes.formUnion(other.nodes)
        operations += other.operations
    }
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
    /// `size` new nodes, each the parent of the one before, the first the parent of the last,
    /// put in one put of the first.
    case newNodeCycle(size: Int)
    /// Clears the parent of every node that pointed at it.
    case removeNode(Id)
    /// The operation runs in a nested transaction that then throws: only the ids it took stay
    /// taken.
    indirect case rolledBack(GraphOperation)
    /// A new order with a new customer, put in a nested transaction that throws, then put again
    /// (the same instances: their ids were taken back).
    case retriedNewOrderWithNewCustomer(seq: Int64, name: String)
    /// A new student with these teachers and a new one, put in a nested transaction that throws,
    /// then put again.
    case retriedNewStudent(name: String, teachers: [Id], newTeacher: String)
    /// A student read (its teachers loaded), then `removed` removed from the store, then `added`
    /// appended to the stale copy and applied.
    case staleStudentEdit(student: Id, removed: Id, added: Id)
    /// An order read (its customer loaded), its customer removed, then the stale copy put.
    case staleOrderPut(order: Id)
}

extension GraphModel {
    /// Chooses the operations of transaction `number` of the workload seeded `seed` from the
    /// model's current state (which existing objects to touch) and applies them: a replay of the
    /// same numbers on a fresh model yields the same operations. Returns them with what they
    /// touched.
    public mutating func nextTransaction(_ number: Int64, seed: UInt64) -> (operations: [GraphOperation], touched: TouchedObjects) {
        var rng = SplitMix64(state: seed &+ UInt64(number) &* 0x9E37_79B9_7F4A_7C15)
        var ops: [GraphOperation] = []
        var touched = TouchedObjects()
        for _ in 0..<(1 + rng.below(3)) {
            let op = randomOperation(number: number, rng: &rng)
            touched.formUnion(apply(op))
            touched.operations += 1
            ops.append(op)
        }
        last = number
        return (ops, touched)
    }

    /// A live id of `objects` (ids run 1..<next), or nil: a random start, then the next live id,
    /// so that a pick costs no sort of every key.
    private func pick(_ objects: [Id: some Any], next: Id, _ rng: inout SplitMix64) -> Id? {
        guard !objects.isEmpty, next > 1 else { return nil }
        var id = 1 + Id(rng.below(Int(next - 1)))
        while objects[id] == nil { id = id + 1 < next ? id + 1 : 1 }
        return id
    }

    private func randomOperation(number: Int64, rng: inout SplitMix64) -> GraphOperation {
        let roll = rng.below(100)
        switch roll {
        case 0..<10: return .newCustomer(name: "customer-\(number)")
        case 10..<35: return .newOrder(seq: number, customer: rng.below(5) == 0 ? nil : pick(customers, next: nextCustomer, &rng))
        case 35..<42: return .newOrderWithNewCustomer(seq: number, name: "new-\(number)")
        case 42..<52:
            guard let o = pick(orders, next: nextOrder, &rng) else { return .newCustomer(name: "customer-\(number)") }
            return .setCustomer(order: o, customer: rng.below(4) == 0 ? nil : pick(customers, next: nextCustomer, &rng))
        case 52..<60:
            guard let o = pick(orders, next: nextOrder, &rng) else { return .newTeacher(name: "teacher-\(number)") }
            return .removeOrder(o)
        case 60..<64:
            guard let c = pick(customers, next: nextCustomer, &rng) else { return .newTeacher(name: "teacher-\(number)") }
            return .removeCustomer(c)
        case 64..<70: return .newTeacher(name: "teacher-\(number)")
        case 70..<80:
            var chosen: [Id] = []
            for _ in 0..<rng.below(3) { if let t = pick(teachers, next: nextTeacher, &rng), !chosen.contains(t) { chosen.append(t) } }
            return .newStudent(name: "student-\(number)", teachers: chosen)
        case 80..<90:
            guard let s = pick(students, next: nextStudent, &rng), let t = pick(teachers, next: nextTeacher, &rng) else { return .newTeacher(name: "teacher-\(number)") }
            return students[s]!.teachers.contains(t) ? .dropFirstTeacher(student: s) : .addTeacher(student: s, teacher: t)
        case 90..<95:
            guard let s = pick(students, next: nextStudent, &rng) else { return .newCustomer(name: "customer-\(number)") }
            return .dropFirstTeacher(student: s)
        case 95..<97:
            guard let t = pick(teachers, next: nextTeacher, &rng) else { return .newTeacher(name: "teacher-\(number)") }
            return .removeTeacher(t)
        default:
            return transactionStateOperation(number: number, rng: &rng)
        }
    }

    /// The operations that exercise transaction state: savepoints, retries, stale copies, cycles.
    private func transactionStateOperation(number: Int64, rng: inout SplitMix64) -> GraphOperation {
        switch rng.below(8) {
        case 0: return .newNodeCycle(size: 1 + rng.below(3))
        case 1:
            guard let n = pick(nodes, next: nextNode, &rng) else { return .newNodeCycle(size: 2) }
            return .removeNode(n)
        case 2:
            var chosen: [Id] = []
            if let t = pick(teachers, next: nextTeacher, &rng) { chosen.append(t) }
            return .rolledBack(.newStudent(name: "doomed-\(number)", teachers: chosen))
        case 3: return .retriedNewOrderWithNewCustomer(seq: number, name: "retried-\(number)")
        case 4:
            var chosen: [Id] = []
            if let t = pick(teachers, next: nextTeacher, &rng) { chosen.append(t) }
            return .retriedNewStudent(name: "retried-\(number)", teachers: chosen, newTeacher: "retried-\(number)")
        case 5:
            guard let s = pick(students, next: nextStudent, &rng), let first = students[s]!.teachers.first,
                  let added = pick(teachers, next: nextTeacher, &rng), !students[s]!.teachers.contains(added) else {
                return .rolledBack(.newCustomer(name: "doomed-\(number)"))
            }
            return .staleStudentEdit(student: s, removed: first, added: added)
        case 6:
            guard let o = pick(orders, next: nextOrder, &rng) else { return .retriedNewOrderWithNewCustomer(seq: number, name: "r-\(number)") }
            return .staleOrderPut(order: o)
        default:
            guard let o = pick(orders, next: nextOrder, &rng) else { return .rolledBack(.newTeacher(name: "doomed-\(number)")) }
            return .rolledBack(.removeOrder(o))
        }
    }

    private mutating func setOrder(_ id: Id, _ order: Order?, _ touched: inout TouchedObjects) {
        if let old = orders[id]?.customer {
            ordersOfCustomer[old]?.remove(id)
            touched.customers.insert(old)
        }
        orders[id] = order
        if let new = order?.customer {
            ordersOfCustomer[new, default: []].insert(id)
            touched.customers.insert(new)
        }
        touched.orders.insert(id)
    }

    private mutating func setStudent(_ id: Id, _ student: Student?, _ touched: inout TouchedObjects) {
        for t in students[id]?.teachers ?? [] {
            studentsOfTeacher[t]?.remove(id)
            touched.teachers.insert(t)
        }
        students[id] = student
        for t in student?.teachers ?? [] {
            studentsOfTeacher[t, default: []].insert(id)
            touched.teachers.insert(t)
        }
        touched.students.insert(id)
    }

    private mutating func setNode(_ id: Id, parent: Id??, _ touched: inout TouchedObjects) {
        if let old = nodes[id] ?? nil {
            childrenOfNode[old]?.remove(id)
            touched.nodes.insert(old)
        }
        nodes[id] = parent
        if let new = parent ?? nil {
            childrenOfNode[new, default: []].insert(id)
            touched.nodes.insert(new)
        }
        touched.nodes.insert(id)
    }

    /// Applies one operation with the store's semantics; returns what it touched.
    @discardableResult
    public mutating func apply(_ op: GraphOperation) -> TouchedObjects {
        var touched = TouchedObjects()
        switch op {
        case let .newCustomer(name):
            customers[nextCustomer] = name
            touched.customers.insert(nextCustomer)
            nextCustomer += 1
        case let .newOrder(seq, customer):
            setOrder(nextOrder, Order(seq: seq, customer: customer), &touched)
            nextOrder += 1
        case let .newOrderWithNewCustomer(seq, name):
            // The put assigns the order's id first, then puts the new target.
            let customer = nextCustomer
            customers[customer] = name
            nextCustomer += 1
            setOrder(nextOrder, Order(seq: seq, customer: customer), &touched)
            nextOrder += 1
        case let .setCustomer(order, customer):
            if let o = orders[order] { setOrder(order, Order(seq: o.seq, customer: customer), &touched) }
        case let .removeOrder(id):
            setOrder(id, nil, &touched)
        case let .removeCustomer(id):
            for o in ordersOfCustomer[id] ?? [] { setOrder(o, Order(seq: orders[o]!.seq, customer: nil), &touched) }
            customers[id] = nil
            ordersOfCustomer[id] = nil
            touched.customers.insert(id)
        case let .newTeacher(name):
            teachers[nextTeacher] = name
            touched.teachers.insert(nextTeacher)
            nextTeacher += 1
        case let .newStudent(name, list):
            setStudent(nextStudent, Student(name: name, teachers: list), &touched)
            nextStudent += 1
        case let .addTeacher(student, teacher):
            if var s = students[student] {
                s.teachers.append(teacher)
                setStudent(student, s, &touched)
            }
        case let .dropFirstTeacher(student):
            if var s = students[student], !s.teachers.isEmpty {
                s.teachers.removeFirst()
                setStudent(student, s, &touched)
            }
        case let .removeTeacher(id):
            for s in studentsOfTeacher[id] ?? [] {
                var student = students[s]!
                student.teachers.removeAll { $0 == id }
                setStudent(s, student, &touched)
            }
            teachers[id] = nil
            studentsOfTeacher[id] = nil
            touched.teachers.insert(id)
        case let .newNodeCycle(size):
            // The put gives the first node its id, then puts its new parent, and so on: ids
            // follow the chain, and the last node's parent is the first.
            let first = nextNode
            for i in 0..<Id(size) { setNode(first + i, parent: first + (i + 1) % Id(size), &touched) }
            nextNode += Id(size)
        case let .removeNode(id):
            for child in childrenOfNode[id] ?? [] where child != id { setNode(child, parent: .some(nil), &touched) }
            setNode(id, parent: nil, &touched)
            childrenOfNode[id] = nil
        case let .rolledBack(inner):
            // Nothing stays but the ids the rolled-back operation took (ids are never reused).
            var attempt = self
            attempt.apply(inner)
            (nextCustomer, nextOrder, nextStudent, nextTeacher, nextNode) =
                (attempt.nextCustomer, attempt.nextOrder, attempt.nextStudent, attempt.nextTeacher, attempt.nextNode)
        case let .retriedNewOrderWithNewCustomer(seq, name):
            nextOrder += 1
            nextCustomer += 1
            touched.formUnion(apply(.newOrderWithNewCustomer(seq: seq, name: name)))
        case let .retriedNewStudent(name, list, newTeacher):
            // Each attempt puts the student, then its new teacher.
            nextStudent += 1
            nextTeacher += 1
            let teacher = nextTeacher
            teachers[teacher] = newTeacher
            touched.teachers.insert(teacher)
            nextTeacher += 1
            setStudent(nextStudent, Student(name: name, teachers: list + [teacher]), &touched)
            nextStudent += 1
        case let .staleStudentEdit(student, removed, added):
            touched.formUnion(apply(.removeTeacher(removed)))
            touched.formUnion(apply(.addTeacher(student: student, teacher: added)))
        case let .staleOrderPut(order):
            if let customer = orders[order]?.customer { touched.formUnion(apply(.removeCustomer(customer))) }
            touched.orders.insert(order)
        }
        return touched
    }

    /// The model after transactions 1...count of the workload seeded `seed`.
    public static func replayed(_ count: Int64, seed: UInt64) -> GraphModel {
        var model = GraphModel()
        if count > 0 { for n in 1...count { _ = model.nextTransaction(n, seed: seed) } }
        return model
    }
}

extension SplitMix64 {
    /// A value in 0..<n (0 when n ≤ 1).
    mutating func below(_ n: Int) -> Int { n <= 1 ? 0 : Int(next() % UInt64(n)) }
}
