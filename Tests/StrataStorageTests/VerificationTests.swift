import Foundation
import Testing
@testable import StrataStorage
import StrataTesting

/// `Engine.verify` (every file, every checksum, without opening the store) and the lifetime
/// counters of the STATS file.
@Suite struct VerificationTests {
    /// A store with several segments at two levels and a WAL holding unflushed writes.
    static func makeStore(_ fs: InMemoryFileSystem) throws {
        let e = try Engine.open(directory: "/db", options: .testing(fs, memtableBytes: 32 << 10, blockBytes: 512))
        let ks = try e.keySpace(named: "things")
        for round in 0..<3 {
            var b = WriteBatch()
            for i in 0..<2_000 { b.put(key(i), bytes("value-\(round)-\(i)"), in: ks) }
            try e.write(b)
            try e.flush()
        }
        try e.waitForBackgroundWork()
        // Synced, so that damage before the last record lies in bytes a later record vouches for.
        for i in 0..<50 { try e.put("tail-\(i)", "x", in: ks, durability: .sync) }
        e.close()
    }

    @Test func aHealthyStoreVerifiesCleanAndEveryFileIsRead() throws {
        let fs = InMemoryFileSystem()
        try Self.makeStore(fs)
        let before = try fs.listDirectory("/db").sorted().map { ($0, fs.contents(of: "/db/" + $0)) }
        let report = try Engine.verify(directory: "/db", fileSystem: fs)
        #expect(report.isClean, "\(report.problems)")
        #expect(report.segments >= 1)
        #expect(report.blocks > report.segments)
        #expect(report.entries >= 2_000)
        #expect(report.walRecords == 50)
        #expect(report.manifestRecords >= 1)
        let after = try fs.listDirectory("/db").sorted().map { ($0, fs.contents(of: "/db/" + $0)) }
        #expect(before.map(\.0) == after.map(\.0))
        let unchanged = before.map(\.1) == after.map(\.1)
        #expect(unchanged, "verification writes nothing")
    }

    @Test func everyFlippedByteOfALiveSegmentIsReportedWithItsFile() throws {
        let fs = InMemoryFileSystem()
        try Self.makeStore(fs)
        let segment = try #require(try fs.listDirectory("/db").filter { $0.hasSuffix(".seg") }.sorted().first)
        let path = "/db/" + segment
        let original = try #require(fs.contents(of: path))
        var rng = SplitMix64(state: 7)
        for _ in 0..<200 {
            var damaged = original
            let at = Int(rng.next() % UInt64(damaged.count))
            damaged[at] ^= UInt8(1 << (rng.next() % 8))
            fs.setContents(of: path, to: damaged)
            let report = try Engine.verify(directory: "/db", fileSystem: fs)
            #expect(report.problems.contains { $0.file == path }, "flip at \(at) went unnoticed")
        }
        fs.setContents(of: path, to: original)
        #expect(try Engine.verify(directory: "/db", fileSystem: fs).isClean)
    }

    @Test func aTornWalTailIsANoteAndMidLogDamageAProblemWithItsOffset() throws {
        let fs = InMemoryFileSystem()
        try Self.makeStore(fs)
        let wal = try #require(try fs.listDirectory("/db").filter { $0.hasSuffix(".wal") }.sorted().last)
        let path = "/db/" + wal
        let original = try #require(fs.contents(of: path))
        // The last batch torn: the end-of-log record a clean close appends (16 bytes with the
        // durable mark the last synced write left pending) goes with it.
        fs.setContents(of: path, to: Array(original.dropLast(16 + 3)))
        let torn = try Engine.verify(directory: "/db", fileSystem: fs)
        #expect(torn.isClean)
        #expect(torn.walRecords == 49)
        #expect(torn.notes.contains { $0.contains("torn at offset") })

        var damaged = original
        damaged[20] ^= 0xFF   // inside the first record, with valid records after it
        fs.setContents(of: path, to: damaged)
        let report = try Engine.verify(directory: "/db", fileSystem: fs)
        #expect(report.problems == [StorageProblem(file: path, offset: 0, reason: report.problems.first?.reason ?? "")])
        #expect(report.problems.first?.reason.contains("bytes that were synced") == true)
    }

    @Test func aMissingSegmentOrManifestAndALockedStoreAreReported() throws {
        let fs = InMemoryFileSystem()
        try Self.makeStore(fs)
        let segment = try #require(try fs.listDirectory("/db").filter { $0.hasSuffix(".seg") }.sorted().first)
        let saved = try #require(fs.contents(of: "/db/" + segment))
        try fs.removeFile("/db/" + segment)
        #expect(try Engine.verify(directory: "/db", fileSystem: fs).problems
            == [StorageProblem(file: "/db/" + segment, offset: 0, reason: "live segment file is missing")])
        fs.setContents(of: "/db/" + segment, to: saved)

        let writer = try Engine.open(directory: "/db", options: .testing(fs))
        #expect(throws: StorageError.locked(path: "/db/LOCK")) { try Engine.verify(directory: "/db", fileSystem: fs) }
        writer.close()
        #expect(throws: StorageError.notAStore(path: "/nothing")) { try Engine.verify(directory: "/nothing", fileSystem: fs) }
    }

    @Test func lifetimeCountersSurviveReopenAndADamagedStatsFileIsReportedNotFatal() throws {
        let fs = InMemoryFileSystem()
        var e = try Engine.open(directory: "/db", options: .testing(fs))
        try e.put("a", "1", in: e.defaultKeySpace)
        try e.put("b", "2", in: e.defaultKeySpace)
        #expect(e.statistics().lifetime.writeBatches == 2)
        e.close()
        e = try Engine.open(directory: "/db", options: .testing(fs))
        #expect(e.statistics().writeBatches == 0, "since open")
        try e.put("c", "3", in: e.defaultKeySpace)
        #expect(e.statistics().lifetime.writeBatches == 3)
        #expect(e.statistics().lifetime.userBytesWritten == 6)
        e.close()

        var stats = try #require(fs.contents(of: "/db/STATS"))
        stats[9] ^= 1
        fs.setContents(of: "/db/STATS", to: stats)
        let report = try Engine.verify(directory: "/db", fileSystem: fs)
        #expect(report.problems.map(\.file) == ["/db/STATS"])
        e = try Engine.open(directory: "/db", options: .testing(fs))
        #expect(try e.getString("c", in: e.defaultKeySpace) == "3")
        #expect(e.statistics().lifetime.writeBatches == 0, "damaged counters start afresh")
        e.close()
        #expect(try Engine.verify(directory: "/db", fileSystem: fs).isClean, "the next close rewrote them")
    }
    /// A crafted `STATS` file with a valid checksum may hold any counter: the lifetime sums
    /// saturate instead of trapping (`strata stats` and `strata inspect` print them).
    @Test func lifetimeCountersNearTheLimitSaturate() throws {
        let fs = InMemoryFileSystem()
        var e = try Engine.open(directory: "/db", options: .testing(fs))
        e.close()
        var full = EngineCounters()
        for f in EngineCounters.fields { full[keyPath: f.keyPath] = .max - 1 }
        fs.setContents(of: "/db/STATS", to: StatsFile.encode(full))
        e = try Engine.open(directory: "/db", options: .testing(fs))
        try e.put("a", "1", in: e.defaultKeySpace, durability: .sync)
        let life = e.statistics().lifetime
        #expect(life.writeBatches == .max)
        #expect(life.walBytesWritten == .max)
        #expect(life.bytesWrittenToDisk == .max)
        #expect(life.writeAmplification.isFinite)
        e.close()
        // The same sum serves the statistics' entry counts and sizes, read from segment
        // properties and manifest records.
        #expect([UInt64.max - 1, 2].saturatingSum() == .max)
        #expect([UInt64.max - 2, 1, 1].saturatingSum() == .max)
        #expect([40, 2].saturatingSum() == 42)
        #expect(try Engine.verify(directory: "/db", fileSystem: fs).isClean)
    }
}
