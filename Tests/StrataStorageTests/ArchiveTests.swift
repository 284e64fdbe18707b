import Foundation
import Synchronization
import Testing
@testable import StrataStorage
import StrataTesting

/// Continuous archives and point-in-time restore (SPEC.md §3.3).
@Suite struct ArchiveTests {
    /// A target that fails every call while `failing` is set (an unreachable server, a full disk).
    final class FlakyTarget: ArchiveTarget {
        let wrapped: any ArchiveTarget
        let failing = Atomic<Bool>(false)
        let failures = Atomic<Int>(0)
        init(_ wrapped: any ArchiveTarget) { self.wrapped = wrapped }
        func check() throws {
            if failing.load(ordering: .relaxed) {
                failures.add(1, ordering: .relaxed)
                throw StorageError.io(operation: "archive put", path: "flaky", errno: 5)
            }
        }
        func put(_ name: String, _ bytes: [UInt8]) throws { try check(); try wrapped.put(name, bytes) }
        func get(_ name: String) throws -> [UInt8] { try wrapped.get(name) }
        func list() throws -> [String] { try check(); return try wrapped.list() }
        func delete(_ name: String) throws { try check(); try wrapped.delete(name) }
    }

    /// A random workload over two key spaces; returns the model after each commit, by sequence.
    static func workload(_ e: Engine, commits: Int, seed: UInt64, model: inout [String: String],
                         history: inout [UInt64: [String: String]], flushEvery: Int = 25) throws {
        var rng = SplitMix64(state: seed)
        let other = try e.keySpace(named: "other")
        for i in 0..<commits {
            var b = WriteBatch()
            for _ in 0..<(1 + Int(rng.next() % 4)) {
                let space = rng.next() % 2 == 0 ? e.defaultKeySpace : other
                let k = "k\(rng.next() % 60)"
                if rng.next() % 5 == 0 {
                    b.delete(bytes(k), in: space)
                    model["\(space.name)/\(k)"] = nil
                } else {
                    let v = "v\(i)-\(rng.next() % 1000)" + String(repeating: "x", count: Int(rng.next() % 200))
                    b.put(bytes(k), bytes(v), in: space)
                    model["\(space.name)/\(k)"] = v
                }
            }
            try e.write(b)
            history[e.latestSequence] = model
            if i % flushEvery == flushEvery - 1 { try e.flush() }
        }
    }

    static func contents(ofStoreAt path: String, fileSystem: (any FileSystem)? = nil, encryptionKey: [UInt8]? = nil) throws -> [String: String] {
        var o = EngineOptions.testing(fileSystem)
        o.readOnly = true
        o.encryptionKey = encryptionKey
        let e = try Engine.open(directory: path, options: o)
        defer { e.close() }
        var out: [String: String] = [:]
        for ks in e.keySpaces { for entry in try e.scan(ks) { out["\(ks.name)/\(string(entry.key))"] = string(entry.value) } }
        return out
    }

    static func archived(_ target: any ArchiveTarget, interval: Double = 0.02, retention: ArchiveRetention = .states(1000)) -> EngineOptions {
        var o = EngineOptions.testing(memtableBytes: 16 << 10, blockBytes: 1024, targetSegmentBytes: 16 << 10)
        var a = ArchiveOptions(target: target)
        a.interval = interval
        a.retention = retention
        o.archive = a
        return o
    }

    @Test func restoreAtManyCommitsEqualsTheModelAtThatCommit() throws {
        let dir = TemporaryDirectory(), archive = TemporaryDirectory(), root = TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: root.path, withIntermediateDirectories: true)
        let target = DirectoryArchiveTarget(path: archive.path)
        var model: [String: String] = [:], history: [UInt64: [String: String]] = [0: [:]]
        // Two opens: two generations, the second starting from what the first left.
        for (open, seed) in [(0, UInt64(1)), (1, UInt64(2))] {
            let e = try Engine.open(directory: dir.path, options: Self.archived(target))
            try Self.workload(e, commits: 150, seed: seed, model: &model, history: &history)
            if open == 0 { e.close() } else {
                try e.archiveNow()
                let status = try #require(e.archiveStatus())
                #expect(status.archivedSequence == e.latestSequence && status.consecutiveFailures == 0 && status.objectsPut > 0)
                e.close()
            }
        }
        let sequences = history.keys.sorted()
        var rng = SplitMix64(state: 9)
        // Every third commit, and a few at random.
        var picks = stride(from: 0, to: sequences.count, by: 3).map { sequences[$0] }
        picks += (0..<8).map { _ in sequences[Int(rng.next() % UInt64(sequences.count))] }
        picks += [sequences[1], sequences.last!]
        for (i, s) in picks.enumerated() {
            let path = root.path + "/r\(i)"
            let report = try Engine.restoreArchive(from: target, toDirectoryPath: path, at: .sequence(s))
            #expect(report.sequence == s)
            #expect(try Self.contents(ofStoreAt: path) == history[s], "restore at sequence \(s)")
            #expect(try Engine.verify(directory: path).problems.isEmpty)
        }
        let latest = try Engine.restoreArchive(from: target, toDirectoryPath: root.path + "/latest")
        #expect(latest.sequence == sequences.last!)
        #expect(try Self.contents(ofStoreAt: root.path + "/latest") == model)
        // A restored store opens writable and goes on.
        let reopened = try Engine.open(directory: root.path + "/latest", options: .testing())
        try reopened.put("after", "restore", in: reopened.defaultKeySpace)
        reopened.close()
        #expect(throws: StorageError.self) { try Engine.restoreArchive(from: target, toDirectoryPath: root.path + "/latest") }
    }

    /// A restore owns its destination: re-run over an interrupted restore (its marker, no
    /// `CURRENT`), it starts from nothing the earlier attempt wrote (issue 54: the earlier
    /// attempt's later logs were replayed too, past the point asked for, and verify passed).
    @Test func aRestoreRerunOverAnInterruptedOneHoldsOnlyWhatItWrote() throws {
        let dir = TemporaryDirectory(), archive = TemporaryDirectory(), root = TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: root.path, withIntermediateDirectories: true)
        let target = DirectoryArchiveTarget(path: archive.path)
        let e = try Engine.open(directory: dir.path, options: Self.archived(target))
        var model: [String: String] = [:], history: [UInt64: [String: String]] = [0: [:]]
        try Self.workload(e, commits: 120, seed: 4, model: &model, history: &history, flushEvery: 1000)
        try e.archiveNow()
        e.close()
        let path = root.path + "/r"
        try Engine.restoreArchive(from: target, toDirectoryPath: path)
        // As an attempt cut short before CURRENT leaves it: the marker, logs, segments; and a
        // log of later commits under a number the rerun does not write.
        try FileManager.default.removeItem(atPath: path + "/CURRENT")
        #expect(FileManager.default.createFile(atPath: path + "/BACKUP", contents: Data()))
        let logs = try FileManager.default.contentsOfDirectory(atPath: path).filter { $0.hasSuffix(".wal") }.sorted()
        let last = try #require(logs.last)
        try FileManager.default.copyItem(atPath: path + "/" + last, toPath: path + "/999998.wal")
        let early = history.keys.sorted()[history.count / 3]
        let report = try Engine.restoreArchive(from: target, toDirectoryPath: path, at: .sequence(early))
        #expect(report.sequence == early)
        #expect(!FileManager.default.fileExists(atPath: path + "/999998.wal"), "a file the rerun did not write is still there")
        #expect(try Self.contents(ofStoreAt: path) == history[early])
        #expect(try Engine.verify(directory: path).problems.isEmpty)
    }

    @Test func restoreAtATimeGivesTheLastCommitBeforeIt() throws {
        let dir = TemporaryDirectory(), archive = TemporaryDirectory(), root = TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: root.path, withIntermediateDirectories: true)
        let target = DirectoryArchiveTarget(path: archive.path)
        let e = try Engine.open(directory: dir.path, options: Self.archived(target))
        var model: [String: String] = [:], history: [UInt64: [String: String]] = [:]
        var checkpoints: [(time: Double, model: [String: String], sequence: UInt64)] = []
        for round in 0..<6 {
            try Self.workload(e, commits: 20, seed: UInt64(round + 10), model: &model, history: &history)
            usleep(5_000)
            checkpoints.append((Date().timeIntervalSince1970, model, e.latestSequence))
            usleep(5_000)
        }
        try e.archiveNow()
        e.close()
        for (i, c) in checkpoints.enumerated() {
            let path = root.path + "/t\(i)"
            let report = try Engine.restoreArchive(from: target, toDirectoryPath: path, at: .time(secondsSince1970: c.time))
            #expect(report.sequence == c.sequence)
            #expect(report.commitTime.map { $0 <= c.time } == true)
            #expect(try Self.contents(ofStoreAt: path) == c.model, "restore at checkpoint \(i)")
        }
        #expect(throws: StorageError.self) {
            try Engine.restoreArchive(from: target, toDirectoryPath: root.path + "/before", at: .time(secondsSince1970: 1_000_000))
        }
    }

    @Test func aFailingTargetNeverStopsCommitsAndCatchesUp() throws {
        let dir = TemporaryDirectory(), archive = TemporaryDirectory(), restored = TemporaryDirectory()
        let target = FlakyTarget(DirectoryArchiveTarget(path: archive.path))
        let e = try Engine.open(directory: dir.path, options: Self.archived(target, interval: 0.01))
        var model: [String: String] = [:], history: [UInt64: [String: String]] = [:]
        try Self.workload(e, commits: 40, seed: 3, model: &model, history: &history)
        try e.archiveNow()
        target.failing.store(true, ordering: .relaxed)
        try Self.workload(e, commits: 120, seed: 4, model: &model, history: &history)
        // Writes went on; the archive reports the failures and lags.
        var status = try #require(e.archiveStatus())
        for _ in 0..<200 where status.consecutiveFailures == 0 {
            usleep(5_000)
            status = try #require(e.archiveStatus())
        }
        #expect(status.consecutiveFailures > 0 && status.lastError != nil)
        #expect(status.archivedSequence < e.latestSequence)
        #expect(throws: StorageError.self) { try e.archiveNow(timeout: 0.2) }
        // The logs the archive lacks are kept meanwhile.
        let wals = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasSuffix(".wal") }
        #expect(wals.count > 1)
        target.failing.store(false, ordering: .relaxed)
        try e.archiveNow(timeout: 60)
        #expect(e.archiveStatus()?.consecutiveFailures == 0)
        e.close()
        try Engine.restoreArchive(from: target, toDirectoryPath: restored.path)
        #expect(try Self.contents(ofStoreAt: restored.path) == model)
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasSuffix(".wal") }.count <= 2)
    }

    /// A target that hangs (a stalled network) holds up the archive, never a commit.
    @Test func aHangingTargetHoldsUpNoCommit() throws {
        let dir = TemporaryDirectory(), archive = TemporaryDirectory(), restored = TemporaryDirectory()
        let target = HangingTarget(DirectoryArchiveTarget(path: archive.path))
        let e = try Engine.open(directory: dir.path, options: Self.archived(target, interval: 0.01))
        var model: [String: String] = [:], history: [UInt64: [String: String]] = [:]
        try Self.workload(e, commits: 20, seed: 5, model: &model, history: &history)
        try e.archiveNow()
        target.hanging.store(true, ordering: .relaxed)
        // Commits, flushes and compactions all finish while a put hangs.
        try Self.workload(e, commits: 200, seed: 6, model: &model, history: &history)
        _ = try e.compact()
        #expect(try #require(e.archiveStatus()).archivedSequence < e.latestSequence)
        target.hanging.store(false, ordering: .relaxed)
        target.gate.signal()
        try e.archiveNow(timeout: 60)
        e.close()
        try Engine.restoreArchive(from: target, toDirectoryPath: restored.path)
        #expect(try Self.contents(ofStoreAt: restored.path) == model)
    }

    /// A target that hangs holds up `close()` for the close timeout, not forever: the store is
    /// released (it opens again at once), the listener hears what the archive lacks, and the
    /// abandoned thread touches no file of the store when the target wakes (issue 54).
    @Test func closeIsBoundedOnAHungTargetAndSaysWhatWasNotShipped() throws {
        let dir = TemporaryDirectory(), archive = TemporaryDirectory()
        let target = HangingTarget(DirectoryArchiveTarget(path: archive.path))
        let events = LockedValue<[EngineEvent]>([])
        var options = Self.archived(target, interval: 0.01)
        options.eventListener = { event in events.withLock { $0.append(event) } }
        let e = try Engine.open(directory: dir.path, options: options)
        try #require(e.archiver).closeTimeout = 0.5   // ArchiveOptions.closeTimeout is 30 s
        var model: [String: String] = [:], history: [UInt64: [String: String]] = [:]
        try Self.workload(e, commits: 20, seed: 5, model: &model, history: &history)
        try e.archiveNow()
        let shipped = e.latestSequence
        target.hanging.store(true, ordering: .relaxed)
        try Self.workload(e, commits: 50, seed: 6, model: &model, history: &history, flushEvery: 1000)
        let latest = e.latestSequence
        let start = Date()
        e.close()
        #expect(Date().timeIntervalSince(start) < 10, "close waited for the hung target")
        let unfinished = events.withLock { $0 }.compactMap { event -> (UInt64, UInt64)? in
            if case let .archiveUnfinished(archived, latest) = event { return (archived, latest) }
            return nil
        }
        #expect(unfinished.count == 1)
        #expect(unfinished.first.map { $0.0 >= shipped && $0.0 < latest && $0.1 == latest } == true, "\(unfinished)")
        // Released: the store opens at once, with everything committed, while the put still hangs.
        let again = try Engine.open(directory: dir.path, options: .testing())
        again.close()
        #expect(try Self.contents(ofStoreAt: dir.path) == model)
        // The target wakes: the abandoned thread ends without reading or removing store files.
        let filesBefore = try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted()
        target.hanging.store(false, ordering: .relaxed)
        target.gate.signal()
        Thread.sleep(forTimeInterval: 0.5)
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted() == filesBefore)
    }

    /// Flushes before the archiver's first shipment replace its pending state: the state the
    /// generation opened with must still go out, or the commits before the first flush could
    /// not be restored (found under load by the crash test).
    @Test func theOpeningStateIsShippedEvenWhenLaterOnesCameFirst() throws {
        final class SlowStart: ArchiveTarget {
            let wrapped: any ArchiveTarget
            let gate = DispatchSemaphore(value: 0)
            let opened = Atomic<Bool>(false)
            init(_ wrapped: any ArchiveTarget) { self.wrapped = wrapped }
            func put(_ name: String, _ bytes: [UInt8]) throws { try wrapped.put(name, bytes) }
            func get(_ name: String) throws -> [UInt8] { try wrapped.get(name) }
            func list() throws -> [String] {
                if !opened.exchange(true, ordering: .relaxed) { gate.wait() }
                return try wrapped.list()
            }
            func delete(_ name: String) throws { try wrapped.delete(name) }
        }
        let dir = TemporaryDirectory(), archive = TemporaryDirectory(), root = TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: root.path, withIntermediateDirectories: true)
        let target = SlowStart(DirectoryArchiveTarget(path: archive.path))
        let e = try Engine.open(directory: dir.path, options: Self.archived(target))
        var model: [String: String] = [:], history: [UInt64: [String: String]] = [0: [:]]
        try Self.workload(e, commits: 60, seed: 8, model: &model, history: &history, flushEvery: 10)
        target.gate.signal()
        try e.archiveNow()
        e.close()
        let first = try #require(history.keys.sorted().dropFirst().first)
        try Engine.restoreArchive(from: target, toDirectoryPath: root.path + "/first", at: .sequence(first))
        #expect(try Self.contents(ofStoreAt: root.path + "/first") == history[first])
    }

    /// An archived log record whose header claims sequences past the limit (`first` near 2^64,
    /// a valid CRC: crafted, not torn) is damage named as such, not an overflow trap (issue 54).
    @Test func aCraftedLogRecordPastTheSequenceLimitIsDamageNotATrap() throws {
        let dir = TemporaryDirectory(), archive = TemporaryDirectory(), root = TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: root.path, withIntermediateDirectories: true)
        let target = DirectoryArchiveTarget(path: archive.path)
        let e = try Engine.open(directory: dir.path, options: Self.archived(target))
        var model: [String: String] = [:], history: [UInt64: [String: String]] = [0: [:]]
        try Self.workload(e, commits: 20, seed: 7, model: &model, history: &history, flushEvery: 1000)
        try e.archiveNow()
        e.close()
        let last = try Self.lastLogPiece(in: target)
        let lastWal = last.wal
        // The last log's next piece, holding one record: sequence 2^64 − 2, 5 of them.
        var payload = ByteWriter()
        payload.appendFixed64(UInt64.max - 1)
        payload.appendFixed32(5)
        var framed = ByteWriter()
        payload.bytes.withUnsafeBytes { LogWriter.frame($0, into: &framed) }
        let piece = ArchivedLogPiece(generation: last.generation, wal: lastWal, previous: last.previous,
                                     offset: last.offset + UInt64(last.bytes.count), times: [], bytes: framed.bytes)
        try target.put(piece.objectName, piece.encode())
        #expect(throws: StorageError.corruption(file: piece.objectName, offset: 0, reason: "archived log damaged or missing")) {
            try Engine.restoreArchive(from: target, toDirectoryPath: root.path + "/a")
        }
        var lenient = ArchiveRestoreOptions()
        lenient.stopsAtDamage = true
        let report = try Engine.restoreArchive(from: target, toDirectoryPath: root.path + "/b", options: lenient)
        #expect(report.stoppedAt == piece.objectName)
        #expect(try Self.contents(ofStoreAt: root.path + "/b") == model)
    }

    /// Ages and instants that are not finite numbers are refused with a typed error (they
    /// trapped converting to microseconds, on the archiver's thread for a retention age); a
    /// finite one past any clock is "forever", not an overflow.
    @Test func agesAndInstantsThatAreNotNumbersAreRefusedAndForeverIsNoTrap() throws {
        let dir = TemporaryDirectory(), archive = TemporaryDirectory(), root = TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: root.path, withIntermediateDirectories: true)
        let target = DirectoryArchiveTarget(path: archive.path)
        for age in [Double.nan, -1, .infinity] {
            #expect(throws: StorageError.invalidOption(name: "archive.retention", reason: "\(age) is not a finite number of seconds ≥ 0")) {
                try Engine.open(directory: dir.path, options: Self.archived(target, retention: .seconds(age)))
            }
        }
        for interval in [Double.nan, -1, -Double.infinity] {
            var o = Self.archived(target)
            o.archive!.stateInterval = interval
            #expect(throws: StorageError.invalidOption(name: "archive.stateInterval", reason: "\(interval) is not a finite number of seconds ≥ 0")) {
                try Engine.open(directory: dir.path, options: o)
            }
        }
        #expect(try target.list().isEmpty)
        // An age of 10^300 seconds keeps every state; retention runs at each state shipment.
        let e = try Engine.open(directory: dir.path, options: Self.archived(target, retention: .seconds(1e300)))
        var model: [String: String] = [:], history: [UInt64: [String: String]] = [0: [:]]
        for round in 0..<3 {
            try Self.workload(e, commits: 10, seed: UInt64(round), model: &model, history: &history, flushEvery: 5)
            try e.archiveNow()
        }
        e.close()
        for seconds in [Double.nan, .infinity, -Double.infinity] {
            #expect(throws: StorageError.invalidOption(name: "at", reason: "\(seconds) is not a point in time")) {
                try Engine.restoreArchive(from: target, toDirectoryPath: root.path + "/never", at: .time(secondsSince1970: seconds))
            }
        }
        // An instant past any clock is the latest commit.
        _ = try Engine.restoreArchive(from: target, toDirectoryPath: root.path + "/future", at: .time(secondsSince1970: 1e300))
        #expect(try Self.contents(ofStoreAt: root.path + "/future") == model)
    }

    /// A put cut short leaves no temporary file: a failed rename removes it, and what a crash
    /// left is removed when the next archiver starts.
    @Test func putsCutShortLeaveNoTemporaryFiles() throws {
        let dir = TemporaryDirectory(), archive = TemporaryDirectory()
        // A failed rename: the put throws and its temporary file is gone.
        let faulty = FaultInjectingFileSystem(wrapping: PosixFileSystem())
        let failing = DirectoryArchiveTarget(path: archive.path, fileSystem: faulty)
        faulty.injectFault(.init(afterOperations: 0, operations: [.rename], error: .io(operation: "rename", path: "injected", errno: 5)))
        #expect(throws: StorageError.self) { try failing.put("seg-000000000001", [1, 2, 3]) }
        #expect(try FileManager.default.contentsOfDirectory(atPath: archive.path).isEmpty)
        // A crash's leftovers (written and never renamed) go when the archiver starts.
        for name in ["incoming-seg-000000000007", "incoming-0123456789abcdef-log-000000000003-00000000000000000000"] {
            #expect(FileManager.default.createFile(atPath: archive.path + "/" + name, contents: Data([9, 9, 9])))
        }
        let target = DirectoryArchiveTarget(path: archive.path)
        #expect(try target.list().isEmpty)
        let e = try Engine.open(directory: dir.path, options: Self.archived(target))
        var model: [String: String] = [:], history: [UInt64: [String: String]] = [0: [:]]
        try Self.workload(e, commits: 10, seed: 3, model: &model, history: &history)
        try e.archiveNow()
        e.close()
        let names = try FileManager.default.contentsOfDirectory(atPath: archive.path)
        #expect(!names.isEmpty && !names.contains { $0.hasPrefix("incoming-") })
    }

    @Test func aDamagedArchiveIsNamedOrRestoredUpToTheDamage() throws {
        let dir = TemporaryDirectory(), archive = TemporaryDirectory(), root = TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: root.path, withIntermediateDirectories: true)
        let target = DirectoryArchiveTarget(path: archive.path)
        let e = try Engine.open(directory: dir.path, options: Self.archived(target))
        var model: [String: String] = [:], history: [UInt64: [String: String]] = [0: [:]]
        for _ in 0..<4 {
            try Self.workload(e, commits: 30, seed: UInt64(history.count), model: &model, history: &history, flushEvery: 1000)
            try e.archiveNow()
        }
        e.close()
        // The last log piece of the newest log: damage one byte in its middle.
        let pieces = try target.list().filter { $0.contains("-log-") }.sorted()
        let victim = try #require(pieces.last)
        var bytes = try target.get(victim)
        bytes[bytes.count / 2] ^= 0x10
        try Data(bytes).write(to: URL(fileURLWithPath: archive.path + "/" + victim))
        #expect {
            try Engine.restoreArchive(from: target, toDirectoryPath: root.path + "/a")
        } throws: { error in
            guard case StorageError.corruption(let file, _, _)? = error as? StorageError else { return false }
            return file == victim
        }
        var lenient = ArchiveRestoreOptions()
        lenient.stopsAtDamage = true
        let report = try Engine.restoreArchive(from: target, toDirectoryPath: root.path + "/b", options: lenient)
        #expect(report.stoppedAt == victim)
        #expect(report.sequence < history.keys.max()!)
        #expect(try Self.contents(ofStoreAt: root.path + "/b") == history[report.sequence])
        // A missing segment is named too.
        let segment = try #require(try target.list().first { $0.contains("-seg-") })
        try target.delete(segment)
        #expect(throws: StorageError.self) { try Engine.restoreArchive(from: target, toDirectoryPath: root.path + "/c", options: lenient) }
    }

    @Test func retentionDeletesWhatNoKeptStateNeeds() throws {
        let archive = TemporaryDirectory()
        try Self.retentionDeletesWhatNoKeptStateNeeds(DirectoryArchiveTarget(path: archive.path))
    }

    /// The body of the retention tests: six rounds of commits and flushes, then a compaction,
    /// with `.states(2)`; two states are left, the segments they name and no other, and the
    /// latest restores while the first commits no longer do.
    static func retentionDeletesWhatNoKeptStateNeeds(_ target: any ArchiveTarget) throws {
        let dir = TemporaryDirectory(), root = TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: root.path, withIntermediateDirectories: true)
        let e = try Engine.open(directory: dir.path, options: Self.archived(target, retention: .states(2)))
        var model: [String: String] = [:], history: [UInt64: [String: String]] = [:]
        for round in 0..<6 {
            try Self.workload(e, commits: 30, seed: UInt64(round + 20), model: &model, history: &history, flushEvery: 1000)
            try e.flush()
            try e.archiveNow()
        }
        _ = try e.compact()
        try e.archiveNow()
        e.close()
        let names = try target.list()
        #expect(names.filter { $0.contains("-state-") }.count == 2)
        let states = try names.filter { $0.contains("-state-") }.map { try ArchivedState.decode(try target.get($0), name: $0) }
        let needed = Set(states.flatMap { s in s.segments.map { ArchiveObject.segment(store: s.generation.store, meta: $0).name } })
        #expect(Set(names.filter { $0.contains("-seg-") }) == needed)
        #expect(try Engine.restoreArchive(from: target, toDirectoryPath: root.path + "/latest").sequence == history.keys.max()!)
        #expect(try Self.contents(ofStoreAt: root.path + "/latest") == model)
        // The first commits are no longer reachable.
        #expect(throws: StorageError.self) {
            try Engine.restoreArchive(from: target, toDirectoryPath: root.path + "/old", at: .sequence(history.keys.min()!))
        }
    }

    /// The machine stops while the archive ships (a power cut: only what was synced survives;
    /// or a kill: everything written survives), on the store and on the archive alike. The store reopens whole, a new generation starts from
    /// it, and the archive restores every commit it held before the cut and the latest after.
    @Test(arguments: [InMemoryFileSystem.CrashPolicy.dropUnsynced, .keepEverything])
    func crashWhileArchiving(_ policy: InMemoryFileSystem.CrashPolicy) throws {
        try Self.crashWhileArchiving(policy, cuts: [3, 8, 15, 30, 60], every: 7) { memory, fs in
            (DirectoryArchiveTarget(path: "/archive", fileSystem: fs), DirectoryArchiveTarget(path: "/archive", fileSystem: memory))
        }
    }

    /// The body of the crash-while-archiving tests: for each cut, a store on an in-memory file
    /// system archives to `targets`' first target (which may share the store's faults), halts
    /// after `cut` operations, crashes by `policy`, reopens with the second, and checks every
    /// `every`-th commit archived before the cut and the latest after.
    static func crashWhileArchiving(_ policy: InMemoryFileSystem.CrashPolicy, cuts: [Int], every: UInt64,
                                    targets: (InMemoryFileSystem, FaultInjectingFileSystem) throws -> (any ArchiveTarget, any ArchiveTarget)) throws {
        for cut in cuts {
            let memory = InMemoryFileSystem()
            let fs = FaultInjectingFileSystem(wrapping: memory)
            let (writing, reading) = try targets(memory, fs)
            var options = Self.archived(writing)
            options.fileSystem = fs
            options.durability = .sync
            let e = try Engine.open(directory: "/db", options: options)
            var model: [String: String] = [:], history: [UInt64: [String: String]] = [:]
            try Self.workload(e, commits: 40, seed: UInt64(cut), model: &model, history: &history, flushEvery: 15)
            try e.archiveNow()
            let archivedBefore = try #require(e.archiveStatus()).archivedSequence
            fs.injectFault(.init(afterOperations: cut, error: .io(operation: "power cut", path: "", errno: 5), haltsEverything: true))
            try? Self.workload(e, commits: 40, seed: UInt64(cut) + 100, model: &model, history: &history, flushEvery: 15)
            e.close()
            memory.simulateCrash(policy)

            var reopenOptions = Self.archived(reading)
            reopenOptions.fileSystem = memory
            let again = try Engine.open(directory: "/db", options: reopenOptions)
            var after = [String: String]()
            for ks in again.keySpaces { for entry in try again.scan(ks) { after["\(ks.name)/\(string(entry.key))"] = string(entry.value) } }
            try again.archiveNow()
            again.close()
            // Every commit archived before the cut restores as it was.
            for s in history.keys.sorted() where s <= archivedBefore && s % every == 0 {
                let path = "/restore-\(s)"
                do {
                    try Engine.restoreArchive(from: reading, toDirectoryPath: path, at: .sequence(s), fileSystem: memory)
                } catch {
                    Issue.record("cut \(cut), sequence \(s), archived \(archivedBefore): \(error); archive: \(try reading.list().sorted())")
                    throw error
                }
                #expect(try Self.contents(ofStoreAt: path, fileSystem: memory) == history[s], "cut \(cut), sequence \(s)")
            }
            try Engine.restoreArchive(from: reading, toDirectoryPath: "/latest", fileSystem: memory)
            #expect(try Self.contents(ofStoreAt: "/latest", fileSystem: memory) == after, "cut \(cut): latest")
        }
    }

    /// The last piece of the highest-numbered WAL the archive holds (tests append crafted
    /// pieces after it).
    static func lastLogPiece(in target: any ArchiveTarget) throws -> ArchivedLogPiece {
        var pieces: [ArchivedLogPiece] = []
        for name in try target.list() {
            if case .log? = ArchiveObject(name: name) { pieces.append(try ArchivedLogPiece.decode(try target.get(name), name: name)) }
        }
        return try #require(pieces.max { ($0.wal, $0.offset) < ($1.wal, $1.offset) })
    }
}

/// A target whose puts wait on `gate` while `hanging` is set: a hung server.
final class HangingTarget: ArchiveTarget {
    let wrapped: any ArchiveTarget
    let gate = DispatchSemaphore(value: 0)
    let hanging = Atomic<Bool>(false)
    init(_ wrapped: any ArchiveTarget) { self.wrapped = wrapped }
    func put(_ name: String, _ bytes: [UInt8]) throws {
        if hanging.load(ordering: .relaxed) { gate.wait() }
        try wrapped.put(name, bytes)
    }
    func get(_ name: String) throws -> [UInt8] { try wrapped.get(name) }
    func list() throws -> [String] { try wrapped.list() }
    func delete(_ name: String) throws { try wrapped.delete(name) }
}
