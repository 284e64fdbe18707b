import Foundation
import GRDB
import Strata

/// `strata-objects-bench backup [--scale X] [--reps R]`: backing up and restoring the graph
/// store (customers, orders, school), Strata against GRDB's `backup(to:)` (SQLite's online
/// backup API), both built the same way in the same run. Phases:
///
/// - full: a backup into an empty directory; Strata copies every file (no hard links, like
///   SQLite's page copy), and separately with hard links;
/// - incremental: after 1% more orders, a backup into the directory of the full one (SQLite
///   has no incremental backup: a full one again);
/// - restore: the backup back into an empty directory (Strata checks every checksum first).
enum BackupBench {
    struct Sample {
        var seconds: [String: Double] = [:]
        var bytes: [String: UInt64] = [:]
    }

    static let phases = ["full", "full-linked", "incremental", "restore"]

    static func run(sizes: GraphData.Sizes, reps: Int) throws {
        let data = GraphData(sizes: sizes)
        var strata: [Sample] = [], grdb: [Sample] = []
        for _ in 0..<reps {
            strata.append(try strataRun(data))
            grdb.append(try grdbRun(data))
        }
        print("backup of the graph store (\(sizes.customers) customers, \(sizes.orders) orders, \(sizes.students) students), \(reps) repetition(s), medians; release build")
        print("phase         strata ms   strata MB copied   grdb ms   grdb MB   grdb/strata")
        for phase in phases {
            let s = median(strata.compactMap { $0.seconds[phase] }) * 1000
            let sb = Double(strata.compactMap { $0.bytes[phase] }.sorted()[strata.count / 2]) / 1e6
            let g = grdb.compactMap { $0.seconds[phase] }
            let gms = g.isEmpty ? Double.nan : median(g) * 1000
            let gb = grdb.compactMap { $0.bytes[phase] }
            let gmb = gb.isEmpty ? Double.nan : Double(gb.sorted()[gb.count / 2]) / 1e6
            print(phase.padding(toLength: 12, withPad: " ", startingAt: 0) + String(format: "%10.1f %18.1f %9.1f %9.1f %12.2f", s, sb, gms, gmb, gms / s))
        }
    }

    private static func temporary(_ name: String) -> String {
        NSTemporaryDirectory() + "strata-backup-bench-\(name)-\(UUID().uuidString)"
    }

    private static func timed(_ body: () throws -> Void) rethrows -> Double {
        let start = DispatchTime.now().uptimeNanoseconds
        try body()
        return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
    }

    private static func strataRun(_ data: GraphData) throws -> Sample {
        let dir = temporary("strata"), copy = temporary("strata-copy"), linked = temporary("strata-linked"), restored = temporary("strata-restored")
        defer { for d in [dir, copy, linked, restored] { try? FileManager.default.removeItem(atPath: d) } }
        let graph = try StrataGraph(directory: dir)
        defer { graph.close() }
        try graph.insertCustomers(data)
        try graph.insertOrders(data)
        try graph.insertSchool(data)
        var sample = Sample()
        var copies = BackupOptions()
        copies.linksFiles = false
        var report: BackupReport?
        sample.seconds["full"] = try timed { report = try graph.store.backup(toDirectoryPath: copy, options: copies) }
        sample.bytes["full"] = report?.bytesCopied
        sample.seconds["full-linked"] = try timed { report = try graph.store.backup(toDirectoryPath: linked) }
        sample.bytes["full-linked"] = report?.bytesCopied
        let orders = graph.store.box(for: GOrder.self)
        try orders.put((0..<max(1, data.sizes.orders / 100)).map { i in
            let o = GOrder()
            o.summary = data.orderSummary[i]
            o.amount = data.orderAmount[i]
            o.customer.targetId = Id(data.orderCustomer[i] + 1)
            return o
        })
        sample.seconds["incremental"] = try timed { report = try graph.store.backup(toDirectoryPath: copy, options: copies) }
        sample.bytes["incremental"] = report?.bytesCopied
        sample.seconds["restore"] = try timed { report = try Store.restoreBackup(at: copy, toDirectoryPath: restored, options: copies) }
        sample.bytes["restore"] = report?.bytesCopied
        return sample
    }

    private static func grdbRun(_ data: GraphData) throws -> Sample {
        let dir = temporary("grdb"), copy = temporary("grdb-copy"), restored = temporary("grdb-restored")
        defer { for d in [dir, copy, restored] { try? FileManager.default.removeItem(atPath: d) } }
        for d in [copy, restored] { try FileManager.default.createDirectory(atPath: d, withIntermediateDirectories: true) }
        let graph = try GRDBGraph(directory: dir)
        defer { graph.close() }
        try graph.insertCustomers(data)
        try graph.insertOrders(data)
        try graph.insertSchool(data)
        var sample = Sample()
        func size(_ path: String) -> UInt64 { ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber)?.uint64Value ?? 0 }
        let backupPath = copy + "/db.sqlite"
        sample.seconds["full"] = try timed {
            let target = try GRDBGraph.open(copy)
            try graph.queue.backup(to: target)
            try target.close()
        }
        sample.bytes["full"] = size(backupPath)
        let extra = max(1, data.sizes.orders / 100)
        try graph.queue.write { db in
            let st = try db.cachedStatement(sql: #"INSERT INTO "order" (summary, amount, date, customerId) VALUES (?, ?, ?, ?)"#)
            for i in 0..<extra { try st.execute(arguments: [data.orderSummary[i], data.orderAmount[i], data.orderDate[i], data.orderCustomer[i] + 1]) }
        }
        sample.seconds["incremental"] = try timed {
            let target = try GRDBGraph.open(copy)
            try graph.queue.backup(to: target)
            try target.close()
        }
        sample.bytes["incremental"] = size(backupPath)
        sample.seconds["restore"] = try timed {
            let source = try GRDBGraph.open(copy)
            let target = try GRDBGraph.open(restored)
            try source.backup(to: target)
            try target.close()
            try source.close()
        }
        sample.bytes["restore"] = size(restored + "/db.sqlite")
        return sample
    }
}
