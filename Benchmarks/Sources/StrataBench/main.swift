import Foundation

// strata-bench: db_bench's workloads on Strata's engine and on LevelDB, back to back, one
// process per (engine, workload, repetition) so peak RSS belongs to one engine.
//
//   strata-bench [--num N] [--reps R] [--workload NAME]... [--engine strata|leveldb]... [--markdown FILE]
//   strata-bench child ENGINE WORKLOAD N DIR        (internal: one measurement as JSON)

func usage() -> Never {
    print("""
    usage: strata-bench [--num N] [--reps R] [--workload NAME]... [--engine strata|leveldb]... [--markdown FILE]
    workloads: \(Workload.allCases.map { $0.rawValue }.joined(separator: ", "))
    """)
    exit(2)
}

var args = Array(CommandLine.arguments.dropFirst())
if args.first == "child" {
    guard args.count == 5, let workload = Workload(rawValue: args[2]), let n = Int(args[3]) else { usage() }
    do {
        let m = args[1] == "leveldb"
            ? try run(LevelDBEngine.self, workload: workload, count: n, directory: args[4])
            : try run(StrataEngine.self, workload: workload, count: n, directory: args[4])
        print(String(decoding: try JSONEncoder().encode(m), as: UTF8.self))
        exit(0)
    } catch {
        FileHandle.standardError.write("benchmark failed: \(error)\n".data(using: .utf8)!)
        exit(1)
    }
}

var n = 1_000_000
var reps = 1
var workloads: [Workload] = []
var engines: [String] = []
var markdownPath: String?
while !args.isEmpty {
    let flag = args.removeFirst()
    guard !args.isEmpty else { usage() }
    let value = args.removeFirst()
    switch flag {
    case "--num": n = Int(value) ?? n
    case "--reps": reps = max(1, Int(value) ?? reps)
    case "--workload": guard let w = Workload(rawValue: value) else { usage() }; workloads.append(w)
    case "--engine": guard ["strata", "leveldb"].contains(value) else { usage() }; engines.append(value)
    case "--markdown": markdownPath = value
    default: usage()
    }
}
if workloads.isEmpty { workloads = Workload.allCases }
if engines.isEmpty { engines = ["strata", "leveldb"] }

func measureInChild(engine: String, workload: Workload) -> Measurement? {
    let dir = NSTemporaryDirectory() + "strata-bench-\(engine)-\(UUID().uuidString)"
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let p = Process()
    p.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
    p.arguments = ["child", engine, workload.rawValue, String(n), dir]
    let out = Pipe()
    p.standardOutput = out
    do { try p.run() } catch { return nil }
    let data = out.fileHandleForReading.readDataToEndOfFile()
    p.waitUntilExit()
    guard p.terminationStatus == 0 else { return nil }
    return try? JSONDecoder().decode(Measurement.self, from: data)
}

func median(_ xs: [Double]) -> Double {
    let s = xs.sorted()
    return s.isEmpty ? 0 : (s.count % 2 == 1 ? s[s.count / 2] : (s[s.count / 2 - 1] + s[s.count / 2]) / 2)
}

func formatRate(_ x: Double) -> String {
    x >= 1e6 ? String(format: "%.2fM", x / 1e6) : x >= 1e3 ? String(format: "%.1fk", x / 1e3) : String(format: "%.0f", x)
}

var rows: [String] = []
let header = "| workload | Strata ops/s | LevelDB ops/s | Strata MB/s | LevelDB MB/s | Strata/LevelDB | Strata RSS MB | LevelDB RSS MB | Strata disk MB | LevelDB disk MB |"
rows.append(header)
rows.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
print("N = \(n), repetitions = \(reps) (medians)")
print(header)
for w in workloads {
    var results: [String: [Measurement]] = [:]
    for _ in 0..<reps {
        for e in engines {
            if let m = measureInChild(engine: e, workload: w) { results[e, default: []].append(m) }
        }
    }
    func cell(_ e: String, _ f: (Measurement) -> Double) -> Double? {
        guard let ms = results[e], !ms.isEmpty else { return nil }
        return median(ms.map(f))
    }
    let so = cell("strata", \.opsPerSecond), lo = cell("leveldb", \.opsPerSecond)
    let sm = cell("strata", \.megabytesPerSecond), lm = cell("leveldb", \.megabytesPerSecond)
    let sr = cell("strata") { Double($0.peakRSSBytes) / 1e6 }, lr = cell("leveldb") { Double($0.peakRSSBytes) / 1e6 }
    let ratio = (so != nil && lo != nil) ? String(format: "%.2f×", so! / lo!) : "–"
    let row = "| \(w.rawValue) | \(so.map(formatRate) ?? "–") | \(lo.map(formatRate) ?? "–") | "
        + "\(sm.map { String(format: "%.1f", $0) } ?? "–") | \(lm.map { String(format: "%.1f", $0) } ?? "–") | \(ratio) | "
        + "\(sr.map { String(format: "%.0f", $0) } ?? "–") | \(lr.map { String(format: "%.0f", $0) } ?? "–") | "
        + "\(cell("strata") { Double($0.diskBytes) / 1e6 }.map { String(format: "%.1f", $0) } ?? "–") | "
        + "\(cell("leveldb") { Double($0.diskBytes) / 1e6 }.map { String(format: "%.1f", $0) } ?? "–") |"
    rows.append(row)
    print(row)
}
if let markdownPath {
    let text = rows.joined(separator: "\n") + "\n"
    try? text.write(toFile: markdownPath, atomically: true, encoding: .utf8)
}
