import Foundation
import Synchronization

/// Result of one workload run in one process.
struct Measurement: Codable {
    var engine: String
    var workload: String
    var operations: Int
    var seconds: Double
    var bytes: Int
    var peakRSSBytes: Int
    var diskBytes: Int

    var opsPerSecond: Double { Double(operations) / seconds }
    var megabytesPerSecond: Double { Double(bytes) / seconds / 1e6 }
}

func now() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

func peakRSS() -> Int {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return Int(usage.ru_maxrss) * 1024
}

func directorySize(_ path: String) -> Int {
    let fm = FileManager.default
    guard let names = try? fm.contentsOfDirectory(atPath: path) else { return 0 }
    return names.reduce(0) { total, name in
        let attributes = try? fm.attributesOfItem(atPath: path + "/" + name)
        return total + (attributes?[.size] as? Int ?? 0)
    }
}

/// Runs one workload on a fresh store in `directory` and measures it.
func run<E: BenchEngine>(_ type: E.Type, workload: Workload, count n: Int, directory: String) throws -> Measurement {
    let data = DataSet(count: n)
    let engine = try E(directory: directory)
    let entryBytes = DataSet.keyBytes + DataSet.valueBytes

    func load(order: [Int], batchSize: Int, sync: Bool = false) throws {
        var pending = 0
        for i in order {
            data.withKey(i) { k in data.withValue(i) { v in engine.add(key: k, value: v) } }
            pending += 1
            if pending == batchSize {
                try engine.commit(sync: sync)
                pending = 0
            }
        }
        if pending > 0 { try engine.commit(sync: sync) }
    }

    var operations = n
    var bytes = n * entryBytes
    var seconds = 0.0
    switch workload {
    case .fillseq, .fillseqBatch, .fillrandom, .fillrandomBatch:
        let order = (workload == .fillseq || workload == .fillseqBatch) ? Array(0..<n) : data.permutation(seed: 42)
        let batch = (workload == .fillseqBatch || workload == .fillrandomBatch) ? 1000 : 1
        let start = now()
        try load(order: order, batchSize: batch)
        seconds = now() - start
    case .overwrite:
        try load(order: data.permutation(seed: 42), batchSize: 1000)
        let order = data.permutation(seed: 43)
        let start = now()
        try load(order: order, batchSize: 1)
        seconds = now() - start
    case .readrandom:
        try load(order: data.permutation(seed: 42), batchSize: 1000)
        let order = data.permutation(seed: 44)
        var found = 0
        let start = now()
        for i in order where try data.withKey(i, { try engine.get(key: $0) }) { found += 1 }
        seconds = now() - start
        guard found == n else { throw LevelDBEngine.Failure(description: "readrandom found \(found) of \(n)") }
    case .readseq:
        try load(order: data.permutation(seed: 42), batchSize: 1000)
        let start = now()
        let (entries, scanned) = try engine.scanAll()
        seconds = now() - start
        guard entries == n else { throw LevelDBEngine.Failure(description: "readseq saw \(entries) of \(n)") }
        bytes = scanned
    case .compacted:
        try load(order: data.permutation(seed: 42), batchSize: 1000)
        let start = now()
        try engine.compactAll()
        seconds = now() - start
    case .fillsync:
        operations = min(n, 10_000)
        bytes = operations * entryBytes
        let order = data.permutation(seed: 42).prefix(operations)
        let start = now()
        try load(order: Array(order), batchSize: 1, sync: true)
        seconds = now() - start
    case .fillsync8:
        operations = min(n, 10_000)
        bytes = operations * entryBytes
        let order = Array(data.permutation(seed: 42).prefix(operations))
        let threads = 8
        let group = DispatchGroup()
        let firstError = Mutex<(any Error)?>(nil)
        let start = now()
        for t in 0..<threads {
            group.enter()
            Thread {
                for j in stride(from: t, to: order.count, by: threads) {
                    let i = order[j]
                    do {
                        try data.withKey(i) { k in try data.withValue(i) { v in try engine.putConcurrently(key: k, value: v, sync: true) } }
                    } catch {
                        firstError.withLock { $0 = $0 ?? error }
                    }
                }
                group.leave()
            }.start()
        }
        group.wait()
        seconds = now() - start
        if let error = firstError.withLock({ $0 }) { throw error }
    }
    engine.close()
    return Measurement(engine: E.name, workload: workload.rawValue, operations: operations, seconds: seconds,
                       bytes: bytes, peakRSSBytes: peakRSS(), diskBytes: directorySize(directory))
}
