import Foundation
import Synchronization
import Testing
@testable import StrataStorage
import StrataTesting

@Suite struct CompactionTests {
    static func smallOptions(_ fs: (any FileSystem)? = nil) -> EngineOptions {
        .testing(fs, memtableBytes: 64 << 10, blockBytes: 1024, targetSegmentBytes: 64 << 10)
    }

    @Test func backgroundCompactionKeepsLevel0SmallAndDataIntact() throws {
        let dir = TemporaryDirectory()
        let e = try Engine.open(directory: dir.path, options: Self.smallOptions())
        let ks = e.defaultKeySpace
        var model: [Int: String] = [:]
        var rng = SplitMix64(state: 11)
        for round in 0..<30 {
            var batch = WriteBatch()
            for _ in 0..<400 {
                let k = rng.below(3000)
                if rng.below(5) == 0 {
                    batch.delete(key(k), in: ks)
                    model[k] = nil
                } else {
                    // Barely compressible, so level 1 needs several segments.
                    let v = "r\(round)-" + (0..<(1 + rng.below(6))).map { _ in String(rng.next(), radix: 36) }.joined()
                    batch.put(key(k), bytes(v), in: ks)
                    model[k] = v
                }
            }
            try e.write(batch)
        }
        try e.flush()
        try e.waitForBackgroundWork()
        let s = e.statistics()
        #expect(s.compactions >= 1)
        #expect(s.keySpaces[0].segmentsPerLevel[0] < CompactionPolicy.level0StopWrites)
        let expected = model.keys.sorted().map { (key($0), bytes(model[$0]!)) }
        let rows = try e.scan(ks)
        #expect(rows.map(\.key) == expected.map(\.0))
        #expect(rows.map(\.value) == expected.map(\.1))
        #expect(s.keySpaces[0].segmentsPerLevel.dropFirst().reduce(0, +) >= 2, "levels below 0 in use")
        let backwards = try e.scan(ks, reverse: true)
        #expect(backwards.map(\.key) == expected.reversed().map(\.0))
        let lower = key(1000), upper = key(2000)
        let window = expected.filter { !$0.0.lexicographicallyPrecedes(lower) && $0.0.lexicographicallyPrecedes(upper) }
        #expect(try e.scan(ks, lowerBound: lower, upperBound: upper, reverse: true).map(\.key) == window.reversed().map(\.0))
        e.close()
        let r = try Engine.open(directory: dir.path, options: Self.smallOptions())
        #expect(try r.scan(r.defaultKeySpace).count == expected.count)
        r.close()
    }

    @Test func fullCompactionDropsObsoleteDataAndShrinksTheStore() throws {
        let dir = TemporaryDirectory()
        let e = try Engine.open(directory: dir.path, options: Self.smallOptions())
        let ks = e.defaultKeySpace
        let value = [UInt8](repeating: 7, count: 200)
        for _ in 0..<10 {
            var batch = WriteBatch()
            for i in 0..<500 { batch.put(key(i), value, in: ks) }
            try e.write(batch)
            try e.flush()
        }
        var deletes = WriteBatch()
        for i in 0..<250 { deletes.delete(key(i), in: ks) }
        try e.write(deletes)
        let amplificationBefore = try e.spaceAmplification()
        let report = try e.compact()
        #expect(report.bytesAfter < report.bytesBefore)
        // Several copies of every key before (background compaction may have merged some);
        // one copy of half the keys after.
        let amplificationAfter = try e.spaceAmplification()
        #expect(amplificationBefore > 2 * amplificationAfter)
        #expect(amplificationAfter > 0 && amplificationAfter < 1.2)
        let s = e.statistics()
        // One version of each of the 250 live keys, no tombstones.
        #expect(s.keySpaces[0].segmentEntries == 250)
        #expect(s.keySpaces[0].segmentsPerLevel[0] == 0)
        #expect(try e.scan(ks).map(\.key) == (250..<500).map { key($0) })
        e.close()
        let r = try Engine.open(directory: dir.path, options: Self.smallOptions())
        #expect(r.statistics().keySpaces[0].segmentEntries == 250)
        r.close()
        // Nothing left on disk but the live segments, one manifest, one (empty) WAL.
        let names = try PosixFileSystem().listDirectory(dir.path)
        #expect(names.filter { $0.hasSuffix(".wal") }.count == 1)
        #expect(names.filter { $0.hasPrefix("MANIFEST-") }.count == 1)
    }

    @Test func snapshotKeepsTheVersionsItSeesThroughCompaction() throws {
        let dir = TemporaryDirectory()
        let e = try Engine.open(directory: dir.path, options: Self.smallOptions())
        defer { e.close() }
        let ks = e.defaultKeySpace
        try e.put("k", "old", in: ks)
        try e.put("gone", "here", in: ks)
        let snap = try e.snapshot()
        try e.put("k", "new", in: ks)
        try e.delete("gone", in: ks)
        _ = try e.compact()
        #expect(try e.getString("k", in: ks) == "new")
        #expect(try e.getString("k", in: ks, snapshot: snap) == "old")
        #expect(try e.getString("gone", in: ks, snapshot: snap) == "here")
        #expect(try e.getString("gone", in: ks) == nil)
        snap.release()
        _ = try e.compact()
        #expect(e.statistics().keySpaces[0].segmentEntries == 1)
    }

    @Test func fullCompactionZeroesTheSequencesNoReaderNeedsAndKeepsTheOthers() throws {
        let dir = TemporaryDirectory()
        var e = try Engine.open(directory: dir.path, options: Self.smallOptions())
        defer { e.close() }
        let ks = e.defaultKeySpace
        func key(_ i: Int) -> String { "key-\(1_000 + i)" }
        for i in 0..<2_000 { try e.put(key(i), "v1-\(i)", in: ks) }
        for i in stride(from: 0, to: 2_000, by: 2) { try e.put(key(i), "v2-\(i)", in: ks) }
        let snap = try e.snapshot()
        for i in stride(from: 0, to: 2_000, by: 4) { try e.put(key(i), "v3-\(i)", in: ks) }
        for i in stride(from: 1, to: 2_000, by: 8) { try e.delete(key(i), in: ks) }
        _ = try e.compact()
        func expectContents(snapshot: Snapshot?) throws {
            for i in 0..<2_000 {
                let expected: String?
                if snapshot == nil, i % 8 == 1 { expected = nil }
                else if snapshot == nil, i % 4 == 0 { expected = "v3-\(i)" }
                else { expected = i % 2 == 0 ? "v2-\(i)" : "v1-\(i)" }
                #expect(try e.getString(key(i), in: ks, snapshot: snapshot) == expected, "key \(i)")
            }
        }
        try expectContents(snapshot: snap)
        try expectContents(snapshot: nil)
        // The snapshot still needs the writes after it told apart from the versions it sees.
        #expect(e.segments().contains { $0.maxSequence > 0 })
        snap.release()
        _ = try e.compact()
        #expect(e.segments().allSatisfy { $0.maxSequence == 0 && $0.minSequence == 0 })
        try expectContents(snapshot: nil)
        e.close()
        e = try Engine.open(directory: dir.path, options: Self.smallOptions())
        try expectContents(snapshot: nil)
        // New writes still shadow the zeroed versions.
        try e.put(key(0), "v4", in: ks)
        try e.delete(key(2), in: ks)
        #expect(try e.getString(key(0), in: ks) == "v4")
        #expect(try e.getString(key(2), in: ks) == nil)
        _ = try e.compact()
        #expect(try e.getString(key(0), in: ks) == "v4")
        #expect(try e.getString(key(2), in: ks) == nil)
        #expect(try e.getString(key(3), in: ks) == "v1-3")
    }

    /// Leaves a store in `dir` whose first compaction close() cancelled: level 0 holds several
    /// overlapping segments, a compaction is due at the next open. Returns what was written.
    static func leaveCompactionDue(in dir: TemporaryDirectory) throws -> [String: String] {
        let began = DispatchSemaphore(value: 0), resume = DispatchSemaphore(value: 0)
        let held = Atomic<Bool>(false)
        let endedWithoutSuccess = Atomic<Bool>(false)
        var options = Self.smallOptions()
        options.eventListener = { event in
            switch event {
            case .compactionBegan:
                // Hold the first merge until close() has begun.
                if held.exchange(true, ordering: .relaxed) == false {
                    began.signal()
                    resume.wait()
                }
            case .compactionEnded(succeeded: false):
                endedWithoutSuccess.store(true, ordering: .relaxed)
            default:
                break
            }
        }
        let e = try Engine.open(directory: dir.path, options: options)
        let ks = e.defaultKeySpace
        var rng = SplitMix64(state: 7)
        var written: [String: String] = [:]
        // Random keys: level-0 segments overlap, so the first compaction merges the thousands of
        // entries of several segments. Writing stops there: more would stall behind the held merge.
        while !held.load(ordering: .relaxed) {
            let k = "key-\(rng.next() % 1_000_000)"
            written[k] = "value-\(written.count)"
            try e.put(k, written[k]!, in: ks)
        }
        #expect(began.wait(timeout: .now() + 30) == .success)
        let closed = DispatchSemaphore(value: 0)
        Thread { e.close(); closed.signal() }.start()
        while e.isOpen { usleep(100) }
        resume.signal()
        #expect(closed.wait(timeout: .now() + 30) == .success)
        let cancelled = endedWithoutSuccess.load(ordering: .relaxed)
        #expect(cancelled)
        return written
    }

    @Test func closeCancelsARunningCompactionAndLosesNothing() throws {
        let dir = TemporaryDirectory()
        let written = try Self.leaveCompactionDue(in: dir)

        // Read-only: no background work starts, so the files are the ones close() left.
        var readOnly = Self.smallOptions()
        readOnly.readOnly = true
        let reopened = try Engine.open(directory: dir.path, options: readOnly)
        defer { reopened.close() }
        let ks = reopened.defaultKeySpace
        for (k, v) in written { #expect(try reopened.getString(k, in: ks) == v) }
        // The close did not wait to unlink the cancelled merge's outputs: whatever it left on
        // disk is named by no manifest record, and the next writable session removes it.
        let live = Set(reopened.segments().map(\.fileNumber))
        #expect(try Self.segmentFiles(in: dir).isSuperset(of: live))
        reopened.close()

        var options = Self.smallOptions()
        options.compactionDelayAfterOpen = 3600
        let writable = try Engine.open(directory: dir.path, options: options)
        for (k, v) in written { #expect(try writable.getString(k, in: writable.defaultKeySpace) == v) }
        writable.close()
        #expect(try Self.segmentFiles(in: dir) == live)
    }

    static func segmentFiles(in dir: TemporaryDirectory) throws -> Set<UInt64> {
        Set(try FileManager.default.contentsOfDirectory(atPath: dir.path).compactMap { name -> UInt64? in
            guard case let .segment(n)? = StoreFile.parse(name) else { return nil }
            return n
        })
    }

    /// A segment file no manifest record names (what a close leaves when it stops a compaction,
    /// or a crash between a merge and its record) waits for the open's first background work,
    /// or its close: the open does not spend its time unlinking it. No new file takes its
    /// number meanwhile, and reads never see it.
    @Test func segmentsNoRecordNamesGoWithTheFirstBackgroundWorkOrTheClose() throws {
        let dir = TemporaryDirectory()
        var options = Self.smallOptions()
        options.compactionDelayAfterOpen = 3600
        var e = try Engine.open(directory: dir.path, options: options)
        for i in 0..<200 { try e.put("k\(i)", "v\(i)", in: e.defaultKeySpace) }
        try e.flush()
        e.close()
        let live = try Self.segmentFiles(in: dir)
        try #require(live.count == 1)
        // A copy of the live segment under an unused, larger number: a segment no record names.
        let source = dir.path + "/" + StoreFile.segmentName(live.first!)
        let leftoverNumber = live.first! + 50
        let leftover = dir.path + "/" + StoreFile.segmentName(leftoverNumber)
        try FileManager.default.copyItem(atPath: source, toPath: leftover)

        // Nothing runs in the background: the close removes it.
        e = try Engine.open(directory: dir.path, options: options)
        #expect(FileManager.default.fileExists(atPath: leftover))
        #expect(try e.getString("k7", in: e.defaultKeySpace) == "v7")
        e.close()
        #expect(!FileManager.default.fileExists(atPath: leftover))

        // A flush starts background work, which removes it; the flush's segment took a number
        // past it.
        try FileManager.default.copyItem(atPath: source, toPath: leftover)
        e = try Engine.open(directory: dir.path, options: options)
        #expect(FileManager.default.fileExists(atPath: leftover))
        for i in 0..<200 { try e.put("k\(i)", "w\(i)", in: e.defaultKeySpace) }
        try e.flush()
        try e.waitForBackgroundWork()
        #expect(!FileManager.default.fileExists(atPath: leftover))
        let added = try Self.segmentFiles(in: dir).subtracting(live)
        #expect(!added.isEmpty && added.allSatisfy { $0 > leftoverNumber })
        #expect(try e.getString("k7", in: e.defaultKeySpace) == "w7")
        e.close()
    }

    @Test func anOpenWaitsBeforeCompactingWhatTheLastSessionLeftDue() throws {
        let dir = TemporaryDirectory()
        let written = try Self.leaveCompactionDue(in: dir)
        let began = Atomic<Int>(0)
        var options = Self.smallOptions()
        options.eventListener = { event in
            if case .compactionBegan = event { began.add(1, ordering: .relaxed) }
        }

        // A long delay: opening and reading start no compaction; waitForBackgroundWork counts
        // the held one as due and runs it.
        options.compactionDelayAfterOpen = 3600
        var e = try Engine.open(directory: dir.path, options: options)
        let level0 = e.statistics().keySpaces[0].segmentsPerLevel[0]
        #expect(level0 >= CompactionPolicy.level0CompactionTrigger)
        for (k, v) in written { #expect(try e.getString(k, in: e.defaultKeySpace) == v) }
        usleep(200_000)
        #expect(began.load(ordering: .relaxed) == 0)
        try e.waitForBackgroundWork()
        #expect(began.load(ordering: .relaxed) >= 1)
        #expect(e.statistics().keySpaces[0].segmentsPerLevel[0] < level0)
        for (k, v) in written { #expect(try e.getString(k, in: e.defaultKeySpace) == v) }
        e.close()

        // A short delay: the compaction starts on its own once it has passed.
        _ = try Self.leaveCompactionDue(in: dir)
        began.store(0, ordering: .relaxed)
        options.compactionDelayAfterOpen = 0.05
        e = try Engine.open(directory: dir.path, options: options)
        var waited = 0.0
        while began.load(ordering: .relaxed) == 0 && waited < 30 {
            usleep(10_000)
            waited += 0.01
        }
        #expect(began.load(ordering: .relaxed) >= 1)
        e.close()

        for bad in [-1, 3601, .nan, .infinity] as [Double] {
            options.compactionDelayAfterOpen = bad
            #expect(throws: StorageError.self) { _ = try Engine.open(directory: dir.path, options: options) }
        }
    }

    @Test func iteratorKeepsReadingFilesThatCompactionReplaced() throws {
        let dir = TemporaryDirectory()
        let e = try Engine.open(directory: dir.path, options: Self.smallOptions())
        defer { e.close() }
        let ks = e.defaultKeySpace
        for round in 0..<3 {
            var batch = WriteBatch()
            for i in 0..<300 { batch.put(key(i), bytes("r\(round)"), in: ks) }
            try e.write(batch)
            try e.flush()
        }
        let it = try e.makeIterator(in: ks)
        try it.seekToFirst()
        _ = try e.compact()
        var n = 0
        while it.isValid {
            #expect(String(decoding: it.value, as: UTF8.self) == "r2")
            n += 1
            try it.next()
        }
        #expect(n == 300)
    }

    @Test func crashDuringCompactionLosesNothingAndLeavesNoOrphans() throws {
        // Fail the Nth file operation of a full compaction, for every N until it succeeds.
        var n = 0
        var completed = false
        while !completed && n < 200 {
            let memory = InMemoryFileSystem()
            let fs = FaultInjectingFileSystem(wrapping: memory)
            let e = try Engine.open(directory: "/db", options: Self.smallOptions(fs))
            let ks = e.defaultKeySpace
            for round in 0..<4 {
                var batch = WriteBatch()
                for i in 0..<300 { batch.put(key(i), bytes("r\(round)-\(i)"), in: ks) }
                try e.write(batch, durability: .sync)
                try e.flush()
            }
            fs.injectFault(.init(afterOperations: n, operations: [.open, .write, .sync, .rename, .syncDirectory],
                                 error: .io(operation: "injected", path: "/db", errno: 5), sticky: true))
            do {
                _ = try e.compact()
                completed = true
            } catch {}
            memory.simulateCrash(.dropUnsynced)
            let r = try Engine.open(directory: "/db", options: Self.smallOptions(memory))
            let rows = try r.scan(r.defaultKeySpace)
            #expect(rows.count == 300, "fault at operation \(n)")
            #expect(rows.allSatisfy { string($0.value).hasPrefix("r3-") }, "fault at operation \(n)")
            // Close first: the reopened store may start a compaction of its own.
            r.close()
            let segmentFiles = try memory.listDirectory("/db").filter { $0.hasSuffix(".seg") }.count
            let liveSegments = r.statistics().keySpaces.reduce(0) { $0 + $1.segmentsPerLevel.reduce(0, +) }
            #expect(segmentFiles == liveSegments, "orphan segments after fault at operation \(n)")
            n += 1
        }
        #expect(completed)
    }
}
