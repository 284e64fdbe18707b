import Foundation
import Synchronization
import Testing
@testable import StrataStorage
import StrataTesting
#if canImport(Glibc)
import Glibc
#endif

/// Holes a reviewer found (issue 41): who may read a store's files, a FIFO planted under a
/// store file's name, a manifest append whose cut-back fails.
@Suite struct TrustRound3Tests {
    static func mode(_ path: String) -> Int {
        var st = stat()
        guard stat(path, &st) == 0 else { return -1 }
        return Int(st.st_mode) & 0o777
    }

    @Test func filesAreTheOwnersAloneByDefault() throws {
        let root = TemporaryDirectory()
        let dir = root.path + "/nested/store"
        let e = try Engine.open(directory: dir, options: .testing())
        try e.put("k", "v", in: e.defaultKeySpace)
        try e.flush()
        e.close()
        let saved = umask(0o022)
        defer { umask(saved) }
        #expect(Self.mode(root.path + "/nested") == 0o700)
        #expect(Self.mode(dir) == 0o700)
        let names = try FileManager.default.contentsOfDirectory(atPath: dir)
        #expect(names.contains { $0.hasSuffix(".seg") } && names.contains { $0.hasSuffix(".wal") })
        for name in names { #expect(Self.mode(dir + "/" + name) == 0o600, "\(name)") }
        // A chosen mode: readable by the group.
        let shared = root.path + "/shared"
        var o = EngineOptions.testing()
        o.fileSystem = PosixFileSystem(fileMode: 0o640, directoryMode: 0o750)
        let s = try Engine.open(directory: shared, options: o)
        try s.put("k", "v", in: s.defaultKeySpace)
        s.close()
        #expect(Self.mode(shared) == 0o750)
        for name in try FileManager.default.contentsOfDirectory(atPath: shared) { #expect(Self.mode(shared + "/" + name) == 0o640, "\(name)") }
    }

    /// A store whose files an earlier build made readable by anyone (0644, 0755) is tightened
    /// by its next writable open, to the modes the file system gives new files (issue 54); a
    /// read-only open changes nothing.
    @Test func aWritableOpenTightensTheModesOfAnOlderStore() throws {
        let dir = TemporaryDirectory()
        let e = try Engine.open(directory: dir.path, options: .testing())
        try e.put("k", "v", in: e.defaultKeySpace)
        try e.flush()
        e.close()
        let names = try FileManager.default.contentsOfDirectory(atPath: dir.path)
        #expect(chmod(dir.path, 0o755) == 0)
        for name in names { #expect(chmod(dir.path + "/" + name, 0o644) == 0) }
        var readOnly = EngineOptions.testing()
        readOnly.readOnly = true
        try Engine.open(directory: dir.path, options: readOnly).close()
        #expect(Self.mode(dir.path) == 0o755)
        for name in names { #expect(Self.mode(dir.path + "/" + name) == 0o644, "\(name)") }
        try Engine.open(directory: dir.path, options: .testing()).close()
        #expect(Self.mode(dir.path) == 0o700)
        for name in try FileManager.default.contentsOfDirectory(atPath: dir.path) {
            #expect(Self.mode(dir.path + "/" + name) == 0o600, "\(name)")
        }
    }

    /// A FIFO named like a log used to hang the open forever (a FIFO's open waits for a writer).
    @Test func aFifoUnderALogNameFailsTheOpenInsteadOfHangingIt() throws {
        let dir = TemporaryDirectory()
        let e = try Engine.open(directory: dir.path, options: .testing())
        try e.put("k", "v", in: e.defaultKeySpace)
        e.close()
        let wal = try #require(try FileManager.default.contentsOfDirectory(atPath: dir.path).first { $0.hasSuffix(".wal") })
        try FileManager.default.removeItem(atPath: dir.path + "/" + wal)
        #expect(mkfifo(dir.path + "/" + wal, 0o600) == 0)
        let outcome = LockedValue<Result<Void, any Error>?>(nil)
        let path = dir.path
        Thread.detachNewThread {
            let r = Result { try Engine.open(directory: path, options: .testing()).close() }
            outcome.withLock { $0 = r }
        }
        let deadline = Date().addingTimeInterval(20)
        while outcome.withLock({ $0 }) == nil && Date() < deadline { usleep(10_000) }
        let result = try #require(outcome.withLock { $0 }, "the open still hangs after 20 s")
        #expect(throws: StorageError.self) { try result.get() }
    }

    /// A FIFO at any other name the store opens or creates (issue 54): `STATS` read at open,
    /// `STATS.tmp` written at close, `CURRENT.tmp` written with a new manifest, `LOCK` taken by
    /// a writable and by a read-only open. Each used to block `open(2)` forever (a FIFO's open
    /// waits for its other end); now each is an error or, for the advisory `STATS`, passed over.
    @Test(arguments: ["STATS", "STATS.tmp", "CURRENT.tmp", "LOCK"])
    func aFifoUnderAnyNameTheStoreOpensNeverHangsIt(name: String) throws {
        let dir = TemporaryDirectory()
        if name == "CURRENT.tmp" {
            // Written when a store is created: the FIFO waits in the empty directory.
            try FileManager.default.createDirectory(atPath: dir.path, withIntermediateDirectories: true)
        } else {
            let e = try Engine.open(directory: dir.path, options: .testing())
            try e.put("k", "v", in: e.defaultKeySpace)
            e.close()
            try? FileManager.default.removeItem(atPath: dir.path + "/" + name)
        }
        #expect(mkfifo(dir.path + "/" + name, 0o600) == 0)
        let finished = LockedValue(false)
        let path = dir.path
        Thread.detachNewThread {
            // A writable open (which creates the store, so CURRENT.tmp, or reads STATS), a
            // write, a close (STATS.tmp); then a read-only open (a shared LOCK). Errors are
            // expected.
            if let e = try? Engine.open(directory: path, options: .testing()) {
                try? e.put("k2", "v2", in: e.defaultKeySpace)
                e.close()
            }
            var readOnly = EngineOptions.testing()
            readOnly.readOnly = true
            (try? Engine.open(directory: path, options: readOnly))?.close()
            finished.withLock { $0 = true }
        }
        let deadline = Date().addingTimeInterval(20)
        while !finished.withLock({ $0 }) && Date() < deadline { usleep(10_000) }
        #expect(finished.withLock { $0 }, "an open or a close still hangs on a FIFO named \(name) after 20 s")
    }

    /// A manifest append fails after writing part of its record, and so does the truncation
    /// that would take it back: no later edit may follow the partial record (recovery would stop
    /// there and lose it, and the store would no longer open).
    @Test func aManifestRecordThatCannotBeTakenBackStopsLaterEdits() throws {
        var reachedManifest = false
        for n in 0..<40 {
            let memory = InMemoryFileSystem()
            let fs = FaultInjectingFileSystem(wrapping: memory)
            var o = EngineOptions.testing(fs, memtableBytes: 1 << 20)
            o.durability = .sync
            let e = try Engine.open(directory: "/db", options: o)
            var acknowledged: [String] = []
            for i in 0..<20 {
                try e.put("a\(i)", "v", in: e.defaultKeySpace)
                acknowledged.append("a\(i)")
            }
            fs.injectFault(.init(afterOperations: n, operations: [.write], error: .io(operation: "write", path: "", errno: 5),
                                 tornBytes: 7, times: 2))
            let flushed = (try? e.flush()) != nil
            // The fault is spent: later work either goes through or is refused.
            for i in 0..<20 {
                if (try? e.put("b\(i)", "v", in: e.defaultKeySpace)) != nil { acknowledged.append("b\(i)") }
            }
            _ = try? e.flush()
            if !flushed, (try? e.put("c", "v", in: e.defaultKeySpace)) == nil { reachedManifest = true }
            e.close()
            let again = try Engine.open(directory: "/db", options: .testing(memory))
            for k in acknowledged { #expect(try again.getString(k, in: again.defaultKeySpace) == "v", "fault after \(n) writes: \(k)") }
            again.close()
        }
        #expect(reachedManifest)
    }

    /// A WAL whose middle turned to garbage: recovery looks past the damage for a durable mark
    /// that would make it corruption, and each byte offset of the garbage is a candidate record.
    /// Every candidate here claims a length of 1 MiB, 4 KiB or 16 bytes; checksumming each
    /// claim took hours (4 MiB of garbage: a million candidates of 1 MiB). The candidates are
    /// now judged by their first bytes before any checksum, and the open takes milliseconds.
    @Test(.timeLimit(.minutes(1)))
    func garbageInALogIsScannedOnceNotChecksummedAtEveryOffset() throws {
        let fs = InMemoryFileSystem()
        let e = try Engine.open(directory: "/db", options: .testing(fs))
        for i in 0..<100 { try e.put("k\(i)", "v", in: e.defaultKeySpace) }
        e.close()
        let wal = try #require(try fs.listDirectory("/db").filter { $0.hasSuffix(".wal") }.sorted().last)
        var bytes = try #require(fs.contents(of: "/db/" + wal))
        let keep = bytes.count / 2
        bytes.removeSubrange(keep...)
        let pattern: [UInt8] = [0x00, 0x00, 0x10, 0x00]
        for i in 0..<(4 << 20) { bytes.append(pattern[i % 4]) }
        bytes += [UInt8](repeating: 0xAB, count: 64 << 10)
        fs.setContents(of: "/db/" + wal, to: bytes)

        let again = try Engine.open(directory: "/db", options: .testing(fs))
        defer { again.close() }
        // The records before the damage are kept; the rest is a torn tail (nothing vouches for it).
        #expect(try again.getString("k0", in: again.defaultKeySpace) == "v")
        #expect(try again.keys(again.defaultKeySpace).count < 100)
    }
}
