import Dispatch
import Foundation
import Synchronization
import Testing
@testable import StrataStorage

/// RELIABILITY.md §7: four readers (point gets, scans, iterators and snapshots held open across
/// writes) against one writer, with flushes and full compactions forced meanwhile. Every batch
/// writes the same version into keys "a-k" and "b-k" (and deletes both together), so every
/// consistent view has equal pairs; a snapshot read twice, seconds apart, reads the same.
/// Runs `STRATA_SOAK_SECONDS` (default 3; 60 for the figure, and under TSan/ASan).
@Suite struct SoakTests {
    @Test func readersSeeConsistentSnapshotsWhileWritesFlushesAndCompactionsRun() throws {
        let seconds = Double(ProcessInfo.processInfo.environment["STRATA_SOAK_SECONDS"] ?? "") ?? 3
        let dir = TemporaryDirectory()
        var o = EngineOptions()
        o.memtableBytes = 64 << 10
        o.blockBytes = 512
        o.targetSegmentBytes = 128 << 10
        let e = try Engine.open(directory: dir.path, options: o)
        defer { e.close() }
        let ks = e.defaultKeySpace
        let stop = Atomic<Bool>(false)
        let problems = Mutex<[String]>([])
        let readsDone = Atomic<Int>(0)
        let writes = Atomic<Int>(0)
        @Sendable func report(_ p: String) { problems.withLock { if $0.count < 20 { $0.append(p) } } }
        /// Pairs agree: every a-k has its b-k with the same value.
        @Sendable func consistent(_ rows: [(key: [UInt8], value: [UInt8])]) -> Bool {
            var a: [ArraySlice<UInt8>: [UInt8]] = [:], b: [ArraySlice<UInt8>: [UInt8]] = [:]
            for r in rows {
                if r.key.first == UInt8(ascii: "a") { a[r.key.dropFirst(2)] = r.value } else { b[r.key.dropFirst(2)] = r.value }
            }
            return a == b
        }
        // Threads of their own: Dispatch's global queue runs as many blocks as there are cores,
        // and the writer and the flusher never yield, so on 2 cores readers would never start.
        let group = DispatchGroup()
        func spawn(_ body: @escaping @Sendable () -> Void) {
            group.enter()
            Thread { body(); group.leave() }.start()
        }
        spawn {
            var n = 0
            while !stop.load(ordering: .relaxed) {
                var batch = WriteBatch()
                let k = n % 2_000
                if n % 10 == 9 {
                    batch.delete(bytes("a-\(k)"), in: ks)
                    batch.delete(bytes("b-\(k)"), in: ks)
                } else {
                    let v = bytes("\(n)" + String(repeating: "v", count: 60))
                    batch.put(bytes("a-\(k)"), v, in: ks)
                    batch.put(bytes("b-\(k)"), v, in: ks)
                }
                do { try e.write(batch) } catch { report("write: \(error)") }
                n += 1
                writes.add(1, ordering: .relaxed)
            }
        }
        spawn {
            var round = 0
            while !stop.load(ordering: .relaxed) {
                do {
                    if round % 5 == 4 { _ = try e.compact() } else { try e.flush() }
                } catch { report("flush/compact: \(error)") }
                round += 1
                usleep(100_000)
            }
        }
        for r in 0..<4 {
            spawn {
                var i = 0
                while !stop.load(ordering: .relaxed) {
                    do {
                        switch r {
                        case 0 where i % 2 == 0:   // point gets of a pair at one snapshot
                            let snap = try e.snapshot()
                            let k = i % 2_000
                            if try e.get(bytes("a-\(k)"), in: ks, snapshot: snap) != e.get(bytes("b-\(k)"), in: ks, snapshot: snap) {
                                report("get pair \(k) differs")
                            }
                            snap.release()
                        case 0:   // a batched read of pairs, which reads one state without a snapshot
                            var keys = KeyList()
                            for j in 0..<20 {
                                let k = (i * 7 + j * 97) % 2_000
                                keys.append(bytes("a-\(k)"))
                                keys.append(bytes("b-\(k)"))
                            }
                            var values: [[UInt8]?] = []
                            try e.visitValues(forKeys: keys, in: ks) { _, v in values.append(v.map { Array($0) }) }
                            for j in stride(from: 0, to: values.count, by: 2) where values[j] != values[j + 1] {
                                report("batched pair \(j / 2) differs")
                            }
                        case 1:   // whole scans
                            if !consistent(try e.scan(ks)) { report("scan inconsistent") }
                        case 2:   // an iterator held open while writes, flushes and compactions go on
                            let it = try e.makeIterator(in: ks)
                            try it.seekToFirst()
                            var rows: [(key: [UInt8], value: [UInt8])] = []
                            while it.isValid {
                                rows.append((Array(it.key), Array(it.value)))
                                if rows.count % 500 == 0 { usleep(1_000) }
                                try it.next()
                            }
                            if !consistent(rows) { report("iterator inconsistent") }
                        default:  // a snapshot held for a while reads the same twice
                            let snap = try e.snapshot()
                            let first = try e.scan(ks, snapshot: snap)
                            usleep(200_000)
                            let second = try e.scan(ks, snapshot: snap)
                            if !first.elementsEqual(second, by: { $0.key == $1.key && $0.value == $1.value }) { report("snapshot changed") }
                            if !consistent(first) { report("snapshot inconsistent") }
                            snap.release()
                        }
                        readsDone.add(1, ordering: .relaxed)
                    } catch { report("reader \(r): \(error)") }
                    i += 1
                }
            }
        }
        Thread.sleep(forTimeInterval: seconds)
        stop.store(true, ordering: .relaxed)
        group.wait()
        let found = problems.withLock { $0 }
        print("soak: \(seconds) s, \(writes.load(ordering: .relaxed)) batches, \(readsDone.load(ordering: .relaxed)) reads, \(e.statistics().flushes) flushes, \(e.statistics().compactions) compactions, \(found.count) problems")
        #expect(found.isEmpty, "\(found)")
        #expect(e.statistics().compactions >= 1)
        #expect(readsDone.load(ordering: .relaxed) > 10)
    }
}
