import Foundation
import Testing
@testable import StrataStorage
import StrataTesting

/// SPEC.md §5.2: what lies after a log's last durable mark may have lost any subset of its pages
/// in a power cut, so damage there is a torn tail, never an error that keeps the store closed;
/// damage a later record vouches for is corruption. Recovery makes its verdict permanent, so a
/// later open never finds the same torn point again and drops what was written since.
@Suite struct TornTailTests {
    static let dir = "/db"

    static func value(_ i: Int) -> String { "value-\(i)" }

    /// A store whose newest WAL holds `count` unsynced one-key batches; returns the WAL's path
    /// and where each record starts.
    static func store(_ fs: InMemoryFileSystem, count: Int, durability: Durability = .none) throws -> (wal: String, starts: [Int]) {
        let e = try Engine.open(directory: dir, options: .testing(fs))
        let wal = try #require(try fs.listDirectory(dir).filter { $0.hasSuffix(".wal") }.sorted().last)
        var starts: [Int] = []
        for i in 0..<count {
            starts.append(fs.contents(of: dir + "/" + wal)!.count)
            try e.put(String(format: "k-%03d", i), value(i), in: e.defaultKeySpace, durability: durability)
        }
        e.close()
        return (dir + "/" + wal, starts)
    }

    static func keys(_ e: Engine) throws -> [String] { try e.keys(e.defaultKeySpace) }

    @Test func aLostPageInTheMiddleOfAnUnsyncedLogIsATornTailMadePermanent() throws {
        let fs = InMemoryFileSystem()
        let (wal, starts) = try Self.store(fs, count: 8)
        var bytes = fs.contents(of: wal)!
        // A page the power cut never wrote reads as zeros: records 3 and 4 vanish, 5–7 are intact.
        for i in (starts[3] + 2)..<starts[5] { bytes[i] = 0 }
        fs.setContents(of: wal, to: bytes)

        #expect(try Engine.verify(directory: Self.dir, fileSystem: fs).isClean)
        var e = try Engine.open(directory: Self.dir, options: .testing(fs))
        #expect(try Self.keys(e) == ["k-000", "k-001", "k-002"])
        try e.put("after", "the open", in: e.defaultKeySpace)
        e.close()
        // Records 5–7 never come back, and the write made after the torn point is kept.
        e = try Engine.open(directory: Self.dir, options: .testing(fs))
        #expect(try Self.keys(e) == ["after", "k-000", "k-001", "k-002"])
        e.close()
    }

    @Test func damageInBytesALaterRecordSaysWereSyncedIsCorruption() throws {
        let fs = InMemoryFileSystem()
        let (wal, starts) = try Self.store(fs, count: 8, durability: .sync)
        var bytes = fs.contents(of: wal)!
        for i in (starts[3] + 2)..<starts[5] { bytes[i] = 0 }
        fs.setContents(of: wal, to: bytes)
        #expect {
            try Engine.open(directory: Self.dir, options: .testing(fs))
        } throws: { error in
            guard case let StorageError.corruption(file, offset, _) = error else { return false }
            return file == wal && offset == UInt64(starts[3])
        }
        #expect(!(try Engine.verify(directory: Self.dir, fileSystem: fs).isClean))
    }

    /// Writes a WAL by hand: one record per sequence number in `sequences`, putting "s-N".
    static func writeLog(_ fs: InMemoryFileSystem, _ path: String, sequences: Range<UInt64>, markFirst: Bool,
                         endOfLog: Bool = false) throws {
        let writer = LogWriter(file: try fs.openWritable(path, truncate: true), path: path)
        if markFirst { writer.noteEarlierLogsDurable() }
        for s in sequences {
            var batch = WriteBatch()
            batch.put(Array("s-\(s)".utf8), Array("v".utf8), in: KeySpace(id: 0, name: "default"))
            var framed = ByteWriter()
            writer.frameBatch(sequence: s, batch: batch.rep, into: &framed)
            try writer.appendFramed(framed.bytes)
        }
        if endOfLog { try writer.appendEndOfLog() }
        try writer.close()
    }

    @Test func aTornLogEndsTheHistoryUnlessALaterLogWasSynced() throws {
        for laterWasSynced in [false, true] {
            let fs = InMemoryFileSystem()
            let e = try Engine.open(directory: Self.dir, options: .testing(fs))
            e.close()
            let wal = try #require(try fs.listDirectory(Self.dir).filter { $0.hasSuffix(".wal") }.sorted().last)
            let number = try #require(UInt64(wal.dropLast(4)))
            let first = Self.dir + "/" + wal, second = Self.dir + "/" + StoreFile.walName(number + 1)
            try Self.writeLog(fs, first, sequences: 1..<7, markFirst: false)
            try Self.writeLog(fs, second, sequences: 7..<10, markFirst: laterWasSynced)
            var bytes = fs.contents(of: first)!
            bytes[bytes.count / 2] ^= 0x10
            fs.setContents(of: first, to: bytes)

            if laterWasSynced {
                #expect(throws: StorageError.self) { try Engine.open(directory: Self.dir, options: .testing(fs)) }
                continue
            }
            var reopened = try Engine.open(directory: Self.dir, options: .testing(fs))
            let kept = try Self.keys(reopened)
            #expect(!kept.isEmpty && kept.count < 6)
            #expect(!kept.contains { ["s-7", "s-8", "s-9"].contains($0) })
            #expect(!fs.fileExists(second))
            try reopened.put("new", "write", in: reopened.defaultKeySpace)
            reopened.close()
            reopened = try Engine.open(directory: Self.dir, options: .testing(fs))
            #expect(try Self.keys(reopened) == (kept + ["new"]).sorted())
            reopened.close()
        }
    }

    /// Rewrites the store's manifest as store format 1 wrote it (format version 1).
    static func downgradeManifest(_ fs: InMemoryFileSystem) throws {
        let current = String(decoding: try #require(fs.contents(of: dir + "/CURRENT")), as: UTF8.self)
        let path = dir + "/" + String(try #require(current.split(separator: "\n").first))
        let reader = LogReader(bytes: try #require(fs.contents(of: path)), path: path, allowsMarks: false)
        var framed = ByteWriter()
        _ = try reader.forEachRecord { record in
            var edit = try #require(VersionEdit.decode(record.payload))
            if edit.formatVersion != nil { edit.formatVersion = 1 }
            edit.encode().withUnsafeBytes { LogWriter.frame($0, into: &framed) }
        }
        fs.setContents(of: path, to: framed.bytes)
    }

    @Test func aStoreOfFormat1OpensAndItsFirstWritableOpenUpgradesIt() throws {
        let fs = InMemoryFileSystem()
        var e = try Engine.open(directory: Self.dir, options: .testing(fs))
        e.close()
        // What format 1 left: a manifest of version 1, a WAL of records without durable marks.
        let wal = try #require(try fs.listDirectory(Self.dir).filter { $0.hasSuffix(".wal") }.sorted().last)
        try Self.writeLog(fs, Self.dir + "/" + wal, sequences: 1..<5, markFirst: false)
        try Self.downgradeManifest(fs)

        var readOnly = EngineOptions.testing(fs)
        readOnly.readOnly = true
        e = try Engine.open(directory: Self.dir, options: readOnly)
        #expect(e.formatVersion == 1)
        #expect(try Self.keys(e) == ["s-1", "s-2", "s-3", "s-4"])
        e.close()
        #expect(try Engine.verify(directory: Self.dir, fileSystem: fs).isClean)

        e = try Engine.open(directory: Self.dir, options: .testing(fs))
        #expect(e.formatVersion == FormatConstants.storeFormatVersion)
        try e.put("s-5", "v", in: e.defaultKeySpace, durability: .sync)
        e.close()
        e = try Engine.open(directory: Self.dir, options: .testing(fs))
        #expect(try Self.keys(e) == ["s-1", "s-2", "s-3", "s-4", "s-5"])
        e.close()
    }

    /// A log that ends at a record boundary without saying so may have lost an unsynced tail
    /// whole: the next log is replayed only after an end-of-log record or under a durable mark.
    @Test func theNextLogIsReplayedOnlyWhenThePreviousOneProvablyEnded() throws {
        for (endOfLog, markedLater) in [(true, false), (false, false), (false, true)] {
            let fs = InMemoryFileSystem()
            let e = try Engine.open(directory: Self.dir, options: .testing(fs))
            e.close()
            let wal = try #require(try fs.listDirectory(Self.dir).filter { $0.hasSuffix(".wal") }.sorted().last)
            let number = try #require(UInt64(wal.dropLast(4)))
            let first = Self.dir + "/" + wal, second = Self.dir + "/" + StoreFile.walName(number + 1)
            try Self.writeLog(fs, first, sequences: 1..<4, markFirst: false, endOfLog: endOfLog)
            try Self.writeLog(fs, second, sequences: 4..<6, markFirst: markedLater)
            #expect(try Engine.verify(directory: Self.dir, fileSystem: fs).isClean)
            let reopened = try Engine.open(directory: Self.dir, options: .testing(fs))
            let expected = endOfLog || markedLater ? ["s-1", "s-2", "s-3", "s-4", "s-5"] : ["s-1", "s-2", "s-3"]
            #expect(try Self.keys(reopened) == expected, "end of log \(endOfLog), later log marked \(markedLater)")
            reopened.close()
        }
    }

    /// Found by the kill test: a store closed cleanly, reopened, and its new log rotated before
    /// any record (the replayed memtable was full), so the durable mark that vouches for the
    /// older logs never reached a log, and the next open dropped everything written after. The
    /// closed log now ends with an end-of-log record, and a pending mark passes to the next log.
    @Test func aLogRotatedBeforeItsFirstRecordLosesNothingAtTheNextOpen() throws {
        let fs = InMemoryFileSystem()
        // More than the next open's memtable holds: its first write rotates the log at once.
        var e = try Engine.open(directory: Self.dir, options: .testing(fs, memtableBytes: 64 << 10))
        let filler = String(repeating: "x", count: 300)
        for i in 0..<20 { try e.put(String(format: "k-%03d", i), filler, in: e.defaultKeySpace) }
        e.close()
        // The flush the next write starts is held, so the logs stay as they are.
        let gate = DispatchSemaphore(value: 0)
        var options = EngineOptions.testing(fs, memtableBytes: 4 << 10)
        options.eventListener = { event in if case .flushBegan = event { gate.wait() } }
        e = try Engine.open(directory: Self.dir, options: options)
        try e.put("big", String(repeating: "y", count: 1_000), in: e.defaultKeySpace)
        try e.put("after", "rotation", in: e.defaultKeySpace)
        fs.simulateCrash(.keepEverything)   // the process dies; the kernel keeps every write
        gate.signal()
        e.close()
        e = try Engine.open(directory: Self.dir, options: .testing(fs, memtableBytes: 4 << 10))
        let keys = try Self.keys(e)
        #expect(keys.contains("after") && keys.contains("big") && keys.filter { $0.hasPrefix("k-") }.count == 20, "\(keys)")
        e.close()
    }
}
