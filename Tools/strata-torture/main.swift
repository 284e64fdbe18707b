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
///   strata-torture graph DIR SEED   run the graph workload (the kill test's child), printing "ack N"
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
    case "hold":
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
