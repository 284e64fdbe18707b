import BenchSupport
import Foundation

/// The object-graph workload of graph-workload.md: customers/orders (to-one + backlink,
/// prefetch), students/teachers (N:M), removal that clears references, reopen. Every random
/// choice comes from SplitMix64 seeded with 42, drawn in the document's order, so both systems
/// build the same graph and print the same checksums.
struct GraphData {
    struct Sizes {
        var customers = 10_000
        var orders = 1_000_000
        var teachers = 1_000
        var students = 100_000
    }

    let sizes: Sizes
    /// Per order: customer index, amount, date, summary.
    var orderCustomer: [Int] = []
    var orderAmount: [Int64] = []
    var orderDate: [Int64] = []
    var orderSummary: [String] = []
    var forward: [Int] = []
    var backlink: [Int] = []
    /// Per student: 5 distinct teacher indexes.
    var studentTeachers: [[Int]] = []
    var manyToMany: [Int] = []
    var removals: [Int] = []

    init(sizes: Sizes) {
        self.sizes = sizes
        var rng = SplitMix64(state: 42)
        for i in 0..<sizes.orders {
            orderCustomer.append(Int(rng.next() % UInt64(sizes.customers)))
            orderAmount.append(Int64(rng.next() % 100_000))
            orderDate.append(1_700_000_000 + Int64(rng.next() % 31_536_000))
            let r4 = rng.next()
            var summary = "order-\(i)-"
            for k in 0..<8 { summary.unicodeScalars.append(Unicode.Scalar(UInt8(97 + ((r4 >> (8 * UInt64(k))) & 0xFF) % 26))) }
            orderSummary.append(summary)
        }
        forward = (0..<100_000).map { _ in Int(rng.next() % UInt64(sizes.orders)) }
        backlink = (0..<10_000).map { _ in Int(rng.next() % UInt64(sizes.customers)) }
        for _ in 0..<sizes.students {
            var chosen: [Int] = []
            while chosen.count < min(5, sizes.teachers) {
                let t = Int(rng.next() % UInt64(sizes.teachers))
                if !chosen.contains(t) { chosen.append(t) }
            }
            studentTeachers.append(chosen)
        }
        manyToMany = (0..<1_000).map { _ in Int(rng.next() % UInt64(sizes.students)) }
        var seen = Set<Int>()
        while removals.count < min(1_000, sizes.customers) {
            let c = Int(rng.next() % UInt64(sizes.customers))
            if seen.insert(c).inserted { removals.append(c) }
        }
    }

    /// The customers the query phases look up, and the starts of the amount ranges.
    var queryCustomers: [Int] { Array(backlink.prefix(1_000)) }
    var queryRanges: [Int64] { (0..<100).map { Int64($0) * 997 } }

    static func customerName(_ i: Int) -> String { "customer-\(i)" }
    static func customerEmail(_ i: Int) -> String { "c\(i)@example.com" }
    static func teacherName(_ i: Int) -> String { "teacher-\(i)" }
    static func studentName(_ i: Int) -> String { "student-\(i)" }

    /// Orders whose customer is removed in the remove phase: what the removal must clear.
    var ordersOfRemovedCustomers: Int {
        let removed = Set(removals)
        return orderCustomer.filter { removed.contains($0) }.count
    }
}

enum GraphPhase: String, CaseIterable, Codable {
    case insertCustomers = "insert-customers"
    case insertOrders = "insert-orders"
    case forward
    case backlink
    case prefetch
    case queryEquality = "query-equality"
    case queryRange = "query-range"
    case queryLink = "query-link"
    case insertSchool = "insert-school"
    case manyToMany = "many-to-many"
    case removeCustomers = "remove-customers"
    case reopen
}

/// One system running the graph phases; ids are index + 1 on both systems.
protocol GraphSystem {
    static var name: String { get }
    init(directory: String) throws
    func insertCustomers(_ data: GraphData) throws
    func insertOrders(_ data: GraphData) throws
    /// Sum of the customers' name lengths.
    func forward(_ data: GraphData) throws -> Int64
    /// Sum of the orders' amounts.
    func backlink(_ data: GraphData) throws -> Int64
    /// Sum over the first 100,000 orders of amount + customer name length.
    func prefetch(_ data: GraphData) throws -> Int64
    /// Customers found by an indexed equality on email (1,000 lookups): sum of their ids.
    func queryEquality(_ data: GraphData) throws -> Int64
    /// Orders with an indexed amount in [x, x + 99] (100 ranges): count times 1,000,000 plus sum of ids mod 1,000,000.
    func queryRange(_ data: GraphData) throws -> Int64
    /// Orders over 90,000 of the customer with a given email, through the relation (100 queries): sum of ids.
    func queryLink(_ data: GraphData) throws -> Int64
    func insertSchool(_ data: GraphData) throws
    /// Sum of teacher ids over the student lookups plus student ids over the teacher lookups.
    func manyToMany(_ data: GraphData) throws -> Int64
    func removeCustomers(_ data: GraphData) throws
    /// (orders, orders without customer)
    func verifyRemoval() throws -> (Int, Int)
    /// Closes, reopens, counts orders.
    mutating func reopen() throws -> Int
    func close()
}

/// What one system measured, sent from the child process as JSON.
struct GraphMeasurement: Codable {
    var seconds: [String: Double] = [:]
    var operations: [String: Int] = [:]
    var checksums: [String: Int64] = [:]
    var diskBytes: Int64 = 0
    var peakRSSBytes: Int64 = 0
    /// The largest RssAnon and RssFile of /proc/self/status seen at a phase's end.
    var peakAnonBytes: Int64 = 0
    var peakFileBytes: Int64 = 0
}
