import Foundation
import Synchronization
import Testing
@testable import StrataStorage
import StrataTesting

/// Read replicas that follow a store's archive (SPEC.md §3.4, issue 56).
@Suite struct ReplicaTests {
    typealias A = ArchiveTests

    static func contents(_ e: Engine) throws -> [String: String] {
        var out: [String: String] = [:]
        for ks in e.keySpaces { for entry in try e.scan(ks) { out["\(ks.name)/\(string(entry.key))"] = string(entry.value) } }
        return out
    }

    @Test func aReplicaFollowsThePrimaryCommitByCommitAndRefusesWrites() throws {
        let dir = TemporaryDirectory(), archive = TemporaryDirectory(), replicaDir = TemporaryDirectory()
        let target = DirectoryArchiveTarget(path: archive.path)
        let primary = try Engine.open(directory: dir.path, options: A.archived(target))
        var model: [String: String] = [:], history: [UInt64: [String: String]] = [0: [:]]
        try A.workload(primary, commits: 40, seed: 1, model: &model, history: &history, flushEvery: 15)
        try primary.archiveNow()
        let replica = try Engine.openReplica(following: target, directoryPath: replicaDir.path, options: .testing(), pollInterval: 0.02)
        #expect(replica.latestSequence == primary.latestSequence)
        #expect(try Self.contents(replica) == model)
        for round in 0..<4 {
            try A.workload(primary, commits: 30, seed: UInt64(2 + round), model: &model, history: &history, flushEvery: 12)
            try primary.archiveNow()
            try replica.replicaCatchUp()
            #expect(replica.latestSequence == primary.latestSequence, "round \(round)")
            #expect(try Self.contents(replica) == model, "round \(round)")
            let status = try #require(replica.replicaStatus())
            #expect(status.appliedSequence == primary.latestSequence && status.stoppedBecause == nil)
        }
        var b = WriteBatch()
        b.put(bytes("k"), bytes("v"), in: replica.defaultKeySpace)
        #expect(throws: StorageError.readOnly(path: replicaDir.path)) { try replica.write(b) }
        replica.close()
        primary.close()
    }

    /// Every state a replica passes through is the primary's at that sequence: a reader on the
    /// replica never sees part of a transaction.
    @Test func everyStateAReplicaShowsIsThePrimarysAtThatSequence() throws {
        let archive = TemporaryDirectory()
        try Self.everyStateAReplicaShowsIsThePrimarysAtThatSequence(DirectoryArchiveTarget(path: archive.path))
    }

    /// The body of the test above, also run against an S3 server (S3ArchiveTargetTests).
    static func everyStateAReplicaShowsIsThePrimarysAtThatSequence(_ target: any ArchiveTarget, pollInterval: Double = 0.005) throws {
        let dir = TemporaryDirectory(), replicaDir = TemporaryDirectory()
        let primary = try Engine.open(directory: dir.path, options: A.archived(target, interval: 0.01))
        var model: [String: String] = [:], history: [UInt64: [String: String]] = [0: [:]]
        try primary.archiveNow()
        let replica = try Engine.openReplica(following: target, directoryPath: replicaDir.path, options: .testing(), pollInterval: pollInterval)
        // A reader samples the replica while the primary writes; each sample is compared with
        // the primary's model at its sequence afterwards.
        let samples = Mutex<[(UInt64, [String: String])]>([])
        let writing = Atomic<Bool>(true)
        let reader = Thread {
            while writing.load(ordering: .acquiring) {
                guard let snapshot = try? replica.snapshot() else { break }
                var state: [String: String] = [:]
                for ks in replica.keySpaces {
                    for entry in (try? replica.scan(ks, snapshot: snapshot)) ?? [] { state["\(ks.name)/\(string(entry.key))"] = string(entry.value) }
                }
                samples.withLock { $0.append((snapshot.sequence, state)) }
                usleep(3_000)
            }
        }
        reader.start()
        try A.workload(primary, commits: 300, seed: 9, model: &model, history: &history, flushEvery: 40)
        try primary.archiveNow()
        try replica.replicaCatchUp()
        writing.store(false, ordering: .releasing)
        while reader.isExecuting { usleep(1_000) }
        let taken = samples.withLock { $0 }
        for (sequence, state) in taken {
            #expect(state == history[sequence], "sequence \(sequence)")
        }
        let seen = Set(taken.map(\.0)).count
        try primary.archiveNow()
        try replica.replicaCatchUp()
        #expect(try Self.contents(replica) == model)
        #expect(seen >= 3, "\(seen) distinct states seen")
        replica.close()
        primary.close()
    }

    /// A replica reopened goes on where it stopped; a primary reopened (its next generation) is
    /// followed.
    @Test func aReplicaReopensWhereItStoppedAndFollowsTheNextGeneration() throws {
        let archive = TemporaryDirectory()
        try Self.aReplicaReopensWhereItStoppedAndFollowsTheNextGeneration(DirectoryArchiveTarget(path: archive.path))
    }

    /// The body of the test above, also run against an S3 server (S3ArchiveTargetTests).
    static func aReplicaReopensWhereItStoppedAndFollowsTheNextGeneration(_ target: any ArchiveTarget) throws {
        let dir = TemporaryDirectory(), replicaDir = TemporaryDirectory()
        var model: [String: String] = [:], history: [UInt64: [String: String]] = [0: [:]]
        var primary = try Engine.open(directory: dir.path, options: A.archived(target))
        try A.workload(primary, commits: 30, seed: 20, model: &model, history: &history, flushEvery: 10)
        try primary.archiveNow()
        var replica = try Engine.openReplica(following: target, directoryPath: replicaDir.path, options: .testing(), pollInterval: 0.02)
        replica.close()
        try A.workload(primary, commits: 30, seed: 21, model: &model, history: &history, flushEvery: 10)
        try primary.archiveNow()
        replica = try Engine.openReplica(following: target, directoryPath: replicaDir.path, options: .testing(), pollInterval: 0.02)
        try replica.replicaCatchUp()
        #expect(try Self.contents(replica) == model)
        // The primary closes and opens again: a new generation.
        primary.close()
        primary = try Engine.open(directory: dir.path, options: A.archived(target))
        try A.workload(primary, commits: 30, seed: 22, model: &model, history: &history, flushEvery: 10)
        try primary.archiveNow()
        try replica.replicaCatchUp()
        try replica.replicaCatchUp()
        #expect(replica.replicaStatus()?.generationOrdinal == 2)
        #expect(replica.latestSequence == primary.latestSequence)
        #expect(try Self.contents(replica) == model)
        replica.close()
        primary.close()
    }

    /// A WAL missing from the archive stops the replica with the reason; it still serves what it
    /// applied.
    @Test func aGapInTheArchiveStopsTheReplica() throws {
        let dir = TemporaryDirectory(), archive = TemporaryDirectory(), replicaDir = TemporaryDirectory()
        let target = DirectoryArchiveTarget(path: archive.path)
        var model: [String: String] = [:], history: [UInt64: [String: String]] = [0: [:]]
        let primary = try Engine.open(directory: dir.path, options: A.archived(target))
        try A.workload(primary, commits: 20, seed: 30, model: &model, history: &history, flushEvery: 1000)
        try primary.archiveNow()
        let replica = try Engine.openReplica(following: target, directoryPath: replicaDir.path, options: .testing(), pollInterval: 3600)
        let applied = try Self.contents(replica)
        var wals: [UInt64] = []
        for round in 0..<3 {
            wals.append(primary.commitLock.withLock { primary.walNumber })
            try A.workload(primary, commits: 20, seed: UInt64(31 + round), model: &model, history: &history, flushEvery: 1000)
            try primary.flush()
        }
        try primary.archiveNow()
        for name in try target.list() {
            if case let .log(_, w, _)? = ArchiveObject(name: name), w == wals[1] { try target.delete(name) }
        }
        #expect(throws: StorageError.self) { try replica.replicaCatchUp() }
        let status = try #require(replica.replicaStatus())
        #expect(status.stoppedBecause?.contains("lacks a WAL") == true, "\(status)")
        #expect(try Self.contents(replica) != applied)   // it applied the WAL before the gap
        #expect(replica.latestSequence < primary.latestSequence)
        replica.close()
        primary.close()
    }
}
