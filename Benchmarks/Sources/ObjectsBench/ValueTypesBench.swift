import Foundation
import GRDB
import Strata

struct BenchAddress: Codable, Equatable {
    var street = ""
    var zip = 0
    var city = ""
}

@Entity
final class BenchItem {
    var id: Id = 0
    var key = UUID(uuidString: "00000000-0000-0000-0000-000000000000")!
    var tags: [String] = []
    var address = BenchAddress()
}

/// `strata-objects-bench values`: put and get of an entity with a `UUID`, a `[String]` of 5 tags
/// and a small `Codable` struct (issue 40), against GRDB storing the same the way its docs
/// suggest: the UUID natively (a 16-byte blob), the array and the struct as JSON columns
/// (Codable records). One transaction for the puts; gets by id, one at a time, each field read.
enum ValueTypesBench {
    struct Row: Codable, FetchableRecord, PersistableRecord {
        static let databaseTableName = "item"
        var id: Int64?
        var key: UUID
        var tags: [String]
        var address: BenchAddress
    }

    static func item(_ i: Int) -> (UUID, [String], BenchAddress) {
        var bytes = [UInt8](repeating: 0, count: 16)
        withUnsafeBytes(of: UInt64(i).bigEndian) { for k in 0..<8 { bytes[8 + k] = $0[k] } }
        let key = UUID(uuid: (bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                              bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]))
        let tags = (0..<5).map { "tag-\(($0 * 7 + i) % 50)" }
        return (key, tags, BenchAddress(street: "\(i % 1_000) Main Street", zip: 10_000 + i % 90_000, city: "City \(i % 100)"))
    }

    static func checksum(_ key: UUID, _ tags: [String], _ address: BenchAddress) -> Int {
        Int(key.uuid.15) + tags.reduce(0) { $0 + $1.utf8.count } + address.zip + address.street.utf8.count
    }

    static func run(count: Int, reps: Int) throws {
        let expected = (0..<count).reduce(0) { s, i in let (k, t, a) = item(i); return s + checksum(k, t, a) }
        var times: [String: [Double]] = [:]
        for _ in 0..<reps {
            // Strata.
            let dir = NSTemporaryDirectory() + "strata-values-bench-\(UUID().uuidString)"
            defer { try? FileManager.default.removeItem(atPath: dir) }
            do {
                let store = try Store(directoryPath: dir, options: BenchDurability.current.strataOptions)
                defer { store.close() }
                let box = store.box(for: BenchItem.self)
                let items = (0..<count).map { i -> BenchItem in
                    let (k, t, a) = item(i)
                    let o = BenchItem()
                    o.key = k
                    o.tags = t
                    o.address = a
                    return o
                }
                var ids: [Id] = []
                times["strata put", default: []].append(try seconds { ids = try box.put(items) })
                var sum = 0
                times["strata get", default: []].append(try seconds {
                    for id in ids {
                        guard let o = try box.get(id) else { continue }
                        sum += checksum(o.key, o.tags, o.address)
                    }
                })
                guard sum == expected else { throw NSError(domain: "values", code: 1) }
            }
            // GRDB.
            let gdir = NSTemporaryDirectory() + "grdb-values-bench-\(UUID().uuidString)"
            try FileManager.default.createDirectory(atPath: gdir, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(atPath: gdir) }
            var config = Configuration()
            config.journalMode = .wal
            config.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = \(BenchDurability.current.sqliteSynchronous)") }
            let queue = try DatabaseQueue(path: gdir + "/db.sqlite", configuration: config)
            try queue.write { db in
                try db.create(table: "item") { t in
                    t.autoIncrementedPrimaryKey("id")
                    t.column("key", .blob).notNull()
                    t.column("tags", .jsonText).notNull()
                    t.column("address", .jsonText).notNull()
                }
            }
            let rows = (0..<count).map { i -> Row in let (k, t, a) = item(i); return Row(id: nil, key: k, tags: t, address: a) }
            var rowIds: [Int64] = []
            times["grdb put", default: []].append(try seconds {
                try queue.write { db in
                    for r in rows {
                        try r.insert(db)
                        rowIds.append(db.lastInsertedRowID)
                    }
                }
            })
            var sum = 0
            times["grdb get", default: []].append(try seconds {
                try queue.read { db in
                    for id in rowIds {
                        guard let r = try Row.fetchOne(db, key: id) else { continue }
                        sum += checksum(r.key, r.tags, r.address)
                    }
                }
            })
            guard sum == expected else { throw NSError(domain: "values", code: 2) }
        }
        print("values: \(count) items (a UUID, 5 tags, a 3-field Codable struct), \(reps) repetition(s), medians; release build; durability \(BenchDurability.current.rawValue)")
        print("| phase | Strata objects/s | GRDB objects/s | Strata/GRDB |")
        print("|---|---:|---:|---:|")
        for phase in ["put", "get"] {
            let s = Double(count) / median(times["strata \(phase)"]!), g = Double(count) / median(times["grdb \(phase)"]!)
            print(String(format: "| %@ | %.0f | %.0f | %.2f× |", phase, s, g, s / g))
        }
    }
}
