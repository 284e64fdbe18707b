import Foundation
import Testing
@testable import StrataStorage
import StrataTesting

/// WAL recovery: torn tails are dropped, damage before the end is refused, and batches across
/// key spaces are all-or-nothing.
@Suite struct RecoveryTests {
    static let dir = "/db"

    static func options(_ fs: InMemoryFileSystem) -> EngineOptions { .testing(fs) }

    static func walPath(_ fs: InMemoryFileSystem) throws -> String {
        let names = try fs.listDirectory(dir).filter { $0.hasSuffix(".wal") }.sorted()
        // The newest WAL is the empty one opened last; the data is in the one before it.
        for name in names.reversed() where (fs.contents(of: dir + "/" + name)?.count ?? 0) > 0 {
            return dir + "/" + name
        }
        throw StorageError.notAStore(path: dir)
    }

    /// Writes `count` batches, each putting key i in both key spaces; returns the WAL bytes and
    /// the offset where the last record starts.
    static func writeBatches(_ fs: InMemoryFileSystem, count: Int) throws -> (wal: String, lastRecordStart: Int, lastRecordEnd: Int) {
        let e = try Engine.open(directory: dir, options: options(fs))
        let a = e.defaultKeySpace
        let b = try e.keySpace(named: "edges")
        var sizes: [Int] = []
        for i in 0..<count {
            var batch = WriteBatch()
            batch.put(key(i), bytes("value-\(i)"), in: a)
            batch.put(key(i), bytes("edge-\(i)"), in: b)
            // Synced: the durable marks make damage before the last record detectable.
            try e.write(batch, durability: .sync)
            sizes.append(fs.contents(of: try walPath(fs))!.count)
        }
        let wal = try walPath(fs)
        e.close()
        return (wal, sizes[sizes.count - 2], sizes[sizes.count - 1])
    }

    /// A log several times the replay's window (``Recovery/replayWindowBytes``), with batches
    /// over two key spaces and overwrites, replays whole: each window's operations are inserted
    /// before the window moves on, in their order.
    @Test func aLogOfManyReplayWindowsReplaysWhole() throws {
        let fs = InMemoryFileSystem()
        let options = EngineOptions.testing(fs, memtableBytes: 64 << 20)
        var expected: [[UInt8]: [UInt8]] = [:]
        do {
            let e = try Engine.open(directory: Self.dir, options: options)
            let other = try e.keySpace(named: "other")
            for round in 0..<3 {
                for b in 0..<400 {
                    var batch = WriteBatch()
                    for i in 0..<10 {
                        let k = key(b * 10 + i)
                        let v = [UInt8](repeating: UInt8(truncatingIfNeeded: round &+ i), count: 200 + i)
                        batch.put(k, v, in: e.defaultKeySpace)
                        batch.put(k, v.reversed(), in: other)
                        expected[k] = v
                    }
                    try e.write(batch)
                }
            }
            #expect(e.statistics().keySpaces.allSatisfy { $0.segmentsPerLevel.allSatisfy { $0 == 0 } })
            #expect(e.statistics().walFileBytes > 4 * Recovery.replayWindowBytes)
            e.close()
        }
        let e = try Engine.open(directory: Self.dir, options: options)
        defer { e.close() }
        let other = try e.keySpace(named: "other")
        #expect(expected.count == 4_000)
        for (k, v) in expected {
            #expect(try e.get(k, in: e.defaultKeySpace) == v)
            #expect(try e.get(k, in: other) == v.reversed())
        }
    }

    @Test func truncatedTailAtEveryOffsetKeepsEveryEarlierBatch() throws {
        let fs = InMemoryFileSystem()
        let (wal, lastStart, lastEnd) = try Self.writeBatches(fs, count: 5)
        let full = fs.contents(of: wal)!
        let image = fs.image()
        // Up to the end of the last batch: the end-of-log record of the clean close follows it.
        for cut in lastStart..<lastEnd {
            fs.restore(image)
            fs.setContents(of: wal, to: Array(full.prefix(cut)))
            let e = try Engine.open(directory: Self.dir, options: Self.options(fs))
            let a = e.defaultKeySpace
            let b = try e.keySpace(named: "edges")
            for i in 0..<4 {
                #expect(try e.get(key(i), in: a) == bytes("value-\(i)"), "cut at \(cut)")
                #expect(try e.get(key(i), in: b) == bytes("edge-\(i)"), "cut at \(cut)")
            }
            // The torn batch is entirely absent: neither half applied.
            #expect(try e.get(key(4), in: a) == nil, "cut at \(cut)")
            #expect(try e.get(key(4), in: b) == nil, "cut at \(cut)")
            e.close()
        }
    }

    @Test func garbageTailIsDroppedToo() throws {
        let fs = InMemoryFileSystem()
        let (wal, lastStart, _) = try Self.writeBatches(fs, count: 4)
        var bytes = fs.contents(of: wal)!
        var rng: UInt64 = 77
        for i in lastStart..<bytes.count {
            rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17
            bytes[i] = UInt8(truncatingIfNeeded: rng)
        }
        fs.setContents(of: wal, to: bytes)
        let e = try Engine.open(directory: Self.dir, options: Self.options(fs))
        defer { e.close() }
        #expect(try e.scan(e.defaultKeySpace).count == 3)
    }

    @Test func damageInTheMiddleOfTheLogIsAnError() throws {
        let fs = InMemoryFileSystem()
        let (wal, _, _) = try Self.writeBatches(fs, count: 6)
        var bytes = fs.contents(of: wal)!
        bytes[20] ^= 0x40   // inside the first record
        fs.setContents(of: wal, to: bytes)
        #expect {
            try Engine.open(directory: Self.dir, options: Self.options(fs))
        } throws: { error in
            guard case let StorageError.corruption(file, offset, _) = error else { return false }
            return file == wal && offset == 0
        }
    }

    @Test func powerCutKeepsEverySyncedBatchAndNoHalfBatch() throws {
        for policy: InMemoryFileSystem.CrashPolicy in [.dropUnsynced, .keepRandomPrefixOfUnsynced(seed: 3),
                                                       .garbageUnsyncedTail(seed: 9), .keepEverything] {
            let fs = InMemoryFileSystem()
            let e = try Engine.open(directory: Self.dir, options: Self.options(fs))
            let a = e.defaultKeySpace
            let b = try e.keySpace(named: "edges")
            for i in 0..<40 {
                var batch = WriteBatch()
                batch.put(key(i), bytes("v\(i)"), in: a)
                batch.put(key(i), bytes("e\(i)"), in: b)
                // Every fifth batch is durable; the rest only reach the "OS".
                try e.write(batch, durability: i % 5 == 4 ? .sync : Durability.none)
                if i == 20 { try e.flush() }
            }
            fs.simulateCrash(policy)
            let r = try Engine.open(directory: Self.dir, options: Self.options(fs))
            let ra = r.defaultKeySpace
            let rb = try r.keySpace(named: "edges")
            let keysA = try r.scan(ra).map(\.key)
            let keysB = try r.scan(rb).map(\.key)
            #expect(keysA == keysB, "\(policy): a batch was half applied")
            // What survives is a prefix of the batches that holds every durable one.
            #expect(keysA == (0..<keysA.count).map { key($0) }, "\(policy): not a prefix")
            #expect(keysA.count >= 40, "\(policy): lost a synced batch (\(keysA.count) left)")
            r.close()
        }
    }

    /// A rotation leaves the older WAL unsynced (SPEC §8): the first durable write after it
    /// must sync that WAL before its own record, or a power cut keeps the durable batch and
    /// drops the non-durable ones before it, a hole. The flush that would make the older WAL
    /// obsolete is held back so that only the write path can close the gap.
    @Test func aDurableWriteAfterARotationKeepsEveryEarlierBatchThroughAPowerCut() throws {
        let fs = InMemoryFileSystem()
        let flushGate = DispatchSemaphore(value: 0)
        var options = EngineOptions.testing(fs, memtableBytes: 2 << 10)
        options.eventListener = { event in if case .flushBegan = event { flushGate.wait() } }
        let e = try Engine.open(directory: Self.dir, options: options)
        let a = e.defaultKeySpace
        func walCount() throws -> Int { try fs.listDirectory(Self.dir).filter { $0.hasSuffix(".wal") }.count }
        let walsAtStart = try walCount()
        var written = 0
        while try walCount() == walsAtStart {
            var batch = WriteBatch()
            batch.put(key(written), bytes("value-\(written)"), in: a)
            try e.write(batch, durability: Durability.none)
            written += 1
        }
        var durable = WriteBatch()
        durable.put(key(written), bytes("durable"), in: a)
        try e.write(durable, durability: .sync)

        fs.simulateCrash(.dropUnsynced)
        flushGate.signal()
        e.close()

        let r = try Engine.open(directory: Self.dir, options: .testing(fs, memtableBytes: 2 << 10))
        defer { r.close() }
        #expect(try r.get(key(written), in: r.defaultKeySpace) == bytes("durable"))
        var lost = 0
        for i in 0..<written where try r.get(key(i), in: r.defaultKeySpace) != bytes("value-\(i)") { lost += 1 }
        #expect(lost == 0, "\(lost) of \(written) batches before the durable one are gone")
    }

    /// Opens that write nothing leave no WAL behind: the data still waiting in the log that
    /// the manifest names is replayed by each open, and the empty logs of earlier opens go.
    @Test func opensWithoutWritesDoNotPileUpEmptyLogs() throws {
        let fs = InMemoryFileSystem()
        func walCount() throws -> Int { try fs.listDirectory(Self.dir).filter { $0.hasSuffix(".wal") }.count }
        let (_, _, _) = try Self.writeBatches(fs, count: 3)
        for _ in 0..<5 {
            let e = try Engine.open(directory: Self.dir, options: Self.options(fs))
            #expect(try e.get(key(2), in: e.defaultKeySpace) == bytes("value-2"))
            e.close()
        }
        // The log with the data, and the newest (empty) one.
        #expect(try walCount() == 2)

        // Writes after such opens land in the newest log and are replayed with the older data.
        let e = try Engine.open(directory: Self.dir, options: Self.options(fs))
        try e.put("later", "value", in: e.defaultKeySpace)
        e.close()
        for _ in 0..<3 { try Engine.open(directory: Self.dir, options: Self.options(fs)).close() }
        let r = try Engine.open(directory: Self.dir, options: Self.options(fs))
        defer { r.close() }
        #expect(try r.getString("later", in: r.defaultKeySpace) == "value")
        for i in 0..<3 { #expect(try r.get(key(i), in: try r.keySpace(named: "edges")) == bytes("edge-\(i)")) }
        #expect(try walCount() == 3)
    }

    /// A log big enough to be replayed on several threads (one per key space) gives back
    /// exactly the state written: last values, deletions, values of every key space, and
    /// sequence numbers that go on from the replayed ones.
    @Test func aLargeLogReplaysEveryKeySpaceExactly() throws {
        let fs = InMemoryFileSystem()
        let options = EngineOptions.testing(fs, memtableBytes: 64 << 20)
        var model: [String: [Int: String]] = ["default": [:], "edges": [:], "indexes": [:]]
        do {
            let e = try Engine.open(directory: Self.dir, options: options)
            let spaces = [e.defaultKeySpace, try e.keySpace(named: "edges"), try e.keySpace(named: "indexes")]
            var rng = SplitMix64(state: 11)
            for round in 0..<(Recovery.parallelReplayMinimum / 2) {
                var batch = WriteBatch()
                for _ in 0..<3 {
                    let ks = spaces[Int(rng.next() % 3)]
                    let k = Int(rng.next() % 2_000)
                    if rng.next() % 5 == 0 {
                        batch.delete(key(k), in: ks)
                        model[ks.name]![k] = nil
                    } else {
                        batch.put(key(k), bytes("\(ks.name)-\(k)-\(round)"), in: ks)
                        model[ks.name]![k] = "\(ks.name)-\(k)-\(round)"
                    }
                }
                try e.write(batch)
            }
            e.close()
        }
        #expect(try fs.listDirectory(Self.dir).allSatisfy { !$0.hasSuffix(".seg") }, "everything is still in the log")
        let before: UInt64
        do {
            let e = try Engine.open(directory: Self.dir, options: options)
            before = e.latestSequence
            for (name, values) in model {
                let ks = try e.keySpace(named: name)
                for k in 0..<2_000 { #expect(try e.get(key(k), in: ks).map(string) == values[k]) }
            }
            try e.put("after", "reopen", in: e.defaultKeySpace)
            #expect(e.latestSequence == before + 1)
            e.close()
        }
        let e = try Engine.open(directory: Self.dir, options: options)
        defer { e.close() }
        #expect(try e.getString("after", in: e.defaultKeySpace) == "reopen")
        #expect(e.latestSequence == before + 1)
    }
}
