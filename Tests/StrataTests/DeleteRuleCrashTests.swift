import Foundation
import Strata
import StrataTesting
import StrataTestSupport
import StrataTortureModel
import Testing

/// A cascade over 10,000 objects cut short (issue 55): killed at random moments of the removal,
/// and power cuts of every kind the in-memory file system simulates; after each, the store
/// holds all of the removal or none of it, and verifies clean.
@Suite struct DeleteRuleCrashTests {
    static let orders = 10_000

    @Test func killsDuringACascadeLeaveAllOrNothing() throws {
        let binary = try #require(builtExecutable(named: "strata-torture"), "strata-torture was not built next to the tests")
        let dir = TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: dir.path, withIntermediateDirectories: true)
        let report = try CascadeCrash.killTest(cycles: 12, directory: dir.path, orders: Self.orders, seed: 55, binary: binary)
        print("cascade kill test: \(report.cycles) kills, \(report.killsDuringWork) during the removal, \(report.afterWork) removed whole, \(report.beforeWork) kept whole, \(report.failures.count) failures")
        #expect(report.failures.isEmpty, "\(report.failures)")
        #expect(report.cycles == 12)
        #expect(report.killsDuringWork >= 3, "kills that landed inside the removal: \(report.killsDuringWork)")
    }

    @Test(arguments: [InMemoryFileSystem.CrashPolicy.dropUnsynced, .keepEverything, .dropUnsyncedDirectoryEntries]
          + (1...4).map { InMemoryFileSystem.CrashPolicy.keepRandomPrefixOfUnsynced(seed: $0) }
          + (1...3).map { InMemoryFileSystem.CrashPolicy.keepRandomUnsyncedPages(seed: $0, pageBytes: 4096, garbage: $0 == 2) }
          + [.garbageUnsyncedTail(seed: 7)])
    func aPowerCutDuringACascadeLeavesAllOrNothing(_ policy: InMemoryFileSystem.CrashPolicy) throws {
        let fs = InMemoryFileSystem()
        var options = StoreOptions()
        options.engine.fileSystem = fs
        var store = try Store(directoryPath: "/db", options: options)
        try CascadeCrash.build(store, orders: Self.orders)
        store.close()
        // The removal's commit is not synced: the power cut decides what of it reached the disk.
        options.durability = .none
        store = try Store(directoryPath: "/db", options: options)
        let customer = try #require(try store.box(for: CascadeCustomer.self).all().first)
        #expect(try store.box(for: CascadeCustomer.self).remove(customer))
        fs.simulateCrash(policy)
        options.durability = .sync
        let reopened = try Store(directoryPath: "/db", options: options)
        defer { reopened.close() }
        let outcome = try CascadeCrash.check(reopened, orders: Self.orders)
        guard case let .success(removed) = outcome else { Issue.record("\(policy): \(outcome)"); return }
        if policy == .keepEverything { #expect(removed, "everything written survives") }
        if policy == .dropUnsynced { #expect(!removed, "nothing unsynced survives") }
    }
}
