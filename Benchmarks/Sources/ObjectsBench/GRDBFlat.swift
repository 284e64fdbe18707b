import Foundation
import GRDB

/// A GRDB record as an expert writes it for speed: hand-written `init(row:)` (no Codable) and
/// cached prepared statements for every statement the workload repeats.
struct FlatRecord: FetchableRecord {
    var id: Int64?
    var text: String
    var number: Int64
    var value: Double
    var flag: Bool

    init(id: Int64? = nil, text: String, number: Int64, value: Double, flag: Bool) {
        self.id = id
        self.text = text
        self.number = number
        self.value = value
        self.flag = flag
    }

    init(row: Row) throws {
        id = row[0]
        text = row[1]
        number = row[2]
        value = row[3]
        flag = row[4]
    }
}

struct GRDBFlat: FlatCrudSystem {
    static let name = "grdb"
    let queue: DatabaseQueue
    var records: [FlatRecord] = []

    init(directory: String) throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        var config = Configuration()
        config.journalMode = .wal
        config.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = \(BenchDurability.current.sqliteSynchronous)") }
        queue = try DatabaseQueue(path: directory + "/db.sqlite", configuration: config)
        try queue.write { db in
            try db.create(table: "flat") { t in
                t.autoIncrementedPrimaryKey("id")
                t.column("text", .text).notNull()
                t.column("number", .integer).notNull()
                t.column("value", .double).notNull()
                t.column("flag", .boolean).notNull()
            }
        }
    }

    mutating func putAll(count: Int) throws -> [Int64] {
        records = (0..<count).map { i in
            FlatRecord(text: FlatValues.text(i), number: FlatValues.number(i), value: FlatValues.value(i), flag: FlatValues.flag(i))
        }
        try queue.write { db in
            let insert = try db.cachedStatement(sql: "INSERT INTO flat (text, number, value, flag) VALUES (?, ?, ?, ?)")
            for i in records.indices {
                let r = records[i]
                try insert.execute(arguments: [r.text, r.number, r.value, r.flag])
                records[i].id = db.lastInsertedRowID
            }
        }
        return records.map { $0.id! }
    }

    func getAll(ids: [Int64]) throws -> Int64 {
        try queue.read { db in
            var sum: Int64 = 0
            let select = try db.cachedStatement(sql: "SELECT id, text, number, value, flag FROM flat WHERE id = ?")
            for id in ids {
                guard let r = try FlatRecord.fetchOne(select, arguments: [id]) else { continue }
                sum &+= FlatValues.fieldSum(text: r.text, number: r.number, value: r.value, flag: r.flag)
            }
            return sum
        }
    }

    mutating func updateAll() throws {
        for i in records.indices { records[i].number += 1 }
        try queue.write { db in
            let update = try db.cachedStatement(sql: "UPDATE flat SET text = ?, number = ?, value = ?, flag = ? WHERE id = ?")
            for r in records { try update.execute(arguments: [r.text, r.number, r.value, r.flag, r.id]) }
        }
    }

    func removeAll(ids: [Int64]) throws -> Int {
        try queue.write { db in
            let delete = try db.cachedStatement(sql: "DELETE FROM flat WHERE id = ?")
            var n = 0
            for id in ids {
                try delete.execute(arguments: [id])
                n += db.changesCount
            }
            return n
        }
    }

    func close() { try? queue.close() }
}
