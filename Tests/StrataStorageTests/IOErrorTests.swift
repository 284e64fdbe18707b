import Foundation
import Testing
@testable import StrataStorage
import StrataTesting

/// RELIABILITY.md §5: the N-th file operation (open, write, sync, rename, remove, directory sync)
/// fails with EIO or ENOSPC, and so does the next one of those kinds (two faults in a row: the
/// failed append, then the truncation that would take it back, or the retry), for every N until
/// the workload runs through without reaching it, as SQLite's I/O error tests do. Then the same
/// with the N-th read. The failed call throws a typed error; the workload then retries
/// (reopening the store after a second failure); at the end the store holds exactly the
/// acknowledged batches: nothing acknowledged lost, nothing that failed applied.
@Suite struct IOErrorTests {
    static let batches = 90

    static func options(_ fs: any FileSystem) -> EngineOptions {
        var o = EngineOptions.testing(fs, memtableBytes: 2 << 10, blockBytes: 256, targetSegmentBytes: 64 << 10)
        // The manifest rolled (a snapshot manifest written, the old one removed) whenever it
        // outgrows the live state (after almost every edit), so that faults meet the roll too.
        o.manifestRollMinimumBytes = 0
        o.manifestRollLiveMultiple = 1
        return o
    }

    struct Run {
        var acknowledged: [Int: Int] = [:]   // batch → the attempt's value
        var failures = 0
        var gaveUp: String?
    }

    /// Writes the batches, each retried until it is acknowledged; flushes, a compaction and a
    /// reopen along the way.
    static func workload(_ fs: FaultInjectingFileSystem) -> Run {
        var run = Run()
        var engine: Engine?
        var i = 0, attempts = 0, step = 0
        while i < batches {
            do {
                if engine == nil { engine = try Engine.open(directory: "/db", options: options(fs)) }
                let e = engine!
                if step == 0 {
                    var batch = WriteBatch()
                    let k = bytes(String(format: "b-%04d", i))
                    batch.put(k, bytes("value-\(i)-\(attempts)"), in: e.defaultKeySpace)
                    batch.put(k, bytes("mirror-\(i)"), in: try e.keySpace(named: "mirror"))
                    batch.put(bytes("counter"), bytes(String(i)), in: e.defaultKeySpace)
                    try e.write(batch, durability: i % 3 == 2 ? .sync : Durability.none)
                    run.acknowledged[i] = attempts
                    step = 1
                }
                if i % 20 == 19 { try e.flush(); try e.waitForBackgroundWork() }
                if i == 60 { _ = try e.compact() }
                if i == 45 {
                    e.close()
                    engine = nil
                }
                i += 1
                attempts = 0
                step = 0
            } catch {
                run.failures += 1
                attempts += 1
                if attempts > 4 {
                    run.gaveUp = "batch \(i) still failing after \(attempts) attempts: \(error)"
                    break
                }
                if attempts >= 2 {
                    engine?.close()
                    engine = nil
                }
            }
        }
        engine?.close()
        return run
    }

    static func check(_ fs: FaultInjectingFileSystem, _ run: Run) -> String? {
        if let gaveUp = run.gaveUp { return gaveUp }
        do {
            let e = try Engine.open(directory: "/db", options: options(fs))
            defer { e.close() }
            var stored: [Int: String] = [:]
            for (k, v) in try e.scan(e.defaultKeySpace) where string(k).hasPrefix("b-") {
                stored[Int(string(k).dropFirst(2))!] = string(v)
            }
            let expected = Dictionary(uniqueKeysWithValues: run.acknowledged.map { ($0.key, "value-\($0.key)-\($0.value)") })
            guard stored == expected else {
                let wrong = Set(stored.keys).symmetricDifference(expected.keys).sorted().prefix(5)
                return "stored batches differ from the acknowledged ones at \(Array(wrong)) (\(stored.count) stored, \(expected.count) acknowledged)"
            }
            let mirror = try e.existingKeySpace(named: "mirror").map { try e.scan($0).count } ?? 0
            guard mirror == stored.count else { return "mirror holds \(mirror), default \(stored.count)" }
            guard try e.getString("counter", in: e.defaultKeySpace) == String(batches - 1) else { return "counter is not the last batch" }
            return nil
        } catch {
            return "does not reopen: \(error)"
        }
    }

    @Test func failingEveryOperationInTurnLosesNothingAcknowledgedAndAppliesNothingFailed() throws {
        let clean = FaultInjectingFileSystem(wrapping: InMemoryFileSystem())
        let cleanRun = Self.workload(clean)
        #expect(cleanRun.failures == 0 && cleanRun.acknowledged.count == Self.batches)
        let total = clean.operationCount
        let stride = ProcessInfo.processInfo.environment["STRATA_IO_ERRORS_FULL"] == "1" ? 1 : 3
        var tried = 0
        var problems: [String] = []
        for n in Swift.stride(from: 0, to: total, by: stride) {
            for error: StorageError in [.io(operation: "injected", path: "/db", errno: 5), .diskFull(path: "/db")] {
                let fs = FaultInjectingFileSystem(wrapping: InMemoryFileSystem())
                fs.injectFault(.init(afterOperations: n, error: error, tornBytes: n % 5 == 0 ? 3 : 0, times: 2))
                let run = Self.workload(fs)
                // Background work makes the count of operations vary by one or two between runs:
                // a fault the workload never reached must not fire in the check's own open.
                fs.injectFault(nil)
                tried += 1
                if let p = Self.check(fs, run) { problems.append("fault at operation \(n) (\(error)): \(p)") }
            }
        }
        print("I/O errors: \(total) operations in the workload, \(tried) runs each failing one of them and the next, \(problems.count) problems")
        #expect(problems.isEmpty, "\(problems.prefix(10))")
    }

    /// Reads fail too (a media error under a segment, a log read back at recovery): a failed
    /// read is an error of the call that needed it (a get, a flush, a compaction, an open),
    /// never a torn log, a lost record or a segment written from half its input.
    @Test func failingEveryReadInTurnLosesNothingAcknowledged() throws {
        let clean = FaultInjectingFileSystem(wrapping: InMemoryFileSystem())
        let cleanRun = Self.workload(clean)
        #expect(cleanRun.failures == 0 && cleanRun.acknowledged.count == Self.batches)
        let total = clean.readCount
        #expect(total > 50, "the workload reads its logs and segments")
        let full = ProcessInfo.processInfo.environment["STRATA_IO_ERRORS_FULL"] == "1"
        var tried = 0, failedRuns = 0
        var problems: [String] = []
        for n in Swift.stride(from: 0, to: total, by: full ? 1 : max(1, total / 120)) {
            let fs = FaultInjectingFileSystem(wrapping: InMemoryFileSystem())
            fs.injectFault(.init(afterOperations: n, operations: [.read], error: .io(operation: "read", path: "/db", errno: 5),
                                 times: 2))
            let run = Self.workload(fs)
            fs.injectFault(nil)
            tried += 1
            if run.failures > 0 { failedRuns += 1 }
            if let p = Self.check(fs, run) { problems.append("fault at read \(n): \(p)") }
        }
        print("I/O errors: \(total) reads in the workload, \(tried) runs each failing one of them and the next (\(failedRuns) runs saw an error), \(problems.count) problems")
        #expect(failedRuns > 0, "some read faults reach the workload's calls")
        #expect(problems.isEmpty, "\(problems.prefix(10))")
    }
}
