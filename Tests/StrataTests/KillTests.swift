import Foundation
import Strata
import StrataTortureModel
import Testing

/// RELIABILITY.md §1: SIGKILL a process running the graph workload at random moments, half of
/// them just after a flush or compaction began; after each kill the store must open, verify
/// clean and hold exactly a prefix of the workload that includes every acknowledged transaction.
@Suite struct KillTests {
    static var tortureBinary: String? { builtExecutable(named: "strata-torture") }

    @Test func fiftyKillsLoseNothingAcknowledgedAndLeaveNoHalfTransaction() throws {
        let binary = try #require(Self.tortureBinary, "strata-torture was not built next to the tests")
        let dir = TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: dir.path, withIntermediateDirectories: true)
        let report = try KillTest.run(cycles: 50, directory: dir.path, seed: 20_261_123, binary: binary)
        #expect(report.failures.isEmpty, "\(report.failures)")
        #expect(report.cycles == 50)
        #expect(report.killsDuringBackgroundWork * 4 >= report.cycles, "at least a quarter of the kills during a flush or compaction")
        #expect(report.acknowledgedTransactions > 500)
    }

    @Test func theCheckCatchesALostAcknowledgedTransaction() throws {
        let dir = TemporaryDirectory()
        let store = try GraphStoreDriver.open(dir.path)
        var model = GraphModel()
        for n in 1...30 { try GraphStoreDriver.runTransaction(Int64(n), seed: 5, store: store, model: &model) }
        store.close()
        #expect(try KillTest.check(store: dir.path, seed: 5, lastAcknowledged: 30).isEmpty)
        let lost = try KillTest.check(store: dir.path, seed: 5, lastAcknowledged: 32)
        #expect(lost.contains { $0.contains("transaction 32 was acknowledged, the store holds up to 30") })
        // A store that differs from the workload's prefix is caught as well.
        let other = try KillTest.check(store: dir.path, seed: 6, lastAcknowledged: 30)
        #expect(!other.isEmpty)
    }
}
