import Foundation
import BenchSupport
import Strata

// strata-objects-bench: object workloads on Strata and on GRDB (SQLite), side by side in one
// run, alternating systems within each repetition; prints medians and Strata/GRDB ratios.
//
//   strata-objects-bench [--flat N] [--reps R] [--only strata|grdb] [--stop-after PHASE] [--durability D]
//   strata-objects-bench observe [--puts N] [--reps R] [--durability D]   (change observation's cost)
//   strata-objects-bench graph [--scale X] [--reps R] [--only strata|grdb] [--durability D] [--encrypted]
//   strata-objects-bench graph-child SYSTEM DIR SCALE      (internal: one run, JSON out)
//   strata-objects-bench put-get-child DIR N              (internal: profile.sh put-new-related, get)
//   strata-objects-bench aggregate [--flat N] [--reps R]  (a property query's sum vs decoding every order)
//   strata-objects-bench backup [--scale X] [--reps R]    (backup, incremental backup, restore vs GRDB)
//   strata-objects-bench values [--flat N] [--reps R]     (UUID, [String], a Codable struct: put and get vs GRDB)
//   strata-objects-bench ciphers [--reps R]               (AES-256-GCM vs ChaCha20-Poly1305 per unit size)
//   strata-objects-bench replica [--scale X] [--reps R] [--ship S] [--poll P]
//                                                         (a replica's lag under the graph inserts)
//
// --stop-after ends each run after one phase (put-all, get-all, …): with valgrind's allocation
// totals at two sizes it gives the allocations per object of the phases up to it.
// --durability matched (default: GRDB synchronous=NORMAL, Strata .none, both lose the last
// commits on a power cut, neither on a process crash) or sync (both sync every commit).

func graphSizes(scale: Double) -> GraphData.Sizes {
    var sizes = GraphData.Sizes()
    sizes.customers = max(1_000, Int(Double(sizes.customers) * scale))
    sizes.orders = max(1_000, Int(Double(sizes.orders) * scale))
    sizes.teachers = max(10, Int(Double(sizes.teachers) * scale))
    sizes.students = max(1_000, Int(Double(sizes.students) * scale))
    return sizes
}

if CommandLine.arguments.count == 5, CommandLine.arguments[1] == "graph-child" {
    let system = CommandLine.arguments[2], dir = CommandLine.arguments[3]
    let sizes = graphSizes(scale: Double(CommandLine.arguments[4]) ?? 1)
    do {
        // "strata-encrypted" is Strata with the key its parent put in the environment.
        let m = system == "grdb"
            ? try runGraph(GRDBGraph.self, directory: dir, sizes: sizes)
            : try runGraph(StrataGraph.self, directory: dir, sizes: sizes)
        print(String(decoding: try JSONEncoder().encode(m), as: UTF8.self))
        exit(0)
    } catch {
        FileHandle.standardError.write("graph benchmark failed: \(error)\n".data(using: .utf8)!)
        exit(1)
    }
}

if CommandLine.arguments.count == 4, CommandLine.arguments[1] == "put-get-child" {
    // For profile.sh's put-new-related and get: N puts of an order with a new customer, then N
    // gets, each in a frame of its own.
    do {
        try runPutGetProfile(directory: CommandLine.arguments[2], count: max(1, Int(CommandLine.arguments[3]) ?? 1))
        exit(0)
    } catch {
        FileHandle.standardError.write("put-get failed: \(error)\n".data(using: .utf8)!)
        exit(1)
    }
}

if CommandLine.arguments.count == 4, CommandLine.arguments[1] == "reopen-child" {
    // For profiling the reopen phase alone: opens a store a graph run left behind, counts its
    // orders and closes it, REPS times; prints the median milliseconds. With
    // STRATA_BENCH_REOPEN_WARM=N, each repetition first reads N random orders (untimed), so that
    // the close meets a full block cache as the graph run's does, and times the phase itself:
    // close, open, count.
    let dir = CommandLine.arguments[2], reps = max(1, Int(CommandLine.arguments[3]) ?? 1)
    let warm = Int(ProcessInfo.processInfo.environment["STRATA_BENCH_REOPEN_WARM"] ?? "") ?? 0
    do {
        var times: [Double] = []
        var random = SplitMix64(state: 7)
        for _ in 0..<reps {
            var start = DispatchTime.now().uptimeNanoseconds
            var graph = try StrataGraph(directory: dir)
            if warm > 0 {
                let orders = graph.store.box(for: GOrder.self)
                let count = UInt64(try orders.count())
                for _ in 0..<warm { _ = try orders.get(Id(random.next() % count + 1)) }
                start = DispatchTime.now().uptimeNanoseconds
            }
            _ = try graph.reopen()
            if warm > 0 { times.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6) }
            graph.close()
            if warm == 0 { times.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6) }
        }
        print(String(format: "reopen: median %.2f ms over %d", times.sorted()[times.count / 2], reps))
        exit(0)
    } catch {
        FileHandle.standardError.write("reopen failed: \(error)\n".data(using: .utf8)!)
        exit(1)
    }
}

var flatCount = 1_000_000
var reps = 3
var only: String?
var stopAfter: FlatCrudPhase?
var args = Array(CommandLine.arguments.dropFirst())
let graphMode = args.first == "graph"
if graphMode { args.removeFirst() }
let observeMode = args.first == "observe"
if observeMode { args.removeFirst() }
let aggregateMode = args.first == "aggregate"
if aggregateMode { args.removeFirst() }
let backupMode = args.first == "backup"
if backupMode { args.removeFirst() }
let valuesMode = args.first == "values"
if valuesMode { args.removeFirst() }
let replicaMode = args.first == "replica"
if replicaMode { args.removeFirst() }
let ciphersMode = args.first == "ciphers"
if ciphersMode { args.removeFirst() }
// `graph --encrypted`: Strata encrypted beside Strata and GRDB in the same run.
let encryptedRun = args.contains("--encrypted")
args.removeAll { $0 == "--encrypted" }
var shipInterval = 1.0
var pollInterval = 1.0
var observePuts = 20_000
var scale = 1.0
while args.count >= 2 {
    let flag = args.removeFirst(), value = args.removeFirst()
    switch flag {
    case "--flat": flatCount = Int(value) ?? flatCount
    case "--puts" where (Int(value) ?? 0) > 0: observePuts = Int(value)!
    case "--reps": reps = max(1, Int(value) ?? reps)
    case "--scale" where (Double(value) ?? 0) > 0: scale = Double(value)!
    case "--ship" where (Double(value) ?? 0) > 0: shipInterval = Double(value)!
    case "--poll" where (Double(value) ?? 0) > 0: pollInterval = Double(value)!
    case "--only" where ["strata", "grdb"].contains(value): only = value
    case "--stop-after" where FlatCrudPhase(rawValue: value) != nil: stopAfter = FlatCrudPhase(rawValue: value)
    case "--durability" where BenchDurability(rawValue: value) != nil: setenv(BenchDurability.environmentKey, value, 1)
    default:
        print("usage: strata-objects-bench [graph | observe | aggregate | backup | values | replica] [--flat N | --puts N | --scale X] [--ship S --poll P] [--reps R] [--only strata|grdb] [--stop-after PHASE] [--durability matched|sync]")
        exit(2)
    }
}

func seconds(_ body: () throws -> Void) rethrows -> Double {
    let start = DispatchTime.now().uptimeNanoseconds
    try body()
    return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
}

/// Runs the four phases once on a fresh directory; returns seconds per phase.
func runFlat<S: FlatCrudSystem>(_: S.Type, count: Int) throws -> [FlatCrudPhase: Double] {
    let dir = NSTemporaryDirectory() + "strata-objects-bench-\(S.name)-\(UUID().uuidString)"
    defer { try? FileManager.default.removeItem(atPath: dir) }
    var system = try S(directory: dir)
    defer { system.close() }
    var out: [FlatCrudPhase: Double] = [:]
    var ids: [Int64] = []
    out[.put] = try seconds { ids = try system.putAll(count: count) }
    if stopAfter == .put { return out }
    var sum: Int64 = 0
    out[.get] = try seconds { sum = try system.getAll(ids: ids) }
    if stopAfter == .get { return out }
    guard sum == FlatValues.checksum(count: count) else {
        throw NSError(domain: "bench", code: 1, userInfo: [NSLocalizedDescriptionKey: "\(S.name) get-all checksum \(sum)"])
    }
    out[.update] = try seconds { try system.updateAll() }
    if stopAfter == .update { return out }
    var removed = 0
    out[.remove] = try seconds { removed = try system.removeAll(ids: ids) }
    guard removed == count else {
        throw NSError(domain: "bench", code: 2, userInfo: [NSLocalizedDescriptionKey: "\(S.name) removed \(removed)"])
    }
    return out
}

func median(_ xs: [Double]) -> Double {
    let s = xs.sorted()
    return s.count % 2 == 1 ? s[s.count / 2] : (s[s.count / 2 - 1] + s[s.count / 2]) / 2
}

if observeMode {
    do {
        try ObservationBench.run(reps: reps, puts: observePuts)
    } catch {
        FileHandle.standardError.write("observation benchmark failed: \(error)\n".data(using: .utf8)!)
        exit(1)
    }
    exit(0)
}

if aggregateMode {
    do {
        try AggregateBench.run(reps: reps, orders: flatCount)
    } catch {
        FileHandle.standardError.write("aggregate benchmark failed: \(error)\n".data(using: .utf8)!)
        exit(1)
    }
    exit(0)
}

if valuesMode {
    do {
        try ValueTypesBench.run(count: flatCount, reps: reps)
    } catch {
        FileHandle.standardError.write("values benchmark failed: \(error)\n".data(using: .utf8)!)
        exit(1)
    }
    exit(0)
}

if replicaMode {
    do {
        try ReplicaBench.run(sizes: graphSizes(scale: scale), reps: reps, shipInterval: shipInterval, pollInterval: pollInterval)
    } catch {
        FileHandle.standardError.write("replica benchmark failed: \(error)\n".data(using: .utf8)!)
        exit(1)
    }
    exit(0)
}

if ciphersMode {
    CipherBench.run(reps: reps)
    exit(0)
}

if backupMode {
    do {
        try BackupBench.run(sizes: graphSizes(scale: scale), reps: reps)
    } catch {
        FileHandle.standardError.write("backup benchmark failed: \(error)\n".data(using: .utf8)!)
        exit(1)
    }
    exit(0)
}

if graphMode {
    runGraphComparison(sizes: graphSizes(scale: scale), scale: scale, reps: reps, only: only, encrypted: encryptedRun)
    exit(0)
}

print("flat CRUD, F = \(flatCount), \(reps) repetition(s), medians; release build; durability \(BenchDurability.current.rawValue)")
var strataTimes: [FlatCrudPhase: [Double]] = [:]
var grdbTimes: [FlatCrudPhase: [Double]] = [:]
do {
    for _ in 0..<reps {
        if only != "grdb" {
            for (phase, t) in try runFlat(StrataFlat.self, count: flatCount) { strataTimes[phase, default: []].append(t) }
        }
        if only != "strata" {
            for (phase, t) in try runFlat(GRDBFlat.self, count: flatCount) { grdbTimes[phase, default: []].append(t) }
        }
    }
} catch {
    FileHandle.standardError.write("benchmark failed: \(error)\n".data(using: .utf8)!)
    exit(1)
}
print("| phase | Strata objects/s | GRDB objects/s | Strata/GRDB |")
print("|---|---:|---:|---:|")
for phase in FlatCrudPhase.allCases where strataTimes[phase] != nil || grdbTimes[phase] != nil {
    let s = strataTimes[phase].map { Double(flatCount) / median($0) }
    let g = grdbTimes[phase].map { Double(flatCount) / median($0) }
    let ratio = s.flatMap { s in g.map { String(format: "%.2f×", s / $0) } } ?? "-"
    print("| \(phase.rawValue) | \(s.map { String(Int($0)) } ?? "-") | \(g.map { String(Int($0)) } ?? "-") | \(ratio) |")
}
