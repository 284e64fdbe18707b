import Foundation
import Synchronization
import Testing
@testable import StrataStorage
import StrataTesting

/// Online backups (`Engine.backup`, SPEC.md §3.2): a complete store of one committed state,
/// taken while writers go on, incremental into an earlier backup, never half a store.
@Suite struct BackupTests {
    /// Every key space's entries, as "space/key=value" lines.
    static func contents(_ e: Engine) throws -> [String] {
        var out: [String] = []
        for ks in e.keySpaces.sorted(by: { $0.name < $1.name }) {
            for entry in try e.scan(ks) { out.append("\(ks.name)/\(string(entry.key))=\(string(entry.value))") }
        }
        return out
    }

    static func contents(ofStoreAt path: String, fileSystem: (any FileSystem)? = nil) throws -> [String] {
        var o = EngineOptions.testing(fileSystem)
        o.readOnly = true
        let e = try Engine.open(directory: path, options: o)
        defer { e.close() }
        return try contents(e)
    }

    /// A store with several segments per key space, deletions, and a memtable that still holds writes.
    static func fill(_ e: Engine, rounds: Int, start: Int = 0) throws {
        let other = try e.keySpace(named: "other")
        for r in start..<(start + rounds) {
            var b = WriteBatch()
            for i in 0..<50 {
                b.put(key(r * 50 + i), bytes("v\(r)-\(i)"), in: e.defaultKeySpace)
                b.put(key(i), bytes("latest \(r)"), in: other)
            }
            if r > 0 { b.delete(key((r - 1) * 50 + 7), in: e.defaultKeySpace) }
            try e.write(b)
            if r % 3 == 2 { try e.flush() }
        }
    }

    @Test func backupOpensAsTheSameStoreAndVerifiesClean() throws {
        let dir = TemporaryDirectory(), backup = TemporaryDirectory()
        let e = try Engine.open(directory: dir.path, options: .testing(memtableBytes: 64 << 10, blockBytes: 1024))
        defer { e.close() }
        try Self.fill(e, rounds: 20)
        let expected = try Self.contents(e)
        let report = try e.backup(toDirectoryPath: backup.path)
        #expect(report.sequence == e.latestSequence)
        #expect(report.segments > 2)
        #expect(report.filesLinked == report.segments, "on one file system, segments are linked")
        #expect(report.filesCopied == 0 && report.filesReused == 0)
        // Writes after the backup are not in it.
        try e.put("after", "x", in: e.defaultKeySpace)
        #expect(try Self.contents(ofStoreAt: backup.path) == expected)
        let verification = try Engine.verify(directory: backup.path)
        #expect(verification.problems.isEmpty, "\(verification.problems)")
        // A backup opens writable too, as a store of its own.
        let restored = try Engine.open(directory: backup.path, options: .testing())
        try restored.put("own", "y", in: restored.defaultKeySpace)
        #expect(try restored.getString("own", in: restored.defaultKeySpace) == "y")
        restored.close()
    }

    @Test func linkedSegmentsShareTheFileAndCopiesDoNot() throws {
        let dir = TemporaryDirectory(), linked = TemporaryDirectory(), copied = TemporaryDirectory()
        let e = try Engine.open(directory: dir.path, options: .testing(memtableBytes: 64 << 10))
        defer { e.close() }
        try Self.fill(e, rounds: 6)
        _ = try e.backup(toDirectoryPath: linked.path)
        var options = BackupOptions()
        options.linksFiles = false
        let report = try e.backup(toDirectoryPath: copied.path, options: options)
        #expect(report.filesLinked == 0 && report.filesCopied == report.segments && report.bytesCopied > 0)
        let segments = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasSuffix(".seg") }
        #expect(!segments.isEmpty)
        for name in segments {
            func inode(_ d: String) throws -> UInt64 {
                (try FileManager.default.attributesOfItem(atPath: d + "/" + name)[.systemFileNumber] as? NSNumber)?.uint64Value ?? 0
            }
            #expect(try inode(dir.path) == inode(linked.path))
            #expect(try inode(dir.path) != inode(copied.path))
        }
        #expect(try Self.contents(ofStoreAt: copied.path) == Self.contents(e))
    }

    /// The test file systems link as a disk does (issue 54: they copied, so the crash and fault
    /// campaigns never met a linked backup), and a link that fails falls back to copying.
    @Test func backupsLinkInTheTestFileSystemsAndCopyWhenALinkFails() throws {
        let memory = InMemoryFileSystem()
        let fs = FaultInjectingFileSystem(wrapping: memory)
        let e = try Engine.open(directory: "/db", options: .testing(fs, memtableBytes: 16 << 10, blockBytes: 512))
        defer { e.close() }
        try Self.fill(e, rounds: 9)
        let expected = try Self.contents(e)
        let linked = try e.backup(toDirectoryPath: "/linked")
        #expect(linked.segments > 2 && linked.filesLinked == linked.segments)
        #expect(try Self.contents(ofStoreAt: "/linked", fileSystem: memory) == expected)
        fs.injectFault(.init(afterOperations: 0, operations: [.link], error: .io(operation: "link", path: "injected", errno: 18)))
        let copied = try e.backup(toDirectoryPath: "/copied")
        #expect(copied.filesLinked == 0 && copied.filesCopied == copied.segments)
        #expect(try Self.contents(ofStoreAt: "/copied", fileSystem: memory) == expected)
        #expect(try Self.contents(e) == expected)
    }

    /// A restore copies by default (issue 54): the restored store shares no disk block, mode or
    /// owner with its backup; links only when asked.
    @Test func aRestoreCopiesUnlessAskedToLink() throws {
        let dir = TemporaryDirectory(), backup = TemporaryDirectory(), copied = TemporaryDirectory(), linked = TemporaryDirectory()
        do {
            let e = try Engine.open(directory: dir.path, options: .testing(memtableBytes: 64 << 10))
            defer { e.close() }
            try Self.fill(e, rounds: 6)
            _ = try e.backup(toDirectoryPath: backup.path)
        }
        let report = try Engine.restoreBackup(at: backup.path, toDirectoryPath: copied.path)
        #expect(report.segments > 0 && report.filesLinked == 0 && report.filesCopied >= report.segments)
        var linking = BackupOptions.restoring
        linking.linksFiles = true
        let linkedReport = try Engine.restoreBackup(at: backup.path, toDirectoryPath: linked.path, options: linking)
        #expect(linkedReport.filesLinked == linkedReport.segments)
        for name in try FileManager.default.contentsOfDirectory(atPath: backup.path) where name.hasSuffix(".seg") {
            func inode(_ d: String) throws -> UInt64 {
                (try FileManager.default.attributesOfItem(atPath: d + "/" + name)[.systemFileNumber] as? NSNumber)?.uint64Value ?? 0
            }
            #expect(try inode(backup.path) != inode(copied.path))
            #expect(try inode(backup.path) == inode(linked.path))
        }
        #expect(try Self.contents(ofStoreAt: copied.path) == Self.contents(ofStoreAt: backup.path))
    }

    /// Writers commit batches that each move a counter and add one key per step in two key
    /// spaces: a backup taken meanwhile must hold exactly the keys up to its counter.
    @Test func backupUnderConcurrentWritesIsOneCommittedState() throws {
        let dir = TemporaryDirectory(), root = TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: root.path, withIntermediateDirectories: true)
        let e = try Engine.open(directory: dir.path, options: .testing(memtableBytes: 32 << 10, blockBytes: 1024))
        defer { e.close() }
        let other = try e.keySpace(named: "other")
        let stop = Atomic<Bool>(false)
        let writer = Thread {
            var i = 0
            while !stop.load(ordering: .relaxed) {
                i += 1
                var b = WriteBatch()
                b.put(bytes("counter"), bytes(String(i)), in: e.defaultKeySpace)
                b.put(key(i), bytes("a"), in: e.defaultKeySpace)
                b.put(key(i), bytes("b"), in: other)
                if i > 10 { b.delete(key(i - 10), in: other) }
                try? e.write(b)
            }
        }
        writer.start()
        defer { stop.store(true, ordering: .relaxed) }
        var counters: [Int] = []
        for n in 0..<6 {
            let path = root.path + "/b\(n)"
            _ = try e.backup(toDirectoryPath: path)
            let lines = try Self.contents(ofStoreAt: path)
            let counter = lines.first { $0.hasPrefix("default/counter=") }.flatMap { Int($0.dropFirst("default/counter=".count)) } ?? 0
            counters.append(counter)
            var expected: [String] = []
            if counter > 0 {
                expected = (1...counter).map { "default/\(string(key($0)))=a" } + ["default/counter=\(counter)"]
                expected += (max(1, counter - 9)...counter).map { "other/\(string(key($0)))=b" }
            }
            #expect(lines == expected, "backup \(n) at counter \(counter)")
            usleep(20_000)
        }
        stop.store(true, ordering: .relaxed)
        #expect(counters.last ?? 0 > 0)
        #expect(counters == counters.sorted())
    }

    @Test func incrementalBackupCopiesOnlyWhatIsNew() throws {
        let dir = TemporaryDirectory(), backup = TemporaryDirectory()
        let e = try Engine.open(directory: dir.path, options: .testing(memtableBytes: 64 << 10, blockBytes: 1024, targetSegmentBytes: 4 << 10))
        defer { e.close() }
        var options = BackupOptions()
        options.linksFiles = false
        try Self.fill(e, rounds: 12)
        _ = try e.compact()
        let first = try e.backup(toDirectoryPath: backup.path, options: options)
        #expect(first.filesReused == 0 && first.segments >= 1)
        try Self.fill(e, rounds: 3, start: 12)
        let second = try e.backup(toDirectoryPath: backup.path, options: options)
        // The compacted segments are kept; the flushes since are copied.
        #expect(second.filesReused == first.segments)
        #expect(second.filesCopied == second.segments - first.segments)
        #expect(second.bytesCopied < first.bytesCopied)
        #expect(second.sequence > first.sequence)
        #expect(try Self.contents(ofStoreAt: backup.path) == Self.contents(e))
        // Nothing of the first backup is left that the second does not name.
        let names = try FileManager.default.contentsOfDirectory(atPath: backup.path)
        #expect(names.filter { $0.hasPrefix("MANIFEST-") }.count == 1)
        #expect(names.filter { $0.hasSuffix(".seg") }.count == second.segments)
        // After a full compaction the store has new segments only: all are copied.
        _ = try e.compact()
        let third = try e.backup(toDirectoryPath: backup.path, options: options)
        #expect(third.filesReused == 0 && third.filesCopied == third.segments)
        #expect(try Self.contents(ofStoreAt: backup.path) == Self.contents(e))
        // The same state again: everything is kept.
        let fourth = try e.backup(toDirectoryPath: backup.path, options: options)
        #expect(fourth.filesCopied == 0 && fourth.filesReused == fourth.segments)
    }

    /// A backup is the same store (its id); an incremental backup trusts a segment of the
    /// earlier backup only when that backup is of the same store, even when another store wrote
    /// the very same records under the same numbers (issue 54).
    @Test func anIncrementalBackupTrustsOnlyItsOwnStoresSegments() throws {
        let a = TemporaryDirectory(), b = TemporaryDirectory(), backup = TemporaryDirectory()
        var options = BackupOptions()
        options.linksFiles = false
        let layout = EngineOptions.testing(memtableBytes: 64 << 10, blockBytes: 1024, targetSegmentBytes: 4 << 10)
        let ea = try Engine.open(directory: a.path, options: layout)
        let eb = try Engine.open(directory: b.path, options: layout)
        defer { ea.close(); eb.close() }
        // The same writes into both: the same segment numbers and records.
        try Self.fill(ea, rounds: 9)
        try Self.fill(eb, rounds: 9)
        #expect(ea.storeId != eb.storeId)
        let first = try ea.backup(toDirectoryPath: backup.path, options: options)
        #expect(first.filesReused == 0)
        let again = try ea.backup(toDirectoryPath: backup.path, options: options)
        #expect(again.filesReused == again.segments)
        let other = try eb.backup(toDirectoryPath: backup.path, options: options)
        #expect(other.filesReused == 0 && other.filesCopied == other.segments)
        #expect(try Self.contents(ofStoreAt: backup.path) == Self.contents(eb))
        var ro = EngineOptions.testing()
        ro.readOnly = true
        let opened = try Engine.open(directory: backup.path, options: ro)
        #expect(opened.storeId == eb.storeId)
        opened.close()
    }

    @Test func destinationsThatAreNotUnchangedBackupsAreRefused() throws {
        let dir = TemporaryDirectory(), foreign = TemporaryDirectory(), backup = TemporaryDirectory()
        let e = try Engine.open(directory: dir.path, options: .testing())
        defer { e.close() }
        try Self.fill(e, rounds: 3)
        try FileManager.default.createDirectory(atPath: foreign.path, withIntermediateDirectories: true)
        try Data("mine".utf8).write(to: URL(fileURLWithPath: foreign.path + "/notes.txt"))
        #expect(throws: StorageError.destinationInUse(path: foreign.path, reason: "it is not empty and holds no Strata backup (it holds notes.txt)")) {
            try e.backup(toDirectoryPath: foreign.path)
        }
        #expect(try String(contentsOfFile: foreign.path + "/notes.txt", encoding: .utf8) == "mine")
        // Another store, or the store itself.
        let otherStore = TemporaryDirectory()
        try Engine.open(directory: otherStore.path, options: .testing()).close()
        #expect(throws: StorageError.self) { try e.backup(toDirectoryPath: otherStore.path) }
        #expect(throws: StorageError.self) { try e.backup(toDirectoryPath: dir.path) }
        // A backup opened as a store and written to is no longer replaced.
        _ = try e.backup(toDirectoryPath: backup.path)
        let opened = try Engine.open(directory: backup.path, options: .testing())
        try opened.put("changed", "1", in: opened.defaultKeySpace)
        opened.close()
        #expect {
            try e.backup(toDirectoryPath: backup.path)
        } throws: { error in
            guard case StorageError.destinationInUse(_, let reason)? = error as? StorageError else { return false }
            return reason.contains("changed since")
        }
        #expect(try Self.contents(ofStoreAt: backup.path).contains("default/changed=1"))
        // A damaged marker.
        let damaged = TemporaryDirectory()
        _ = try e.backup(toDirectoryPath: damaged.path)
        let marker = damaged.path + "/BACKUP"
        var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: marker)))
        bytes[20] ^= 1
        try Data(bytes).write(to: URL(fileURLWithPath: marker))
        #expect(throws: StorageError.destinationInUse(path: damaged.path, reason: "its BACKUP file is damaged")) {
            try e.backup(toDirectoryPath: damaged.path)
        }
    }

    @Test func cancelledBackupLeavesNothingThatOpensAndKeepsAnEarlierOne() throws {
        let dir = TemporaryDirectory(), fresh = TemporaryDirectory(), earlier = TemporaryDirectory()
        let e = try Engine.open(directory: dir.path, options: .testing(memtableBytes: 64 << 10))
        defer { e.close() }
        try Self.fill(e, rounds: 9)
        var cancelling = BackupOptions()
        cancelling.linksFiles = false
        let calls = Atomic<Int>(0)
        cancelling.progress = { p in
            #expect(p.bytesDone <= p.bytesTotal && p.filesDone <= p.filesTotal)
            return calls.add(1, ordering: .relaxed).newValue < 3
        }
        #expect(throws: StorageError.cancelled) { try e.backup(toDirectoryPath: fresh.path, options: cancelling) }
        var readOnly = EngineOptions.testing()
        readOnly.readOnly = true
        #expect(throws: StorageError.self) { try Engine.open(directory: fresh.path, options: readOnly) }
        var writable = EngineOptions.testing()
        writable.createIfMissing = true
        #expect(throws: StorageError.notAStore(path: fresh.path)) { try Engine.open(directory: fresh.path, options: writable) }
        // The next backup into it completes.
        _ = try e.backup(toDirectoryPath: fresh.path)
        #expect(try Self.contents(ofStoreAt: fresh.path) == Self.contents(e))

        let before = try Self.contents(e)
        var plain = BackupOptions()
        plain.linksFiles = false
        _ = try e.backup(toDirectoryPath: earlier.path, options: plain)
        try Self.fill(e, rounds: 6, start: 9)
        calls.store(0, ordering: .relaxed)
        #expect(throws: StorageError.cancelled) { try e.backup(toDirectoryPath: earlier.path, options: cancelling) }
        #expect(try Self.contents(ofStoreAt: earlier.path) == before)
        _ = try e.backup(toDirectoryPath: earlier.path, options: plain)
        #expect(try Self.contents(ofStoreAt: earlier.path) == Self.contents(e))
    }

    @Test func restoreChecksTheBackupAndWritesAPlainStore() throws {
        let dir = TemporaryDirectory(), backup = TemporaryDirectory(), target = TemporaryDirectory()
        let e = try Engine.open(directory: dir.path, options: .testing(memtableBytes: 64 << 10))
        defer { e.close() }
        try Self.fill(e, rounds: 9)
        _ = try e.backup(toDirectoryPath: backup.path)
        // Interrupted once, then run again into the same directory.
        var cancelling = BackupOptions()
        cancelling.progress = { $0.filesDone < 1 }
        #expect(throws: StorageError.cancelled) {
            try Engine.restoreBackup(at: backup.path, toDirectoryPath: target.path, options: cancelling)
        }
        try Engine.restoreBackup(at: backup.path, toDirectoryPath: target.path)
        #expect(try Self.contents(ofStoreAt: target.path) == Self.contents(e))
        #expect(!FileManager.default.fileExists(atPath: target.path + "/BACKUP"))
        #expect(throws: StorageError.self) { try e.backup(toDirectoryPath: target.path) }
        #expect(throws: StorageError.self) { try Engine.restoreBackup(at: backup.path, toDirectoryPath: target.path) }
        // A backup with a segment missing is refused before anything is written.
        let broken = TemporaryDirectory(), never = TemporaryDirectory()
        var copies = BackupOptions()
        copies.linksFiles = false
        _ = try e.backup(toDirectoryPath: broken.path, options: copies)
        let segment = try #require(try FileManager.default.contentsOfDirectory(atPath: broken.path).first { $0.hasSuffix(".seg") })
        try FileManager.default.removeItem(atPath: broken.path + "/" + segment)
        #expect {
            try Engine.restoreBackup(at: broken.path, toDirectoryPath: never.path)
        } throws: { error in
            guard case StorageError.corruption(let file, _, _)? = error as? StorageError else { return false }
            return file.contains(segment)
        }
        #expect(!FileManager.default.fileExists(atPath: never.path))
    }

    /// A read-only open cannot flush: its logs are copied, and the backup replays them.
    @Test func readOnlyStoreBacksUpItsLogs() throws {
        let dir = TemporaryDirectory(), backup = TemporaryDirectory()
        let e = try Engine.open(directory: dir.path, options: .testing(memtableBytes: 64 << 10))
        try Self.fill(e, rounds: 4)
        try e.put("unflushed", "1", in: e.defaultKeySpace)
        e.close()
        var o = EngineOptions.testing()
        o.readOnly = true
        let r = try Engine.open(directory: dir.path, options: o)
        let expected = try Self.contents(r)
        let report = try r.backup(toDirectoryPath: backup.path)
        r.close()
        #expect(report.filesCopied >= 1, "the log is copied")
        #expect(expected.contains("default/unflushed=1"))
        #expect(try Self.contents(ofStoreAt: backup.path) == expected)
        #expect(try Engine.verify(directory: backup.path).problems.isEmpty)
    }

    /// The machine stops at every operation of a backup (first into an empty directory, then
    /// into an earlier backup) and loses what was not synced (a power cut), or the process is
    /// killed there (everything written stays): the store reopens whole, and the
    /// destination opens as the earlier backup, as the new one, or (a first backup) not at all.
    @Test(arguments: [InMemoryFileSystem.CrashPolicy.dropUnsynced, .keepEverything])
    func crashAtEveryStepOfABackup(_ policy: InMemoryFileSystem.CrashPolicy) throws {
        for incremental in [false, true] {
            var point = 0
            while true {
                let memory = InMemoryFileSystem()
                let fs = FaultInjectingFileSystem(wrapping: memory)
                let e = try Engine.open(directory: "/db", options: .testing(fs, memtableBytes: 16 << 10, blockBytes: 512))
                try Self.fill(e, rounds: 6)
                var earlier: [String]?
                if incremental {
                    _ = try e.backup(toDirectoryPath: "/backup")
                    earlier = try Self.contents(e)
                    try Self.fill(e, rounds: 4, start: 6)
                }
                try e.flush()
                let expected = try Self.contents(e)
                fs.injectFault(.init(afterOperations: point, error: .io(operation: "power cut", path: "", errno: 5), haltsEverything: true))
                let finished = (try? e.backup(toDirectoryPath: "/backup")) != nil
                e.close()
                memory.simulateCrash(policy)
                #expect(try Self.contents(ofStoreAt: "/db", fileSystem: memory) == expected, "store after a cut at \(point)")
                let found = try? Self.contents(ofStoreAt: "/backup", fileSystem: memory)
                if finished {
                    #expect(found == expected, "finished backup, cut at \(point)")
                } else if let found {
                    #expect(found == expected || found == earlier, "cut at \(point): the backup is neither state")
                } else {
                    #expect(earlier == nil, "cut at \(point): the earlier backup no longer opens")
                }
                // The next backup into it works, whatever the cut left.
                let again = try Engine.open(directory: "/db", options: .testing(memory))
                _ = try again.backup(toDirectoryPath: "/backup")
                #expect(try Self.contents(ofStoreAt: "/backup", fileSystem: memory) == Self.contents(again))
                again.close()
                if finished { break }
                point += 1
            }
            #expect(point > 10)
        }
    }
}
