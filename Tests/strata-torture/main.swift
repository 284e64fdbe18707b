import StrataStorage
import StrataTortureModel

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Helper process for the reliability tests: it does to a store what another process would, so
/// the tests can observe locking and crashes from the outside.
///
///   strata-torture hold DIR     open the store, print "ready", keep it open until stdin closes
///   strata-torture write DIR N  write N durable batches, printing each sequence once it is acknowledged
///   strata-torture read DIR     open read-only and print "keys N" for the default key space
///   strata-torture fill DIR BYTES wal|compaction   with a file-size limit of BYTES, write until
///                                   the "disk" is full (the WAL first, or a compaction's output),
///                                   printing "ack N" per acknowledged batch and "error …"
///   strata-torture memory DIR MIB batch|batches|replay   write one batch of MIB MiB, or MIB
///                                   batches of 1 MiB, without flushing, and leave the store unclosed;
///                                   or open (replay) the store; print "baseline KIB peak KIB"
///   strata-torture graph DIR SEED   run the graph workload (the kill test's child), printing "ack N"
///   strata-torture cascade DIR N    build a customer with N orders, then remove her (a cascade), printing
///                                   "working" and "done" around the removal (the cascade kill test's child)
///   strata-torture migrate DIR N    store N accounts, then open with a plan whose step converts them all,
///                                   printing "working" and "done" around that open (the migration kill test's child)
///   strata-torture kill-test DIR CYCLES [SEED]   run the kill test (RELIABILITY.md §1) and print figures
func fail(_ message: String) -> Never {
    let line = "strata-torture: \(message)\n"
    _ = line.withCString { write(2, $0, strlen($0)) }
    exit(1)
}

let args = Array(CommandLine.arguments.dropFirst())
guard args.count >= 2 else { fail("usage: strata-torture hold DIR | write DIR N") }
/// Unbuffered, so the parent sees each line the moment it is true.
func emit(_ line: String) {
    let text = line + "\n"
    _ = text.withCString { write(1, $0, strlen($0)) }
}

if args[0] == "graph" {
    do {
        try KillTest.runChild(store: args[1], seed: UInt64(args.count > 2 ? args[2] : "") ?? 1)
    } catch {
        fail("\(error)")
    }
    exit(0)
}
if args[0] == "cascade" {
    do {
        try CascadeCrash.runChild(store: args[1], orders: Int(args.count > 2 ? args[2] : "") ?? 10_000)
    } catch {
        fail("\(error)")
    }
    exit(0)
}
if args[0] == "migrate" {
    do {
        try MigrationCrash.runChild(store: args[1], accounts: Int(args.count > 2 ? args[2] : "") ?? 100_000)
    } catch {
        fail("\(error)")
    }
    exit(0)
}
if args[0] == "memory" {
    // Peak resident memory (VmHWM) against the resident memory before the work (VmRSS): the
    // bound RELIABILITY.md §11 states for large batches and for replay.
    func status(_ field: String) -> Int {
        guard let text = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
              let line = text.split(separator: "\n").first(where: { $0.hasPrefix(field + ":") }) else { return -1 }
        return Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") ?? -1
    }
    let mib = Int(args.count > 2 ? args[2] : "") ?? 64
    let mode = args.count > 3 ? args[3] : "batch"
    var options = EngineOptions()
    options.memtableBytes = 4 << 30   // no flush: the data stays in the WAL for the replay run
    do {
        let baseline = status("VmRSS")
        let engine = try Engine.open(directory: args[1], options: options)
        if mode != "replay" {
            let value = [UInt8](repeating: 0x5A, count: 64 << 10)
            let perBatch = mode == "batch" ? mib * 16 - 2 : 16   // two values less: room for the keys under the limit
            for b in 0..<(mode == "batch" ? 1 : mib) {
                var batch = WriteBatch()
                for i in 0..<perBatch {
                    batch.put(Array("key-\(b)-\(i)".utf8), value, in: engine.defaultKeySpace)
                }
                try engine.write(batch)
            }
        }
        emit("baseline \(baseline) peak \(status("VmHWM"))")
        if mode == "replay" { engine.close() }
        // Otherwise not closed: what the replay run reads is the WAL, as after a crash.
        exit(0)
    } catch {
        fail("\(error)")
    }
}
if args[0] == "fill" {
    // A real full disk for one process: writes past RLIMIT_FSIZE fail with EFBIG.
    let limit = rlim_t(args.count > 2 ? args[2] : "") ?? (1 << 20)
    var rl = rlimit(rlim_cur: limit, rlim_max: limit)
    setrlimit(Int32(RLIMIT_FSIZE.rawValue), &rl)
    signal(SIGXFSZ, SIG_IGN)
    let compactionMode = args.count > 3 && args[3] == "compaction"
    var options = EngineOptions()
    // "wal": the default 4 MiB memtable, so the WAL outgrows the limit first. "compaction":
    // small memtables and random keys, so merged compaction outputs outgrow it.
    options.memtableBytes = compactionMode ? 128 << 10 : 4 << 20
    options.targetSegmentBytes = 8 << 20
    do {
        let engine = try Engine.open(directory: args[1], options: options)
        let value = [UInt8](repeating: 0x61, count: 100)
        var failures = 0
        for i in 0..<200_000 {
            var batch = WriteBatch()
            let n = compactionMode ? (i &* 2_654_435_761) % 1_000_003 : i
            batch.put(Array(String(format: "key-%08d", n).utf8), value, in: engine.defaultKeySpace)
            do {
                try engine.write(batch, durability: i % 10 == 9 ? .sync : Durability.none)
                emit("ack \(n)")
            } catch {
                emit("error \(error)")
                failures += 1
                if failures >= 20 { break }
            }
        }
        engine.close()
    } catch {
        emit("error \(error)")
    }
    exit(0)
}
if args[0] == "kill-test" {
    let cycles = Int(args.count > 2 ? args[2] : "") ?? 1000
    let seed = UInt64(args.count > 3 ? args[3] : "") ?? UInt64(time(nil))
    do {
        let start = time(nil)
        let report = try KillTest.run(cycles: cycles, directory: args[1], seed: seed, binary: CommandLine.arguments[0]) { cycle, r in
            if (cycle + 1) % 50 == 0 {
                emit("\(cycle + 1) cycles, \(r.killsDuringBackgroundWork) during flush/compaction, \(r.acknowledgedTransactions) transactions acknowledged, \(r.failures.count) failures")
            }
        }
        for f in report.failures { emit("FAILURE \(f)") }
        emit("kill test, seed \(seed): \(report.cycles) cycles in \(time(nil) - start) s, \(report.killsDuringBackgroundWork) kills during a flush or compaction, \(report.acknowledgedTransactions) acknowledged transactions, \(report.failures.count) failures")
        exit(report.failures.isEmpty ? 0 : 1)
    } catch {
        fail("\(error)")
    }
}

do {
    var options = EngineOptions()
    options.readOnly = args[0] == "read"
    let engine = try Engine.open(directory: args[1], options: options)
    switch args[0] {
    case "read":
        emit("keys \(try engine.scan(engine.defaultKeySpace).count)")
        engine.close()
    case "hold", "hold-after-reading":
        // After reading: the segments' guarded copies have installed the SIGBUS guard.
        if args[0] == "hold-after-reading" { emit("keys \(try engine.scan(engine.defaultKeySpace).count)") }
        emit("ready")
        var byte: UInt8 = 0
        while read(0, &byte, 1) > 0 {}
        engine.close()
    case "write":
        let n = Int(args.count > 2 ? args[2] : "") ?? 1000
        let ks = engine.defaultKeySpace
        for i in 0..<n {
            var batch = WriteBatch()
            batch.put(Array("key-\(i)".utf8), Array("value-\(i)".utf8), in: ks)
            try engine.write(batch, durability: .sync)
            emit("ack \(i)")
        }
        engine.close()
    default:
        fail("unknown command \(args[0])")
    }
} catch {
    fail("\(error)")
}
