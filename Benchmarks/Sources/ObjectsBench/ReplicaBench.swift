import Foundation
import Strata
import StrataS3
import Synchronization

/// `strata-objects-bench replica [--scale X] [--reps R] [--ship S] [--poll P]`: a read replica
/// following a primary while the primary runs the graph's insert phases (customers, orders,
/// school; transactions of 1,000), through an archive on S3 (`STRATA_S3_ENDPOINT`, as the backup
/// benchmark) or, without one, in a directory. Reported: each commit's lag, from its commit on
/// the primary to the replica's change notification that carries it (medians and p99 over
/// every commit), against the target of two ship intervals plus the poll interval; the
/// primary's insert rate with the archive on; and two checks:
///
/// - whole transactions only: a reader samples the replica's counts every 50 ms while it
///   follows; every count must be one the primary had between two commits (a multiple of
///   1,000, or the phase's total);
/// - the same data: at the end, every object of the replica equals the primary's, field by
///   field and relation by relation.
enum ReplicaBench {
    struct Sample {
        var lags: [Double] = []
        var insertSeconds = 0.0
        var objects = 0
        var samplesTaken = 0
        var partialStates = 0
        var mismatches = 0
        var catchUpSeconds = 0.0
    }

    static func run(sizes: GraphData.Sizes, reps: Int, shipInterval: Double, pollInterval: Double) throws {
        let data = GraphData(sizes: sizes)
        let env = ProcessInfo.processInfo.environment
        let s3 = env["STRATA_S3_ENDPOINT"]
        var samples: [Sample] = []
        for _ in 0..<reps { samples.append(try runOnce(data, s3Endpoint: s3, shipInterval: shipInterval, pollInterval: pollInterval)) }
        let lags = samples.flatMap(\.lags).sorted()
        func percentile(_ p: Double) -> Double { lags[min(lags.count - 1, Int(Double(lags.count) * p))] }
        let target = 2 * shipInterval + pollInterval
        print("replica following the graph's insert phases (\(sizes.customers) customers, \(sizes.orders) orders, \(sizes.teachers) teachers, \(sizes.students) students), archive on \(s3.map { "S3 (\($0))" } ?? "a directory"), ship interval \(shipInterval) s, poll interval \(pollInterval) s, \(reps) repetition(s); release build")
        print("| | median | p99 | max | target (p99) |")
        print("|---|---:|---:|---:|---:|")
        print(String(format: "| lag, commit on the primary → change on the replica (s), %d commits | %.3f | %.3f | %.3f | ≤ %.2f |",
                     lags.count, percentile(0.5), percentile(0.99), lags.last ?? 0, target))
        let rate = median(samples.map { Double($0.objects) / $0.insertSeconds })
        print(String(format: "primary insert rate with the archive on: %.0f objects/s (median); replica caught up %.2f s after the last commit (median)",
                     rate, median(samples.map(\.catchUpSeconds))))
        print("states sampled on the replica: \(samples.map(\.samplesTaken).reduce(0, +)), partial transactions seen: \(samples.map(\.partialStates).reduce(0, +)); objects differing from the primary at the end: \(samples.map(\.mismatches).reduce(0, +))")
        print(percentile(0.99) <= target ? "p99 lag within the target" : "p99 lag ABOVE the target")
    }

    private static func runOnce(_ data: GraphData, s3Endpoint: String?, shipInterval: Double, pollInterval: Double) throws -> Sample {
        let root = NSTemporaryDirectory() + "strata-replica-bench-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: root) }
        let target: any ArchiveTarget = if let s3Endpoint {
            S3ArchiveTarget(try S3Configuration(url: "s3://\(ProcessInfo.processInfo.environment["STRATA_S3_BUCKET"] ?? "strata-test")/replica-bench-\(UUID().uuidString.lowercased())",
                                                endpoint: s3Endpoint))
        } else {
            DirectoryArchiveTarget(path: root + "/archive")
        }
        defer { try? removeEverything(in: target) }   // see BackupBench: the test server keeps it in memory
        var options = BenchDurability.current.strataOptions
        var archive = ArchiveOptions(target: target)
        archive.interval = shipInterval
        options.archive = archive
        let primary = try Store(directoryPath: root + "/primary", options: options)
        defer { primary.close() }
        let graph = try StrataGraph(directory: root + "/primary", store: primary)
        try primary.archiveNow()
        let replica = try Store.openReplica(following: target, directoryPath: root + "/replica",
                                            options: BenchDurability.current.strataOptions, pollInterval: pollInterval)
        defer { replica.close() }

        // The replica's notifications: for each entity, the highest id inserted, and when.
        let clock = { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }
        let arrivals = Mutex<[String: [(id: UInt64, at: Double)]]>([:])
        let token = try replica.subscribe(to: GCustomer.self, GOrder.self, GTeacher.self, GStudent.self) { changes in
            let now = clock()
            arrivals.withLock { all in
                for (name, change) in changes.entities {
                    if let top = change.inserted.max() { all[name, default: []].append((top, now)) }
                }
            }
        }
        defer { token.cancel() }

        // Whole transactions only: counts sampled while the replica follows.
        let totals = [data.sizes.customers, data.sizes.orders, data.sizes.teachers, data.sizes.students]
        let sampling = Atomic<Bool>(true)
        let checks = Mutex<(taken: Int, partial: Int)>((0, 0))
        let sampler = Thread {
            while sampling.load(ordering: .acquiring) {
                guard let counts = try? replica.runInReadOnlyTransaction({
                    [try replica.box(for: GCustomer.self).count(), try replica.box(for: GOrder.self).count(),
                     try replica.box(for: GTeacher.self).count(), try replica.box(for: GStudent.self).count()]
                }) else { break }
                // Teachers are one transaction of all of them.
                let whole = zip(counts, totals).enumerated().allSatisfy { k, pair in
                    pair.0 == pair.1 || pair.0 == 0 || (k != 2 && pair.0 % 1_000 == 0 && pair.0 < pair.1)
                }
                checks.withLock { $0.taken += 1; if !whole { $0.partial += 1 } }
                usleep(50_000)
            }
        }
        sampler.start()

        var commits: [(name: String, id: UInt64, at: Double)] = []
        commits.reserveCapacity(data.sizes.orders / 1_000 + data.sizes.customers / 1_000 + data.sizes.students / 1_000 + 1)
        let note: (String, Int) -> Void = { name, last in commits.append((name, UInt64(last + 1), clock())) }
        var sample = Sample()
        let start = clock()
        try graph.insertCustomers(data, committed: note)
        try graph.insertOrders(data, committed: note)
        try graph.insertSchool(data, committed: note)
        let lastCommit = clock()
        sample.insertSeconds = lastCommit - start
        sample.objects = totals.reduce(0, +)

        // Wait until the replica has announced every commit (or give up after two minutes).
        let deadline = lastCommit + 120
        func announced() -> Bool {
            arrivals.withLock { all in commits.allSatisfy { c in (all[c.name]?.last?.id ?? 0) >= c.id } }
        }
        while !announced() && clock() < deadline { usleep(2_000) }
        sample.catchUpSeconds = clock() - lastCommit
        sampling.store(false, ordering: .releasing)
        while sampler.isExecuting { usleep(1_000) }
        (sample.samplesTaken, sample.partialStates) = checks.withLock { ($0.taken, $0.partial) }

        // Each commit's lag: to the first notification of its entity with an id at or above
        // its last (ids are given in order; a notification may carry several commits).
        let seen = arrivals.withLock { $0 }
        for name in Set(commits.map(\.name)) {
            let events = seen[name] ?? []
            var k = 0
            for c in commits where c.name == name {
                while k < events.count && events[k].id < c.id { k += 1 }
                guard k < events.count else { throw BenchFailure("the replica never announced \(name) \(c.id)") }
                sample.lags.append(events[k].at - c.at)
            }
        }
        sample.mismatches = try differences(primary, replica)
        return sample
    }

    /// Objects that differ between the two stores (fields and relations), counted.
    private static func differences(_ a: Store, _ b: Store) throws -> Int {
        func rows<T: Entity>(_ store: Store, _: T.Type, _ row: (T) -> String) throws -> [String] {
            try store.box(for: T.self).all().map(row)
        }
        var mismatches = 0
        func compare(_ x: [String], _ y: [String]) {
            mismatches += abs(x.count - y.count) + zip(x, y).filter { $0 != $1 }.count
        }
        compare(try rows(a, GCustomer.self) { "\($0.id) \($0.name) \($0.email)" },
                try rows(b, GCustomer.self) { "\($0.id) \($0.name) \($0.email)" })
        compare(try rows(a, GOrder.self) { "\($0.id) \($0.summary) \($0.amount) \($0.date) \($0.customer.targetId.map { String($0) } ?? "-")" },
                try rows(b, GOrder.self) { "\($0.id) \($0.summary) \($0.amount) \($0.date) \($0.customer.targetId.map { String($0) } ?? "-")" })
        compare(try rows(a, GTeacher.self) { "\($0.id) \($0.name)" }, try rows(b, GTeacher.self) { "\($0.id) \($0.name)" })
        compare(try rows(a, GStudent.self) { "\($0.id) \($0.name) \($0.teachers.map(\.id).sorted())" },
                try rows(b, GStudent.self) { "\($0.id) \($0.name) \($0.teachers.map(\.id).sorted())" })
        return mismatches
    }
}

struct BenchFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
