import Foundation
import Strata
import StrataStorage
import StrataTestSupport
import Testing

/// `strata replicate`: a read replica run from the command line (issue 56).
@Suite struct ReplicateCommandTests {
    static func archived(_ archive: String) -> StoreOptions {
        var options = StoreOptions()
        options.archive = ArchiveOptions(target: DirectoryArchiveTarget(path: archive))
        return options
    }

    static func tutors(_ directory: String) throws -> Int {
        try ToolRunner.run(["dump", directory, "Tutor"]).stdout.split(separator: "\n").count
    }

    /// It follows the primary while it runs, closes cleanly on SIGTERM, and goes on where it
    /// stopped at the next run.
    @Test func followsUntilTerminatedAndGoesOnWhereItStopped() throws {
        let dir = TemporaryDirectory(), root = TemporaryDirectory()
        let archive = root.path + "/archive", replica = root.path + "/replica"
        let store = try Store(directoryPath: dir.path, options: Self.archived(archive))
        defer { store.close() }
        try store.box(for: Tutor.self).put([Tutor(name: "Lovelace"), Tutor(name: "Hopper")])
        try store.archiveNow()

        let running = try ToolRunner.start(["replicate", archive, replica, "--poll-interval", "0.05", "--report-every", "0", "--json"])
        #expect(running.waitForLine { $0["event"] as? String == "opened" }, "\(running.stdout)")
        let opened = try #require(ToolRun(status: 0, stdout: running.stdout, stderr: "").jsonLines.first?["appliedSequence"] as? Int)
        try store.box(for: Tutor.self).put([Tutor(name: "Turing"), Tutor(name: "Church"), Tutor(name: "Gödel")])
        try store.archiveNow()
        let target = try #require(store.archiveStatus()).archivedSequence
        #expect(target > UInt64(opened))
        #expect(running.waitForLine { ($0["appliedSequence"] as? Int).map { UInt64($0) >= target } ?? false }, "\(running.stdout)")
        running.terminate()
        let ended = running.wait()
        #expect(ended.status == 0, "\(ended.stderr)")
        #expect(ended.jsonLines.last?["event"] as? String == "interrupted", "\(ended.stdout)")
        #expect(try Self.tutors(replica) == 5)

        try store.box(for: Tutor.self).put(Tutor(name: "Hamilton"))
        try store.archiveNow()
        let once = try ToolRunner.run(["replicate", archive, replica, "--once"])
        #expect(once.status == 0, "\(once.stderr)")
        #expect(once.stdout.contains("caught up: sequence \(try #require(store.archiveStatus()).archivedSequence)"), "\(once.stdout)")
        #expect(try Self.tutors(replica) == 6)
        // A directory that is a store but not a replica is refused, and left alone.
        let refused = try ToolRunner.run(["replicate", archive, dir.path, "--once"])
        #expect(refused.status == 2)
        #expect(refused.stderr.contains("not a replica"), "\(refused.stderr)")
    }

    /// The segments a replica flushes itself keep the layout a store writes: the tool opens a
    /// replica of a store of objects with its object layer's engine options (the id layout of
    /// objects, the filters of edges and indexes), as `compact` does; they are not stored.
    @Test func aReplicaOfAStoreOfObjectsFlushesInItsLayout() throws {
        let dir = TemporaryDirectory(), root = TemporaryDirectory()
        let archive = root.path + "/archive", replica = root.path + "/replica"
        let store = try Store(directoryPath: dir.path, options: Self.archived(archive))
        defer { store.close() }
        let box = store.box(for: Tutor.self)
        try box.put(Tutor(name: "Lovelace"))
        try store.archiveNow()
        #expect(try ToolRunner.run(["replicate", archive, replica, "--once"]).status == 0)
        // More than a memtable (4 MiB) shipped after the state the replica restored: the
        // replica flushes what it applies into segments of its own.
        let name = String(repeating: "n", count: 200)
        for chunk in 0..<6 { try box.put((0..<5_000).map { Tutor(name: "\(name)-\(chunk)-\($0)") }) }
        try store.archiveNow()
        let applied = try ToolRunner.run(["replicate", archive, replica, "--once"])
        #expect(applied.status == 0, "\(applied.stderr)")
        #expect(try Self.tutors(replica) == 30_001)
        let verified = try ToolRunner.run(["verify", replica, "--json"])
        #expect(verified.status == 0, "\(verified.stdout)")
        let storage = verified.jsonObject["storage"] as? [String: Any] ?? [:]
        #expect((storage["idBlocks"] as? Int ?? 0) > 0, "\(verified.stdout)")
    }

    /// A primary restored from an older backup lost commits the replica applied: the replica
    /// stops with the reason, and starts over from the archive only when asked.
    @Test func aReplicaThatCannotGoOnStopsOrIsRebuiltWhenAsked() throws {
        let dir = TemporaryDirectory(), root = TemporaryDirectory()
        let archive = root.path + "/archive", replica = root.path + "/replica", backup = root.path + "/backup"
        let restored = root.path + "/restored"
        let store = try Store(directoryPath: dir.path, options: Self.archived(archive))
        try store.box(for: Tutor.self).put([Tutor(name: "Lovelace"), Tutor(name: "Hopper")])
        _ = try store.backup(toDirectoryPath: backup)
        try store.box(for: Tutor.self).put([Tutor(name: "Turing"), Tutor(name: "Church")])
        try store.archiveNow()
        store.close()
        #expect(try ToolRunner.run(["replicate", archive, replica, "--once"]).status == 0)
        #expect(try Self.tutors(replica) == 4)

        _ = try Store.restoreBackup(at: backup, toDirectoryPath: restored)
        let second = try Store(directoryPath: restored, options: Self.archived(archive))
        try second.box(for: Tutor.self).put(Tutor(name: "Noether"))
        try second.archiveNow()
        second.close()

        let stopped = try ToolRunner.run(["replicate", archive, replica, "--once"])
        #expect(stopped.status == 2)
        #expect(stopped.stderr.contains("--rebuild"), "\(stopped.stderr)")
        #expect(try Self.tutors(replica) == 4)   // still serves what it applied
        let rebuilt = try ToolRunner.run(["replicate", archive, replica, "--once", "--rebuild", "--json"])
        #expect(rebuilt.status == 0, "\(rebuilt.stderr)")
        #expect(rebuilt.jsonLines.map { $0["event"] as? String ?? "" } == ["opened", "rebuilding", "rebuilt", "caught up"], "\(rebuilt.stdout)")
        #expect(try Self.tutors(replica) == 3)
    }
}
