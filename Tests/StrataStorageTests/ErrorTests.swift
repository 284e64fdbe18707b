import Testing
@testable import StrataStorage
import StrataTesting

/// Bad input and failing I/O: typed errors, nothing stored half, the engine stays usable.
@Suite struct ErrorTests {
    static func memoryOptions(_ fs: any FileSystem) -> EngineOptions { .testing(fs) }

    /// Creates a store in `fs` and appends `edit` to its manifest, framed and checksummed as
    /// the engine would (a crafted manifest); returns the manifest's path.
    static func storeWithEdit(_ edit: VersionEdit, in fs: InMemoryFileSystem) throws -> String {
        try Engine.open(directory: "/db", options: memoryOptions(fs)).close()
        let current = string(fs.contents(of: "/db/CURRENT")!)
        let manifest = "/db/" + current.split(separator: "\n")[0]
        var framed = ByteWriter()
        edit.encode().withUnsafeBytes { LogWriter.frame($0, into: &framed) }
        fs.setContents(of: manifest, to: fs.contents(of: manifest)! + framed.bytes)
        return manifest
    }

    @Test func limitsAreEnforcedAndNothingIsStoredHalf() throws {
        let fs = InMemoryFileSystem()
        let e = try Engine.open(directory: "/db", options: Self.memoryOptions(fs))
        defer { e.close() }
        let ks = e.defaultKeySpace
        let maxKey = [UInt8](repeating: 1, count: StorageLimits.maxKeyBytes)
        var ok = WriteBatch()
        ok.put(maxKey, [1], in: ks)
        try e.write(ok)
        #expect(try e.get(maxKey, in: ks) == [1])

        var tooLong = WriteBatch()
        tooLong.put(bytes("fine"), bytes("x"), in: ks)
        tooLong.put(maxKey + [0], [1], in: ks)
        #expect(throws: StorageError.keyTooLarge(size: StorageLimits.maxKeyBytes + 1, limit: StorageLimits.maxKeyBytes)) {
            try e.write(tooLong)
        }
        #expect(try e.get(bytes("fine"), in: ks) == nil)

        var bigValue = WriteBatch()
        bigValue.put(bytes("big"), [UInt8](repeating: 0, count: StorageLimits.maxValueBytes + 1), in: ks)
        #expect(throws: StorageError.valueTooLarge(size: StorageLimits.maxValueBytes + 1, limit: StorageLimits.maxValueBytes)) {
            try e.write(bigValue)
        }
        #expect(throws: StorageError.keyTooLarge(size: StorageLimits.maxKeyBytes + 1, limit: StorageLimits.maxKeyBytes)) {
            try e.get(maxKey + [0], in: ks)
        }
    }

    @Test func useAfterCloseThrows() throws {
        let dir = TemporaryDirectory()
        let e = try Engine.open(directory: dir.path)
        let ks = e.defaultKeySpace
        e.close()
        e.close()
        #expect(throws: StorageError.closed) { try e.put("a", "b", in: ks) }
        #expect(throws: StorageError.closed) { try e.get(bytes("a"), in: ks) }
        #expect(throws: StorageError.closed) { try e.makeIterator(in: ks) }
        #expect(throws: StorageError.closed) { try e.snapshot() }
        #expect(throws: StorageError.closed) { try e.keySpace(named: "x") }
        #expect(throws: StorageError.closed) { try e.flush() }
    }

    @Test func missingStoreWithoutCreateIsNotAStore() throws {
        let dir = TemporaryDirectory()
        var o = EngineOptions()
        o.createIfMissing = false
        #expect(throws: StorageError.notAStore(path: dir.path)) { try Engine.open(directory: dir.path, options: o) }
    }

    @Test func unknownAndInvalidKeySpaces() throws {
        let fs = InMemoryFileSystem()
        let a = try Engine.open(directory: "/a", options: Self.memoryOptions(fs))
        let b = try Engine.open(directory: "/b", options: Self.memoryOptions(fs))
        defer { a.close(); b.close() }
        let onlyInA = try a.keySpace(named: "extra")
        #expect(throws: StorageError.self) { try b.put("k", "v", in: onlyInA) }
        #expect(throws: StorageError.invalidKeySpaceName("")) { try a.keySpace(named: "") }
    }

    @Test func diskFullFailsTheWriteAndTheStoreStaysUsable() throws {
        let fs = FaultInjectingFileSystem(wrapping: InMemoryFileSystem())
        let e = try Engine.open(directory: "/db", options: Self.memoryOptions(fs))
        let ks = e.defaultKeySpace
        try e.put("before", "1", in: ks)
        // The next WAL append fails after writing a torn prefix, as a full disk can.
        fs.injectFault(.init(afterOperations: 0, operations: [.write], error: .diskFull(path: "/db"), tornBytes: 7))
        #expect(throws: StorageError.diskFull(path: "/db")) { try e.put("lost", "2", in: ks) }
        #expect(try e.getString("lost", in: ks) == nil)
        try e.put("after", "3", in: ks)
        #expect(try e.keys(ks) == ["after", "before"])
        e.close()
        // Recovery sees no half record in front of the later one.
        let r = try Engine.open(directory: "/db", options: Self.memoryOptions(fs))
        #expect(try r.keys(r.defaultKeySpace) == ["after", "before"])
        r.close()
    }

    /// The fault wrapper works over any file system: here the real one, in a temporary
    /// directory. A failed (torn) append fails the write with a typed error, the engine goes
    /// on, and the store reopens without the failed write.
    @Test func faultsWrapTheRealFileSystem() throws {
        let dir = TemporaryDirectory()
        let fs = FaultInjectingFileSystem(wrapping: PosixFileSystem())
        let e = try Engine.open(directory: dir.path, options: .testing(fs))
        let ks = e.defaultKeySpace
        try e.put("before", "1", in: ks, durability: .sync)
        let countBefore = fs.operationCount
        fs.injectFault(.init(afterOperations: 0, operations: [.write], error: .diskFull(path: dir.path), tornBytes: 5))
        #expect(throws: StorageError.diskFull(path: dir.path)) { try e.put("lost", "2", in: ks, durability: .sync) }
        #expect(fs.operationCount > countBefore)
        try e.put("after", "3", in: ks, durability: .sync)
        e.close()
        let r = try Engine.open(directory: dir.path, options: .testing(PosixFileSystem()))
        #expect(try r.keys(r.defaultKeySpace) == ["after", "before"])
        r.close()
    }

    @Test func failedSyncFailsTheWriteWithoutCorruptingTheLog() throws {
        let fs = FaultInjectingFileSystem(wrapping: InMemoryFileSystem())
        let e = try Engine.open(directory: "/db", options: Self.memoryOptions(fs))
        let ks = e.defaultKeySpace
        fs.injectFault(.init(afterOperations: 0, operations: [.sync], error: .io(operation: "fdatasync", path: "/db", errno: 5)))
        #expect(throws: StorageError.self) { try e.put("unsure", "1", in: ks, durability: .sync) }
        // The fsync gate: what the log holds on disk is unknown now, so writes stop until reopen.
        #expect { try e.put("next", "2", in: ks, durability: .sync) } throws: { error in
            if case StorageError.writesStopped = error { true } else { false }
        }
        e.close()
        let r = try Engine.open(directory: "/db", options: Self.memoryOptions(fs))
        #expect(try r.getString("unsure", in: r.defaultKeySpace) == nil)
        try r.put("next", "2", in: r.defaultKeySpace, durability: .sync)
        #expect(try r.getString("next", in: r.defaultKeySpace) == "2")
        r.close()
    }

    @Test func failingFlushIsReportedAndRetried() throws {
        let fs = FaultInjectingFileSystem(wrapping: InMemoryFileSystem())
        let e = try Engine.open(directory: "/db", options: Self.memoryOptions(fs))
        let ks = e.defaultKeySpace
        for i in 0..<100 { try e.put("k\(i)", "v\(i)", in: ks) }
        // The segment writes of the flush fail once.
        fs.injectFault(.init(afterOperations: 1, operations: [.write], error: .diskFull(path: "/db")))
        #expect(throws: StorageError.diskFull(path: "/db")) { try e.flush() }
        #expect(try e.getString("k5", in: ks) == "v5")
        try e.flush()
        #expect(e.statistics().keySpaces[0].segmentsPerLevel[0] == 1)
        #expect(try e.scan(ks).count == 100)
        e.close()
        let r = try Engine.open(directory: "/db", options: Self.memoryOptions(fs))
        #expect(try r.scan(r.defaultKeySpace).count == 100)
        // No orphan from the failed attempt.
        #expect(try fs.listDirectory("/db").filter { $0.hasSuffix(".seg") }.count == 1)
        r.close()
    }

    @Test func newerStoreFormatIsRefused() throws {
        let fs = InMemoryFileSystem()
        var edit = VersionEdit()
        edit.formatVersion = 99
        let manifest = try Self.storeWithEdit(edit, in: fs)
        #expect(throws: StorageError.unsupportedFormatVersion(file: manifest, found: 99, supported: FormatConstants.storeFormatVersion)) {
            try Engine.open(directory: "/db", options: Self.memoryOptions(fs))
        }
    }

    /// Key spaces numbered other than 0, 1, … from `default`, or a name given twice: the
    /// manifest is refused with a typed error. Before, a manifest that renamed key space 0
    /// opened, and `defaultKeySpace` trapped (found by the store fuzzer).
    @Test(arguments: [[KeySpace(id: 0, name: "other")], [KeySpace(id: 5, name: "gap")],
                      [KeySpace(id: 1, name: "a"), KeySpace(id: 2, name: "a")]])
    func keySpacesNotDenseFromDefaultAreCorruption(added: [KeySpace]) throws {
        let fs = InMemoryFileSystem()
        var edit = VersionEdit()
        edit.addedKeySpaces = added
        let manifest = try Self.storeWithEdit(edit, in: fs)
        let reason = "manifest key spaces are not numbered 0, 1, … from default with distinct names"
        #expect(throws: StorageError.corruption(file: manifest, offset: 0, reason: reason)) {
            try Engine.open(directory: "/db", options: Self.memoryOptions(fs))
        }
        var readOnly = Self.memoryOptions(fs)
        readOnly.readOnly = true
        #expect(throws: StorageError.corruption(file: manifest, offset: 0, reason: reason)) {
            try Engine.open(directory: "/db", options: readOnly)
        }
        // `verify` replays the manifest as recovery does: what the engine refuses, it reports
        // (before, it had its own replay without these checks and called such a store clean).
        let report = try Engine.verify(directory: "/db", fileSystem: fs)
        #expect(report.problems.contains { $0.file == manifest && $0.reason == reason })
    }

    /// A manifest record naming a file number past the limit: refused by the open and reported
    /// by `verify` alike.
    @Test func aFileNumberPastTheLimitIsReportedByVerify() throws {
        let fs = InMemoryFileSystem()
        var edit = VersionEdit()
        edit.logNumber = FormatConstants.maxFileNumber + 1
        let manifest = try Self.storeWithEdit(edit, in: fs)
        #expect(throws: StorageError.self) { try Engine.open(directory: "/db", options: Self.memoryOptions(fs)) }
        let report = try Engine.verify(directory: "/db", fileSystem: fs)
        #expect(report.problems.contains { $0.file == manifest && $0.reason.contains("past the limit") })
    }

    /// A manifest whose last sequence is near the 56-bit limit: the writes that still fit work,
    /// the first one past it is refused with a typed error and nothing of it is applied (before,
    /// its entries' numbers wrapped and read as older than everything: the write was lost).
    @Test func writesPastTheLastSequenceNumberAreRefused() throws {
        let fs = InMemoryFileSystem()
        var edit = VersionEdit()
        edit.lastSequence = StorageLimits.maxSequence - 3
        _ = try Self.storeWithEdit(edit, in: fs)
        let e = try Engine.open(directory: "/db", options: Self.memoryOptions(fs))
        try e.put("a", "1", in: e.defaultKeySpace)
        try e.put("a", "2", in: e.defaultKeySpace, durability: .sync)   // the last sequence number an entry may carry
        var batch = WriteBatch()
        batch.put(Array("a".utf8), Array("3".utf8), in: e.defaultKeySpace)
        batch.put(Array("b".utf8), Array("4".utf8), in: e.defaultKeySpace)
        #expect(throws: StorageError.self) { try e.write(batch) }
        #expect(throws: StorageError.self) { try e.put("c", "5", in: e.defaultKeySpace) }
        #expect(try e.getString("a", in: e.defaultKeySpace) == "2")
        #expect(try e.getString("b", in: e.defaultKeySpace) == nil)
        e.close()
        // The log replays (its last entry carries the last number), then the flush keeps it.
        var again = try Engine.open(directory: "/db", options: Self.memoryOptions(fs))
        #expect(try again.getString("a", in: again.defaultKeySpace) == "2")
        try again.flush()
        again.close()
        again = try Engine.open(directory: "/db", options: Self.memoryOptions(fs))
        #expect(try again.getString("a", in: again.defaultKeySpace) == "2")
        #expect(throws: StorageError.self) { try again.put("c", "5", in: again.defaultKeySpace) }
        again.close()
    }

    @Test func damagedCurrentIsCorruption() throws {
        let fs = InMemoryFileSystem()
        try Engine.open(directory: "/db", options: Self.memoryOptions(fs)).close()
        var current = fs.contents(of: "/db/CURRENT")!
        current[10] ^= 1
        fs.setContents(of: "/db/CURRENT", to: current)
        #expect(throws: StorageError.self) { try Engine.open(directory: "/db", options: Self.memoryOptions(fs)) }
    }
}

@Suite struct ReadOnlyOpenTests {
    @Test func readOnlyOpenReadsEverythingAndWritesNothing() throws {
        let fs = InMemoryFileSystem()
        let w = try Engine.open(directory: "/db", options: .testing(fs))
        let edges = try w.keySpace(named: "edges")
        try w.put("flushed", "1", in: w.defaultKeySpace)
        try w.flush()
        try w.put("in-wal", "2", in: edges)
        w.close()
        let before = try fs.listDirectory("/db").sorted().map { ($0, fs.contents(of: "/db/" + $0)!) }

        var o = EngineOptions.testing(fs)
        o.readOnly = true
        let r1 = try Engine.open(directory: "/db", options: o)
        let r2 = try Engine.open(directory: "/db", options: o)   // readers share the store
        #expect(r1.isReadOnly)
        #expect(try r1.getString("flushed", in: r1.defaultKeySpace) == "1")
        #expect(try r2.getString("in-wal", in: try r2.keySpace(named: "edges")) == "2")
        #expect(throws: StorageError.readOnly(path: "/db")) { try r1.put("x", "y", in: r1.defaultKeySpace) }
        #expect(throws: StorageError.readOnly(path: "/db")) { try r1.flush() }
        #expect(throws: StorageError.readOnly(path: "/db")) { try r1.compact() }
        #expect(throws: StorageError.readOnly(path: "/db")) { try r1.keySpace(named: "new") }
        // A writer is kept out while readers hold the store.
        #expect(throws: StorageError.locked(path: "/db/LOCK")) { try Engine.open(directory: "/db", options: .testing(fs)) }
        r1.close()
        r2.close()
        let after = try fs.listDirectory("/db").sorted().map { ($0, fs.contents(of: "/db/" + $0)!) }
        #expect(after.map(\.0) == before.map(\.0))
        #expect(after.map(\.1) == before.map(\.1))

        // And readers are kept out while a writer holds it.
        let w2 = try Engine.open(directory: "/db", options: .testing(fs))
        #expect(throws: StorageError.locked(path: "/db/LOCK")) { try Engine.open(directory: "/db", options: o) }
        w2.close()
    }

    @Test func readOnlyOpenOfNothingIsNotAStore() throws {
        var o = EngineOptions.testing(InMemoryFileSystem())
        o.readOnly = true
        #expect(throws: StorageError.notAStore(path: "/none")) { try Engine.open(directory: "/none", options: o) }
    }
}
