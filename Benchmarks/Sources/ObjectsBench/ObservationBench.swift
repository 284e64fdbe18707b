import Dispatch
import Foundation
import Histogram
import Strata
import Synchronization

// `strata-objects-bench observe`: what change observation costs a writer, and how soon an
// observer hears of a commit.
//
// - put throughput: P puts of one order each (one commit per put), with no observer, with 10
//   change observers (`Store.subscribe`, callbacks that count) and with 10 query observers
//   (`Query.subscribe`, an indexed equality query each, re-run after every coalesced batch of
//   commits on its own queue); medians over the repetitions, runs alternated so drift hits
//   all alike.
// - latency: one callback observer (`Store.subscribe`); the writer waits for each notification
//   before the next put, and the time from the call to `put` until the callback starts goes
//   into an HDR histogram (median, p99, max).

@Entity
final class ObservedOrder {
    var id: Id = 0
    @Index var bucket: Int64 = 0
    var summary = ""
}

enum ObservationBench {
    enum Observers { case none, changes, queries }

    /// CPU time of the calling thread, in nanoseconds.
    static func threadCPU() -> UInt64 {
        var t = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t)
        return UInt64(t.tv_sec) * 1_000_000_000 + UInt64(t.tv_nsec)
    }

    /// Puts per second, and the writer thread's CPU nanoseconds per put.
    static func putThroughput(_ kind: Observers, puts: Int) throws -> (rate: Double, cpu: Double) {
        let dir = NSTemporaryDirectory() + "strata-observe-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = try Store(directoryPath: dir, options: BenchDurability.current.strataOptions)
        defer { store.close() }
        let box = store.box(for: ObservedOrder.self)
        let runs = Atomic<Int>(0)
        var tokens: [ObservationToken] = []
        for i in 0..<(kind == .none ? 0 : 10) {
            if kind == .changes {
                tokens.append(try store.subscribe(to: ObservedOrder.self) { _ in runs.add(1, ordering: .relaxed) })
            } else {
                let query = try box.query { ObservedOrder.bucket == Int64(i) }.build()
                tokens.append(try query.subscribe { _ in runs.add(1, ordering: .relaxed) })
            }
        }
        let start = DispatchTime.now().uptimeNanoseconds, cpu = threadCPU()
        for i in 0..<puts {
            let o = ObservedOrder()
            o.bucket = Int64(i % 100)
            o.summary = "order \(i)"
            try box.put(o)
        }
        let elapsed = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        let cpuPerPut = Double(threadCPU() - cpu) / Double(puts)
        tokens.forEach { $0.cancel() }
        return (Double(puts) / elapsed, cpuPerPut)
    }

    static func latency(samples: Int) throws -> Histogram<UInt64> {
        let dir = NSTemporaryDirectory() + "strata-observe-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = try Store(directoryPath: dir, options: BenchDurability.current.strataOptions)
        defer { store.close() }
        let box = store.box(for: ObservedOrder.self)
        let heard = DispatchSemaphore(value: 0)
        let heardAt = Atomic<UInt64>(0)
        let token = try store.subscribe(to: ObservedOrder.self) { _ in
            heardAt.store(DispatchTime.now().uptimeNanoseconds, ordering: .releasing)
            heard.signal()
        }
        defer { token.cancel() }
        var histogram = Histogram<UInt64>(highestTrackableValue: 60_000_000_000, numberOfSignificantValueDigits: .three)
        for i in 0..<(samples + 100) {
            let o = ObservedOrder()
            o.bucket = Int64(i % 100)
            let start = DispatchTime.now().uptimeNanoseconds
            try box.put(o)
            heard.wait()
            if i >= 100 { _ = histogram.record(heardAt.load(ordering: .acquiring) - start) }   // after a warm-up
        }
        return histogram
    }

    static func run(reps: Int, puts: Int) throws {
        var plain: [Double] = [], changes: [Double] = [], observed: [Double] = []
        var cpu: [Observers: [Double]] = [:]
        for _ in 0..<reps {
            for kind in [Observers.none, .changes, .queries] {
                let (rate, perPut) = try putThroughput(kind, puts: puts)
                cpu[kind, default: []].append(perPut)
                switch kind {
                case .none: plain.append(rate)
                case .changes: changes.append(rate)
                case .queries: observed.append(rate)
                }
            }
        }
        let h = try latency(samples: 10_000)
        print("change observation, \(puts) puts of one object each (one commit per put), \(reps) repetition(s), medians; "
              + "release build; durability \(BenchDurability.current.rawValue)")
        print("| measure | value |")
        print("|---|---:|")
        print("| puts/s, no observer | \(Int(median(plain))) (\(plain.map { String(Int($0)) }.joined(separator: " / "))) |")
        print("| puts/s, 10 change observers (callbacks) | \(Int(median(changes))) (\(changes.map { String(Int($0)) }.joined(separator: " / "))) |")
        print(String(format: "| cost of 10 change observers | %.1f%% |", (1 - median(changes) / median(plain)) * 100))
        print("| puts/s, 10 query observers | \(Int(median(observed))) (\(observed.map { String(Int($0)) }.joined(separator: " / "))) |")
        print(String(format: "| cost of 10 query observers | %.1f%% |", (1 - median(observed) / median(plain)) * 100))
        print(String(format: "| writer CPU per put: none / 10 change / 10 query observers | %.2f / %.2f / %.2f µs |",
                     median(cpu[.none]!) / 1e3, median(cpu[.changes]!) / 1e3, median(cpu[.queries]!) / 1e3))
        print(String(format: "| put call → callback, median | %.1f µs |", Double(h.valueAtPercentile(50)) / 1e3))
        print(String(format: "| put call → callback, p99 | %.1f µs |", Double(h.valueAtPercentile(99)) / 1e3))
        print(String(format: "| put call → callback, max | %.1f µs |", Double(h.max) / 1e3))
    }
}
