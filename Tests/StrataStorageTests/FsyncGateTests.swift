import Foundation
@testable import StrataStorage
import Testing
import StrataTesting

/// After a failed sync of the write-ahead log the engine refuses every later write with
/// `writesStopped` until it is reopened (the kernel may have dropped the pages it failed to
/// write; a later successful sync would not bring them back). Reads go on. Reopening recovers
/// exactly the acknowledged writes. The fault is injected at every sync point of the workload.
@Suite struct FsyncGateTests {
    private static let writes = 24

    private static func batch(_ e: Engine, _ i: Int) -> WriteBatch {
        var b = WriteBatch()
        b.put(bytes(String(format: "k-%03d", i)), bytes("v-\(i)"), in: e.defaultKeySpace)
        return b
    }

    /// The workload's sync operations (every even write is durable), counted on a clean run.
    private static func syncPoints() throws -> Int {
        let clean = FaultInjectingFileSystem(wrapping: InMemoryFileSystem())
        clean.injectFault(.init(afterOperations: Int.max, operations: [.sync], error: .io(operation: "never", path: "", errno: 5)))
        let e = try Engine.open(directory: "/db", options: .testing(clean, memtableBytes: 1 << 20))
        for i in 0..<writes { try e.write(batch(e, i), durability: i % 2 == 0 ? .sync : Durability.none) }
        e.close()
        return clean.matchedOperationCount
    }

    @Test func aFailedSyncStopsWritesUntilReopenAtEverySyncPoint() throws {
        let syncPoints = try Self.syncPoints()
        #expect(syncPoints >= Self.writes / 2)

        var stopped = 0
        for n in 0..<syncPoints {
            let fs = FaultInjectingFileSystem(wrapping: InMemoryFileSystem())
            fs.injectFault(.init(afterOperations: n, operations: [.sync], error: .io(operation: "injected", path: "/db", errno: 5)))
            var acknowledged: [Int] = []
            if let e = try? Engine.open(directory: "/db", options: .testing(fs, memtableBytes: 1 << 20)) {
                // No flush runs (the memtable is large): every sync a write meets is the log's.
                var failed = false
                for i in 0..<Self.writes {
                    do {
                        try e.write(Self.batch(e, i), durability: i % 2 == 0 ? .sync : Durability.none)
                        #expect(!failed, "fault at sync \(n): write \(i) accepted after a failed log sync")
                        acknowledged.append(i)
                    } catch StorageError.writesStopped {
                        #expect(failed, "fault at sync \(n): writes stopped without a failure")
                        // Reads go on while writes are stopped.
                        if let last = acknowledged.last {
                            #expect(try e.getString(String(format: "k-%03d", last), in: e.defaultKeySpace) == "v-\(last)")
                        }
                    } catch {
                        #expect(!failed, "fault at sync \(n): \(error) after writes stopped")
                        if !failed && i < Self.writes - 1 { stopped += 1 }
                        failed = true
                    }
                }
                e.close()
            }
            // Reopened without the fault: exactly the acknowledged writes, and writable again.
            fs.injectFault(nil)
            let e = try Engine.open(directory: "/db", options: .testing(fs, memtableBytes: 1 << 20))
            defer { e.close() }
            var stored: [Int] = []
            for (k, _) in try e.scan(e.defaultKeySpace) { stored.append(Int(string(k).dropFirst(2))!) }
            #expect(stored == acknowledged, "fault at sync \(n)")
            try e.write(Self.batch(e, 999), durability: .sync)
        }
        print("fsync gate: \(syncPoints) sync points, \(stopped) runs stopped writes after a failed log sync")
        #expect(stopped >= Self.writes / 2 - 2, "too few faults hit a log sync: the test proves little")
    }

    /// A manifest record whose sync failed may still be durable, and the truncation that should
    /// take it back may fail too (here every write and sync fails from the fault on). The files
    /// it names must then stay: before, the flush deleted its segments, and the next open found
    /// a record naming missing files and refused the store. Each sync point of a flushing
    /// workload fails in turn; the store must reopen with every acknowledged write.
    @Test func aFailedManifestSyncNeverStrandsTheStore() throws {
        let clean = FaultInjectingFileSystem(wrapping: InMemoryFileSystem())
        clean.injectFault(.init(afterOperations: Int.max, operations: [.sync], error: .io(operation: "never", path: "", errno: 5)))
        func workload(_ fs: FaultInjectingFileSystem) -> [Int] {
            var acknowledged: [Int] = []
            guard let e = try? Engine.open(directory: "/db", options: .testing(fs, memtableBytes: 512)) else { return [] }
            for i in 0..<60 {
                var b = WriteBatch()
                b.put(bytes(String(format: "k-%03d", i)), bytes(String(repeating: "v", count: 40)), in: e.defaultKeySpace)
                if (try? e.write(b, durability: Durability.none)) != nil { acknowledged.append(i) }
                if i % 10 == 9 { try? e.flush() }
            }
            e.close()
            return acknowledged
        }
        _ = workload(clean)
        let syncPoints = clean.matchedOperationCount
        #expect(syncPoints > 10)
        var problems: [String] = []
        for n in 0..<syncPoints {
            let memory = InMemoryFileSystem()
            let fs = FaultInjectingFileSystem(wrapping: memory)
            fs.injectFault(.init(afterOperations: n, operations: [.sync, .write], error: .io(operation: "injected", path: "/db", errno: 5),
                                 sticky: true))
            let acknowledged = workload(fs)
            fs.injectFault(nil)
            do {
                let e = try Engine.open(directory: "/db", options: .testing(fs, memtableBytes: 512))
                defer { e.close() }
                let stored = try e.scan(e.defaultKeySpace).map { Int(string($0.key).dropFirst(2))! }
                if !Set(acknowledged).isSubset(of: Set(stored)) { problems.append("sync \(n): acknowledged writes lost") }
            } catch {
                problems.append("sync \(n): the store does not reopen: \(error)")
            }
        }
        #expect(problems.isEmpty, "\(problems.prefix(5))")
    }

    /// Linux's behaviour after a failed fsync, modelled: the pages the failed sync could not
    /// write are dropped (marked clean), so a later sync succeeds without them and a power cut
    /// takes them. The log's sync fails at each sync point in turn, the workload goes on as far
    /// as the engine lets it, the power goes, and the store must come back with a prefix of the
    /// acknowledged writes holding every durable one: the gate never lets a later durable
    /// write vouch for a record whose pages were lost.
    @Test func aFailedSyncDropsItsPagesAndAPowerCutKeepsEveryDurableWrite() throws {
        let syncPoints = try Self.syncPoints()
        var problems: [String] = [], runs = 0
        for n in 0..<syncPoints {
            for policy: InMemoryFileSystem.CrashPolicy in [.dropUnsynced, .keepRandomUnsyncedPages(seed: UInt64(n + 1), pageBytes: 64, garbage: false)] {
                for mappedLog in [false, true] {
                    let memory = InMemoryFileSystem(logReserveBytes: mappedLog ? 512 : 0)
                    let fs = FaultInjectingFileSystem(wrapping: memory)
                    fs.injectFault(.init(afterOperations: n, operations: [.sync], error: .io(operation: "injected", path: "/db", errno: 5)))
                    var acknowledged: [Int] = [], durable = 0
                    if let e = try? Engine.open(directory: "/db", options: .testing(fs, memtableBytes: 1 << 20)) {
                        for i in 0..<Self.writes {
                            let sync = i % 2 == 0
                            guard (try? e.write(Self.batch(e, i), durability: sync ? .sync : Durability.none)) != nil else { continue }
                            acknowledged.append(i)
                            if sync { durable = acknowledged.count }
                        }
                        e.close()
                    }
                    memory.simulateCrash(policy)
                    fs.injectFault(nil)
                    runs += 1
                    let label = "sync \(n), \(policy), mapped log \(mappedLog)"
                    do {
                        let e = try Engine.open(directory: "/db", options: .testing(fs, memtableBytes: 1 << 20))
                        defer { e.close() }
                        let stored = try e.scan(e.defaultKeySpace).map { Int(string($0.key).dropFirst(2))! }
                        if Array(acknowledged.prefix(stored.count)) != stored { problems.append("\(label): \(stored) is not a prefix of \(acknowledged)") }
                        if stored.count < durable { problems.append("\(label): \(durable - stored.count) durable writes lost") }
                    } catch {
                        problems.append("\(label): the store does not reopen: \(error)")
                    }
                }
            }
        }
        print("fsync gate with power cuts: \(runs) runs (\(syncPoints) sync points × 2 power cuts × plain and mapped log), \(problems.count) problems")
        #expect(problems.isEmpty, "\(problems.prefix(5))")
    }
}
