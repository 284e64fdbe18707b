import Foundation
import GRDB

// GRDB as an expert writes it for speed: WAL, synchronous=NORMAL (FULL with --durability sync), foreign keys with ON DELETE
// SET NULL (orders) and CASCADE (links), indexes on the foreign keys, cached prepared statements,
// hand-written init(row:), and `including(required:)` for the prefetch.

struct GRDBCustomer: FetchableRecord, TableRecord {
    static let databaseTableName = "customer"
    var id: Int64
    var name: String
    var email: String

    init(row: Row) throws {
        id = row["id"]
        name = row["name"]
        email = row["email"]
    }
}

struct GRDBOrder: FetchableRecord, TableRecord {
    static let databaseTableName = "order"
    static let customer = belongsTo(GRDBCustomer.self, using: ForeignKey(["customerId"]))
    var id: Int64
    var summary: String
    var amount: Int64
    var date: Int64
    var customerId: Int64?

    init(row: Row) throws {
        id = row["id"]
        summary = row["summary"]
        amount = row["amount"]
        date = row["date"]
        customerId = row["customerId"]
    }
}

/// An order with its customer, decoded from one joined row.
struct GRDBOrderWithCustomer: FetchableRecord {
    var order: GRDBOrder
    var customer: GRDBCustomer

    init(row: Row) throws {
        order = try GRDBOrder(row: row)
        guard let scope = row.scopes["customer"] else { throw DatabaseError(message: "missing customer scope") }
        customer = try GRDBCustomer(row: scope)
    }
}

struct GRDBGraph: GraphSystem {
    static let name = "grdb"
    let directory: String
    var queue: DatabaseQueue

    static func open(_ directory: String) throws -> DatabaseQueue {
        var config = Configuration()
        config.journalMode = .wal
        config.foreignKeysEnabled = true
        config.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = \(BenchDurability.current.sqliteSynchronous)") }
        return try DatabaseQueue(path: directory + "/db.sqlite", configuration: config)
    }

    init(directory: String) throws {
        self.directory = directory
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        queue = try Self.open(directory)
        try queue.write { db in
            try db.execute(sql: """
                CREATE TABLE customer (id INTEGER PRIMARY KEY, name TEXT NOT NULL, email TEXT NOT NULL);
                CREATE TABLE "order" (id INTEGER PRIMARY KEY, summary TEXT NOT NULL, amount INTEGER NOT NULL,
                    date INTEGER NOT NULL, customerId INTEGER REFERENCES customer(id) ON DELETE SET NULL);
                CREATE INDEX order_customer ON "order"(customerId);
                CREATE UNIQUE INDEX customer_email ON customer(email);
                CREATE INDEX order_amount ON "order"(amount);
                CREATE TABLE teacher (id INTEGER PRIMARY KEY, name TEXT NOT NULL);
                CREATE TABLE student (id INTEGER PRIMARY KEY, name TEXT NOT NULL);
                CREATE TABLE student_teacher (studentId INTEGER NOT NULL REFERENCES student(id) ON DELETE CASCADE,
                    teacherId INTEGER NOT NULL REFERENCES teacher(id) ON DELETE CASCADE, position INTEGER NOT NULL,
                    PRIMARY KEY (studentId, teacherId));
                CREATE INDEX student_teacher_teacher ON student_teacher(teacherId);
                """)
        }
    }

    func insertCustomers(_ data: GraphData) throws {
        for chunk in stride(from: 0, to: data.sizes.customers, by: 1_000) {
            try queue.write { db in
                let st = try db.cachedStatement(sql: "INSERT INTO customer (id, name, email) VALUES (?, ?, ?)")
                for i in chunk..<min(chunk + 1_000, data.sizes.customers) {
                    try st.execute(arguments: [i + 1, GraphData.customerName(i), GraphData.customerEmail(i)])
                }
            }
        }
    }

    func insertOrders(_ data: GraphData) throws {
        for chunk in stride(from: 0, to: data.sizes.orders, by: 1_000) {
            try queue.write { db in
                let st = try db.cachedStatement(sql: #"INSERT INTO "order" (id, summary, amount, date, customerId) VALUES (?, ?, ?, ?, ?)"#)
                for i in chunk..<min(chunk + 1_000, data.sizes.orders) {
                    try st.execute(arguments: [i + 1, data.orderSummary[i], data.orderAmount[i], data.orderDate[i], data.orderCustomer[i] + 1])
                }
            }
        }
    }

    func forward(_ data: GraphData) throws -> Int64 {
        try queue.read { db in
            let order = try db.cachedStatement(sql: #"SELECT * FROM "order" WHERE id = ?"#)
            let customer = try db.cachedStatement(sql: "SELECT * FROM customer WHERE id = ?")
            var sum: Int64 = 0
            for i in data.forward {
                guard let o = try GRDBOrder.fetchOne(order, arguments: [i + 1]), let cid = o.customerId,
                      let c = try GRDBCustomer.fetchOne(customer, arguments: [cid]) else { continue }
                sum += Int64(c.name.utf8.count)
            }
            return sum
        }
    }

    func queryEquality(_ data: GraphData) throws -> Int64 {
        try queue.read { db in
            let st = try db.cachedStatement(sql: "SELECT * FROM customer WHERE email = ?")
            var sum: Int64 = 0
            for c in data.queryCustomers {
                if let found = try GRDBCustomer.fetchOne(st, arguments: [GraphData.customerEmail(c)]) { sum += found.id }
            }
            return sum
        }
    }

    func queryRange(_ data: GraphData) throws -> Int64 {
        try queue.read { db in
            let st = try db.cachedStatement(sql: #"SELECT * FROM "order" WHERE amount BETWEEN ? AND ? ORDER BY id"#)
            var count: Int64 = 0, ids: Int64 = 0
            for x in data.queryRanges {
                for o in try GRDBOrder.fetchAll(st, arguments: [x, x + 99]) {
                    count += 1
                    ids += o.id
                }
            }
            return count * 1_000_000 + ids % 1_000_000
        }
    }

    func queryLink(_ data: GraphData) throws -> Int64 {
        try queue.read { db in
            let st = try db.cachedStatement(sql: #"SELECT "order".* FROM "order" JOIN customer ON customer.id = "order".customerId WHERE customer.email = ? AND "order".amount > ? ORDER BY "order".id"#)
            var sum: Int64 = 0
            for c in data.queryCustomers.prefix(100) {
                for o in try GRDBOrder.fetchAll(st, arguments: [GraphData.customerEmail(c), 90_000]) { sum += o.id }
            }
            return sum
        }
    }

    func backlink(_ data: GraphData) throws -> Int64 {
        try queue.read { db in
            let customer = try db.cachedStatement(sql: "SELECT * FROM customer WHERE id = ?")
            let orders = try db.cachedStatement(sql: #"SELECT * FROM "order" WHERE customerId = ?"#)
            var sum: Int64 = 0
            for i in data.backlink {
                guard let c = try GRDBCustomer.fetchOne(customer, arguments: [i + 1]) else { continue }
                for o in try GRDBOrder.fetchAll(orders, arguments: [c.id]) { sum += o.amount }
            }
            return sum
        }
    }

    func prefetch(_ data: GraphData) throws -> Int64 {
        try queue.read { db in
            let request = GRDBOrder.including(required: GRDBOrder.customer).order(Column("id")).limit(100_000)
            var sum: Int64 = 0
            for r in try GRDBOrderWithCustomer.fetchAll(db, request) {
                sum += r.order.amount + Int64(r.customer.name.utf8.count)
            }
            return sum
        }
    }

    func insertSchool(_ data: GraphData) throws {
        try queue.write { db in
            let st = try db.cachedStatement(sql: "INSERT INTO teacher (id, name) VALUES (?, ?)")
            for i in 0..<data.sizes.teachers { try st.execute(arguments: [i + 1, GraphData.teacherName(i)]) }
        }
        for chunk in stride(from: 0, to: data.sizes.students, by: 1_000) {
            try queue.write { db in
                let student = try db.cachedStatement(sql: "INSERT INTO student (id, name) VALUES (?, ?)")
                let link = try db.cachedStatement(sql: "INSERT INTO student_teacher (studentId, teacherId, position) VALUES (?, ?, ?)")
                for i in chunk..<min(chunk + 1_000, data.sizes.students) {
                    try student.execute(arguments: [i + 1, GraphData.studentName(i)])
                    for (p, t) in data.studentTeachers[i].enumerated() { try link.execute(arguments: [i + 1, t + 1, p]) }
                }
            }
        }
    }

    func manyToMany(_ data: GraphData) throws -> Int64 {
        try queue.read { db in
            let student = try db.cachedStatement(sql: "SELECT * FROM student WHERE id = ?")
            let teachersOf = try db.cachedStatement(sql: """
                SELECT teacher.* FROM teacher JOIN student_teacher ON teacher.id = student_teacher.teacherId
                WHERE student_teacher.studentId = ? ORDER BY student_teacher.position
                """)
            let studentsOf = try db.cachedStatement(sql: """
                SELECT student.* FROM student JOIN student_teacher ON student.id = student_teacher.studentId
                WHERE student_teacher.teacherId = ?
                """)
            var sum: Int64 = 0
            for i in data.manyToMany {
                guard try Row.fetchOne(student, arguments: [i + 1]) != nil else { continue }
                for row in try Row.fetchAll(teachersOf, arguments: [i + 1]) { sum += row["id"] as Int64 }
            }
            for row in try Row.fetchAll(db, sql: "SELECT * FROM teacher") {
                let tid: Int64 = row["id"]
                for s in try Row.fetchAll(studentsOf, arguments: [tid]) { sum += s["id"] as Int64 }
            }
            return sum
        }
    }

    func removeCustomers(_ data: GraphData) throws {
        for chunk in stride(from: 0, to: data.removals.count, by: 100) {
            try queue.write { db in
                let st = try db.cachedStatement(sql: "DELETE FROM customer WHERE id = ?")
                for c in data.removals[chunk..<min(chunk + 100, data.removals.count)] { try st.execute(arguments: [c + 1]) }
            }
        }
    }

    func verifyRemoval() throws -> (Int, Int) {
        try queue.read { db in
            (try Int.fetchOne(db, sql: #"SELECT COUNT(*) FROM "order""#) ?? 0,
             try Int.fetchOne(db, sql: #"SELECT COUNT(*) FROM "order" WHERE customerId IS NULL"#) ?? 0)
        }
    }

    mutating func reopen() throws -> Int {
        try queue.close()
        queue = try Self.open(directory)
        return try queue.read { db in try Int.fetchOne(db, sql: #"SELECT COUNT(*) FROM "order""#) ?? 0 }
    }

    func close() { try? queue.close() }
}
