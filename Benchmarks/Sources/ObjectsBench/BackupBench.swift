import Foundation
import GRDB
import Strata
import StrataS3

/// `strata-objects-bench backup [--scale X] [--reps R]`: backing up and restoring the graph
/// store (customers, orders, school), Strata against GRDB's `backup(to:)` (SQLite's online
/// backup API), both built the same way in the same run. Phases:
///
/// - full: a backup into an empty directory; Strata copies every file (no hard links, like
///   SQLite's page copy), and separately with hard links;
/// - incremental: after 1% more orders, a backup into the directory of the full one (SQLite
///   has no incremental backup: a full one again);
/// - restore: the backup back into an empty directory (Strata checks every checksum first).
///
/// Then the cost of a continuous archive (`StoreOptions.archive`, a directory on the same disk)
/// on commits: the graph's order inserts (transactions of 1,000) and 20,000 single-object
/// commits, with and without an archive, alternating; and the restore of the latest commit
/// from the archive. With `STRATA_S3_ENDPOINT` (and `STRATA_S3_BUCKET`, the `AWS_*` keys: the
/// tests' `scripts/s3-server.sh start` prints them), the same with an `S3ArchiveTarget`.
enum BackupBench {
    enum ArchiveKind { case none, directory, s3 }

    struct Sample {
        var seconds: [String: Double] = [:]
        var bytes: [String: UInt64] = [:]
    }

    static let phases = ["full", "full-linked", "incremental", "restore"]

    static func run(sizes: GraphData.Sizes, reps: Int) throws {
        let data = GraphData(sizes: sizes)
        var strata: [Sample] = [], grdb: [Sample] = [], plain: [Sample] = [], archived: [Sample] = [], s3: [Sample] = []
        let withS3 = ProcessInfo.processInfo.environment["STRATA_S3_ENDPOINT"] != nil
        for _ in 0..<reps {
            strata.append(try strataRun(data))
            grdb.append(try grdbRun(data))
            plain.append(try commitRun(data, archive: .none))
            archived.append(try commitRun(data, archive: .directory))
            if withS3 { s3.append(try commitRun(data, archive: .s3)) }
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
        print("")
        print("continuous archive: commits with and without it (medians, ms)")
        print("phase               no archive   archive   cost")
        for phase in ["insert-orders", "single-commits"] {
            let off = median(plain.compactMap { $0.seconds[phase] }) * 1000, on = median(archived.compactMap { $0.seconds[phase] }) * 1000
            print(phase.padding(toLength: 18, withPad: " ", startingAt: 0) + String(format: "%11.1f %9.1f %+6.1f%%", off, on, (on / off - 1) * 100))
        }
        let restore = median(archived.compactMap { $0.seconds["archive-restore"] }) * 1000
        let mb = Double(archived.compactMap { $0.bytes["archive-put"] }.sorted()[archived.count / 2]) / 1e6
        print(String(format: "archive written: %.1f MB; restore of the latest commit: %.1f ms", mb, restore))
        guard !s3.isEmpty else { return }
        print("")
        print("continuous archive on S3 (\(ProcessInfo.processInfo.environment["STRATA_S3_ENDPOINT"]!)): commits with and without it (medians, ms)")
        print("phase               no archive       S3   on/off")
        for phase in ["insert-orders", "single-commits"] {
            let off = median(plain.compactMap { $0.seconds[phase] }) * 1000, on = median(s3.compactMap { $0.seconds[phase] }) * 1000
            print(phase.padding(toLength: 18, withPad: " ", startingAt: 0) + String(format: "%11.1f %9.1f %7.2f×", off, on, off / on))
        }
        let s3Restore = median(s3.compactMap { $0.seconds["archive-restore"] }) * 1000
        let s3MB = Double(s3.compactMap { $0.bytes["archive-put"] }.sorted()[s3.count / 2]) / 1e6
        print(String(format: "archive written: %.1f MB; restore of the latest commit from S3: %.1f ms", s3MB, s3Restore))
    }

    /// Order inserts and single commits on a fresh graph store, with or without an archive; with
    /// one, then the restore of the latest commit from it.
    private static func commitRun(_ data: GraphData, archive: ArchiveKind) throws -> Sample {
        let dir = temporary("commit"), archiveDir = temporary("archive"), restored = temporary("archive-restored")
        defer { for d in [dir, archiveDir, restored] { try? FileManager.default.removeItem(atPath: d) } }
        var options = BenchDurability.current.strataOptions
        var target: (any ArchiveTarget)?
        switch archive {
        case .none: break
        case .directory: target = DirectoryArchiveTarget(path: archiveDir)
        case .s3:
            let env = ProcessInfo.processInfo.environment
            target = S3ArchiveTarget(try S3Configuration(url: "s3://\(env["STRATA_S3_BUCKET"] ?? "strata-test")/bench-\(UUID().uuidString.lowercased())",
                                                         endpoint: env["STRATA_S3_ENDPOINT"]))
        }
        if let target { options.archive = ArchiveOptions(target: target) }
        // The test server keeps objects in memory (a 2 GiB memstore): what a run ships is
        // deleted after it, or a few runs fill the server and it refuses writes.
        defer { if let target { try? removeEverything(in: target) } }
        let store = try Store(directoryPath: dir, options: options)
        defer { store.close() }
        let graph = try StrataGraph(directory: dir, store: store)
        try graph.insertCustomers(data)
        var sample = Sample()
        sample.seconds["insert-orders"] = try timed { try graph.insertOrders(data) }
        let orders = store.box(for: GOrder.self)
        sample.seconds["single-commits"] = try timed {
            for i in 0..<20_000 {
                let o = GOrder()
                o.summary = data.orderSummary[i]
                o.amount = data.orderAmount[i]
                try orders.put(o)
            }
        }
        if let target {
            try store.archiveNow()
            sample.bytes["archive-put"] = store.archiveStatus()?.bytesPut
            sample.seconds["archive-restore"] = try timed {
                try Store.restoreArchive(from: target, toDirectoryPath: restored)
            }
        }
        return sample
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

/// Deletes every object of an archive target (a benchmark's own prefix, after its run).
func removeEverything(in target: any ArchiveTarget) throws {
    for name in try target.list() { try target.delete(name) }
}
