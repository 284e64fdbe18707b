import Dispatch
import Foundation
import Synchronization
import Testing
@testable import StrataStorage

@Suite struct SnapshotAndConcurrencyTests {
    @Test func snapshotIsIsolatedFromLaterWritesFlushesAndReopenOfIterators() throws {
        let dir = TemporaryDirectory()
        let e = try Engine.open(directory: dir.path, options: .testing(blockBytes: 256))
        defer { e.close() }
        let ks = e.defaultKeySpace
        for i in 0..<50 { try e.put("k\(i)", "old\(i)", in: ks) }
        let snap = try e.snapshot()
        let iterator = try e.makeIterator(in: ks)   // pins the same state
        for i in 0..<50 where i % 2 == 0 { try e.put("k\(i)", "new\(i)", in: ks) }
        for i in 0..<50 where i % 3 == 0 { try e.delete("k\(i)", in: ks) }
        try e.put("k99", "added", in: ks)
        try e.flush()
        #expect(try e.getString("k0", in: ks) == nil)
        #expect(try e.getString("k2", in: ks) == "new2")
        #expect(try e.getString("k0", in: ks, snapshot: snap) == "old0")
        #expect(try e.getString("k2", in: ks, snapshot: snap) == "old2")
        #expect(try e.getString("k99", in: ks, snapshot: snap) == nil)
        let atSnapshot = try e.scan(ks, snapshot: snap)
        #expect(atSnapshot.count == 50)
        #expect(atSnapshot.allSatisfy { string($0.value).hasPrefix("old") })
        var seen = 0
        try iterator.seekToFirst()
        while iterator.isValid {
            #expect(String(decoding: iterator.value, as: UTF8.self).hasPrefix("old"))
            seen += 1
            try iterator.next()
        }
        #expect(seen == 50)
    }

    @Test func iterationAcrossMemtableAndSeveralSegments() throws {
        let dir = TemporaryDirectory()
        let e = try Engine.open(directory: dir.path, options: .testing(blockBytes: 256))
        defer { e.close() }
        let ks = e.defaultKeySpace
        // Interleaved keys across three segments and the memtable, with overwrites and deletes.
        for round in 0..<4 {
            for i in stride(from: round, to: 400, by: 4) { try e.put(String(decoding: key(i), as: UTF8.self), "r\(round)", in: ks) }
            for i in stride(from: 0, to: 400, by: 10) where round == 2 { try e.delete(String(decoding: key(i), as: UTF8.self), in: ks) }
            if round < 3 { try e.flush() }
        }
        #expect(e.statistics().keySpaces[0].segmentsPerLevel[0] == 3)
        let expected = (0..<400).filter { !($0 % 10 == 0 && $0 % 4 <= 2) }.map { String(decoding: key($0), as: UTF8.self) }
        #expect(try e.keys(ks) == expected)
        #expect(try e.keys(ks, reverse: true) == expected.reversed())
        let lower = String(decoding: key(37), as: UTF8.self), upper = String(decoding: key(301), as: UTF8.self)
        #expect(try e.keys(ks, lower: lower, upper: upper) == expected.filter { $0 >= lower && $0 < upper })
        #expect(try e.keys(ks, reverse: true, lower: lower, upper: upper) == expected.filter { $0 >= lower && $0 < upper }.reversed())
        let prefixed = try e.makeIterator(in: ks, prefix: bytes("0000012"))
        try prefixed.seekToFirst()
        var found: [String] = []
        while prefixed.isValid { found.append(String(decoding: prefixed.key, as: UTF8.self)); try prefixed.next() }
        #expect(found == expected.filter { $0.hasPrefix("0000012") })
    }

    @Test func groupCommitSharesSyncsBetweenWriters() throws {
        let dir = TemporaryDirectory()
        var o = EngineOptions()
        o.durability = .groupCommit
        let e = try Engine.open(directory: dir.path, options: o)
        defer { e.close() }
        let ks = e.defaultKeySpace
        let failures = Atomic<Int>(0)
        // Eight real threads (concurrentPerform would use only as many as there are cores).
        let group = DispatchGroup()
        for t in 0..<8 {
            group.enter()
            let thread = Thread {
                for i in 0..<100 {
                    do { try e.put("t\(t)-\(i)", "v", in: ks) } catch { failures.add(1, ordering: .relaxed) }
                }
                group.leave()
            }
            thread.start()
        }
        group.wait()
        #expect(failures.load(ordering: .relaxed) == 0)
        #expect(try e.scan(ks).count == 800)
        let s = e.statistics()
        #expect(s.writeBatches == 800)
        #expect(s.walSyncs < 800, "8 concurrent durable writers must share syncs")
        #expect(s.walSyncs >= 1)
    }

    @Test func readersReadWhileAWriterWritesAndFlushes() throws {
        let dir = TemporaryDirectory()
        var o = EngineOptions()
        o.memtableBytes = 256 << 10
        o.blockBytes = 512
        let e = try Engine.open(directory: dir.path, options: o)
        defer { e.close() }
        let ks = e.defaultKeySpace
        let done = Atomic<Bool>(false)
        let problems = Atomic<Int>(0)
        let group = DispatchGroup()
        // Writer: batch n writes keys a-n and b-n with the same value, so a consistent reader
        // always sees both or neither.
        DispatchQueue.global().async(group: group) {
            for n in 0..<3000 {
                var batch = WriteBatch()
                batch.put(bytes("a-\(n)"), bytes("\(n)" + String(repeating: "x", count: 100)), in: ks)
                batch.put(bytes("b-\(n)"), bytes("\(n)" + String(repeating: "x", count: 100)), in: ks)
                do { try e.write(batch) } catch { problems.add(1, ordering: .relaxed) }
            }
            done.store(true, ordering: .releasing)
        }
        for r in 0..<3 {
            DispatchQueue.global().async(group: group) {
                while !done.load(ordering: .acquiring) {
                    do {
                        let snap = try e.snapshot()
                        let rows = try e.scan(ks, snapshot: snap)
                        let a = rows.filter { $0.key.first == UInt8(ascii: "a") }.count
                        let b = rows.count - a
                        if a != b { problems.add(1, ordering: .relaxed) }
                        let probe = try e.get(bytes("a-\(r * 7)"), in: ks, snapshot: snap)
                        let twin = try e.get(bytes("b-\(r * 7)"), in: ks, snapshot: snap)
                        if probe != twin { problems.add(1, ordering: .relaxed) }
                    } catch { problems.add(1, ordering: .relaxed) }
                }
            }
        }
        group.wait()
        #expect(problems.load(ordering: .relaxed) == 0)
        #expect(e.statistics().flushes >= 1)
        #expect(try e.scan(ks).count == 6000)
    }
}
