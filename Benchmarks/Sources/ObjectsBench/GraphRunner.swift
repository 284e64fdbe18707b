import Foundation

/// Runs the graph phases of one system in this (child) process and measures them.
func runGraph<S: GraphSystem>(_: S.Type, directory: String, sizes: GraphData.Sizes) throws -> GraphMeasurement {
    let data = GraphData(sizes: sizes)   // drawn before any timing
    var system = try S(directory: directory)
    var m = GraphMeasurement()
    // For profiling one read phase: STRATA_BENCH_REPEAT=query-equality:50 runs it 49 more
    // times, untimed, before the timed run, so that it dominates a perf or callgrind profile;
    // STRATA_BENCH_REPEAT_ALL=1 prints every untimed run's time, not only their median.
    let repeatSpec = ProcessInfo.processInfo.environment["STRATA_BENCH_REPEAT"]?.split(separator: ":")
    // Reopen repeats too: closing and opening again leaves the store as it was.
    let repeatablePhases: Set<GraphPhase> = [.forward, .backlink, .prefetch, .queryEquality, .queryRange, .queryLink, .manyToMany, .reopen]
    func timed<R>(_ phase: GraphPhase, operations: Int, _ body: () throws -> R) rethrows -> R {
        if let repeatSpec, repeatSpec.count == 2, repeatSpec[0] == phase.rawValue, repeatablePhases.contains(phase) {
            var times: [Double] = []
            for _ in 1..<max(2, Int(repeatSpec[1]) ?? 2) {
                let start = DispatchTime.now().uptimeNanoseconds
                _ = try body()
                times.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6)
            }
            if ProcessInfo.processInfo.environment["STRATA_BENCH_REPEAT_ALL"] == "1" {
                FileHandle.standardError.write("\(phase.rawValue): \(times.map { String(format: "%.1f", $0) }.joined(separator: " "))\n".data(using: .utf8)!)
            }
            FileHandle.standardError.write(String(format: "%@: median %.3f ms over %d untimed runs\n",
                                                  phase.rawValue, times.sorted()[times.count / 2], times.count).data(using: .utf8)!)
        }
        let start = DispatchTime.now().uptimeNanoseconds
        let r = try body()
        m.seconds[phase.rawValue] = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        m.operations[phase.rawValue] = operations
        // Resident memory at each phase's end, split into anonymous memory (the heap, caches)
        // and file-backed pages (mapped segments: page cache the kernel can reclaim); the
        // largest of each is reported. STRATA_BENCH_RSS=1 also prints them per phase.
        if let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) {
            let fields = status.split(separator: "\n").filter { ["VmHWM", "VmRSS", "RssAnon", "RssFile"].contains($0.split(separator: ":").first ?? "") }
            func kilobytes(_ name: String) -> Int64 {
                guard let line = fields.first(where: { $0.hasPrefix(name + ":") }) else { return 0 }
                return Int64(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") ?? 0
            }
            m.peakAnonBytes = max(m.peakAnonBytes, kilobytes("RssAnon") * 1024)
            m.peakFileBytes = max(m.peakFileBytes, kilobytes("RssFile") * 1024)
            if ProcessInfo.processInfo.environment["STRATA_BENCH_RSS"] == "1" {
                FileHandle.standardError.write("\(phase.rawValue): \(fields.map { $0.split(separator: " ", omittingEmptySubsequences: true).joined(separator: " ") }.joined(separator: ", "))\n".data(using: .utf8)!)
            }
        }
        return r
    }
    try timed(.insertCustomers, operations: sizes.customers) { try system.insertCustomers(data) }
    try timed(.insertOrders, operations: sizes.orders) { try system.insertOrders(data) }
    m.checksums["forward"] = try timed(.forward, operations: data.forward.count) { try system.forward(data) }
    m.checksums["backlink"] = try timed(.backlink, operations: data.backlink.count) { try system.backlink(data) }
    m.checksums["prefetch"] = try timed(.prefetch, operations: min(100_000, sizes.orders)) { try system.prefetch(data) }
    m.checksums["query-equality"] = try timed(.queryEquality, operations: data.queryCustomers.count) { try system.queryEquality(data) }
    m.checksums["query-range"] = try timed(.queryRange, operations: data.queryRanges.count) { try system.queryRange(data) }
    m.checksums["query-link"] = try timed(.queryLink, operations: 100) { try system.queryLink(data) }
    try timed(.insertSchool, operations: sizes.teachers + sizes.students) { try system.insertSchool(data) }
    m.checksums["many-to-many"] = try timed(.manyToMany, operations: data.manyToMany.count + sizes.teachers) {
        try system.manyToMany(data)
    }
    try timed(.removeCustomers, operations: data.removals.count) { try system.removeCustomers(data) }
    let (orders, cleared) = try system.verifyRemoval()
    guard orders == sizes.orders, cleared == data.ordersOfRemovedCustomers else {
        throw NSError(domain: "bench", code: 3, userInfo: [NSLocalizedDescriptionKey:
            "\(S.name): \(orders) orders, \(cleared) without customer; expected \(sizes.orders), \(data.ordersOfRemovedCustomers)"])
    }
    m.checksums["cleared"] = Int64(cleared)
    let reopened = try timed(.reopen, operations: 1) { try system.reopen() }
    guard reopened == sizes.orders else {
        throw NSError(domain: "bench", code: 4, userInfo: [NSLocalizedDescriptionKey: "\(S.name): \(reopened) orders after reopen"])
    }
    system.close()
    m.diskBytes = directorySize(directory)
    var usage = rusage()
    getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
    m.peakRSSBytes = Int64(usage.ru_maxrss) * 1024
    return m
}

func directorySize(_ path: String) -> Int64 {
    let fm = FileManager.default
    var total: Int64 = 0
    for name in (try? fm.contentsOfDirectory(atPath: path)) ?? [] {
        let attributes = try? fm.attributesOfItem(atPath: path + "/" + name)
        total += (attributes?[.size] as? NSNumber)?.int64Value ?? 0
    }
    return total
}

/// Runs the graph workload of every system in child processes, `reps` times, and prints the
/// per-phase medians and the Strata/GRDB ratios.
/// With `encrypted`, a third system: Strata with an encryption key (SPEC.md §14), against the
/// same run's plaintext Strata and GRDB.
func runGraphComparison(sizes: GraphData.Sizes, scale: Double, reps: Int, only onlySystem: String?, encrypted: Bool = false) {
    // `--only strata --encrypted` keeps both Strata systems: encrypted against plaintext alone,
    // twice as many repetitions in the time GRDB's inserts take.
    let systems: [String] = (encrypted ? ["strata", "strata-encrypted", "grdb"] : ["strata", "grdb"])
        .filter { onlySystem == nil || $0 == onlySystem! || (onlySystem == "strata" && $0 == "strata-encrypted") }
    var results: [String: [GraphMeasurement]] = [:]
    for rep in 0..<reps {
        // The systems take turns going first: the one that runs after another meets its
        // leftovers (dirty pages still being written back, a 100 MB directory being removed),
        // which a fixed order charged to the same system every time.
        let turn = rep % systems.count
        for name in systems[turn...] + systems[..<turn] {
            let dir = NSTemporaryDirectory() + "strata-graph-\(name)-\(UUID().uuidString)"
            defer { try? FileManager.default.removeItem(atPath: dir) }
            let p = Process()
            p.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
            p.arguments = ["graph-child", name, dir, String(scale)]
            if name == "strata-encrypted" {
                var environment = ProcessInfo.processInfo.environment
                environment[BenchDurability.keyEnvironmentKey] = String(repeating: "5a", count: 32)
                p.environment = environment
            }
            let out = Pipe()
            p.standardOutput = out
            do {
                try p.run()
                let bytes = out.fileHandleForReading.readDataToEndOfFile()
                p.waitUntilExit()
                guard p.terminationStatus == 0 else { print("\(name) failed (status \(p.terminationStatus))"); exit(1) }
                results[name, default: []].append(try JSONDecoder().decode(GraphMeasurement.self, from: bytes))
            } catch {
                print("\(name) failed: \(error)")
                exit(1)
            }
        }
    }
    print("object graph: C=\(sizes.customers) O=\(sizes.orders) T=\(sizes.teachers) S=\(sizes.students), \(reps) repetition(s) (systems take turns going first), medians; release build; durability \(BenchDurability.current.rawValue)")
    if encrypted {
        print("| phase | Strata ops/s | Strata encrypted ops/s | GRDB ops/s | encrypted/plain | encrypted/GRDB | encrypted/plain per repetition |")
        print("|---|---:|---:|---:|---:|---:|---|")
    } else {
        print("| phase | Strata ops/s | GRDB ops/s | Strata/GRDB | per repetition |")
        print("|---|---:|---:|---:|---|")
    }
    for phase in GraphPhase.allCases {
        func rate(_ system: String) -> Double? {
            guard let ms = results[system], !ms.isEmpty else { return nil }
            return median(ms.map { Double($0.operations[phase.rawValue]!) / $0.seconds[phase.rawValue]! })
        }
        let s = rate("strata"), g = rate("grdb")
        let ratio = s.flatMap { s in g.map { String(format: "%.2f×", s / $0) } } ?? "-"
        func fmt(_ v: Double?) -> String { v.map { $0 >= 100 ? String(Int($0)) : String(format: "%.2f", $0) } ?? "-" }
        // Each repetition runs the systems back to back: their ratio within it is the spread
        // that the machine's noise leaves.
        func perRepetition(_ a: String, over b: String) -> String {
            guard let am = results[a], let bm = results[b] else { return "-" }
            return zip(am, bm).map { x, y in
                let rx = Double(x.operations[phase.rawValue]!) / x.seconds[phase.rawValue]!
                let ry = Double(y.operations[phase.rawValue]!) / y.seconds[phase.rawValue]!
                return String(format: "%.2f×", rx / ry)
            }.joined(separator: " / ")
        }
        if encrypted {
            let e = rate("strata-encrypted")
            func ratio(_ a: Double?, _ b: Double?) -> String { a.flatMap { a in b.map { String(format: "%.2f×", a / $0) } } ?? "-" }
            print("| \(phase.rawValue)\(phase == .reopen ? " (per second)" : "") | \(fmt(s)) | \(fmt(e)) | \(fmt(g)) | \(ratio(e, s)) | \(ratio(e, g)) | \(perRepetition("strata-encrypted", over: "strata")) |")
            continue
        }
        let perRep = perRepetition("strata", over: "grdb")
        print("| \(phase.rawValue)\(phase == .reopen ? " (per second)" : "") | \(fmt(s)) | \(fmt(g)) | \(ratio) | \(perRep) |")
    }
    for name in systems {
        let ms = results[name]!
        let sums = ms[0].checksums.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
        print("\(name): disk \(String(format: "%.1f", median(ms.map { Double($0.diskBytes) / 1e6 }))) MB, "
              + "peak RSS \(Int(median(ms.map { Double($0.peakRSSBytes) / 1e6 }))) MB "
              + "(at phase ends, peak anonymous \(Int(median(ms.map { Double($0.peakAnonBytes) / 1e6 }))) MB, "
              + "peak file-backed \(Int(median(ms.map { Double($0.peakFileBytes) / 1e6 }))) MB); checksums: \(sums)")
    }
    // Every system's checksums against the first's (`--only strata --encrypted` has no GRDB).
    if let first = results[systems[0]]?.first, systems.contains(where: { results[$0]?.first?.checksums != first.checksums }) {
        print("CHECKSUMS DIFFER: the systems did not do the same work")
        exit(1)
    }
}
