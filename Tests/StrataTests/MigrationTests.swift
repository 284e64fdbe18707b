import Foundation
import Strata
import StrataTesting
import StrataTestSupport
import StrataTortureModel
import Synchronization
import Testing

// One stored entity, "Account", as two versions of an app declare it.
@Entity(name: "Account") final class AccountV1 {
    var id: Id = 0
    var name = ""              // "Ada Lovelace"
    var balance: Int64 = 0     // whole euros
    var tier = ""              // "gold", "silver", or anything older builds wrote
    var visits: Double = 0
    init() {}
}

enum AccountTier: String { case gold, silver, basic }

@Entity(name: "Account") final class AccountV2 {
    var id: Id = 0
    var first = ""
    var last = ""
    var balance: Double = 0    // euros, now with cents
    var tier: AccountTier = .basic
    var visits: String = ""    // now a label
    init() {}
}

/// Migrations (issue 55): a versioned plan of steps over stored values, each once, each in a
/// transaction of its own with its version.
@Suite struct MigrationTests {
    static let plan: [MigrationStep] = [
        MigrationStep(version: 1, "split the name") { m in
            try m.addProperty("first", to: "Account", type: .string)
            try m.addProperty("last", to: "Account", type: .string)
            try m.updateObjects(of: "Account") { a in
                guard case let .string(full)? = a["name"] else { return }
                let parts = full.split(separator: " ", maxSplits: 1).map(String.init)
                a["first"] = .string(parts.first ?? "")
                a["last"] = .string(parts.count > 1 ? parts[1] : "")
            }
        },
        MigrationStep(version: 2, "balance with cents, tier as an enum, visits as text") { m in
            try m.changeType(of: "balance", in: "Account", to: .double)
            try m.convertToEnum("tier", in: "Account", to: AccountTier.self, fallback: .basic)
            try m.changeType(of: "visits", in: "Account", to: .string)
        },
    ]

    static func makeV1(_ path: String, options: StoreOptions = StoreOptions(), count: Int = 3) throws {
        let store = try Store(directoryPath: path, options: options)
        defer { store.close() }
        let accounts = (0..<count).map { i -> AccountV1 in
            let a = AccountV1()
            a.name = ["Ada Lovelace", "Grace Hopper", "Plato"][i % 3]
            a.balance = Int64(100 * (i + 1))
            a.tier = ["gold", "silver", "platinum"][i % 3]
            a.visits = Double(i) + 0.5
            return a
        }
        try store.box(for: AccountV1.self).put(accounts)
    }

    @Test func aPlanTakesTheStoreToTheNewTypes() throws {
        let dir = TemporaryDirectory()
        try Self.makeV1(dir.path)
        // Without the plan the new type is refused, as before.
        var store = try Store(directoryPath: dir.path)
        #expect(throws: StrataError.self) { try store.box(for: AccountV2.self).count() }
        store.close()

        let seen = Mutex<[MigrationProgress]>([])
        var options = StoreOptions()
        options.migrations = Self.plan
        options.migrationProgress = { p in seen.withLock { $0.append(p) } }
        store = try Store(directoryPath: dir.path, options: options)
        let accounts = try store.box(for: AccountV2.self).all()
        #expect(accounts.map(\.first) == ["Ada", "Grace", "Plato"])
        #expect(accounts.map(\.last) == ["Lovelace", "Hopper", ""])
        #expect(accounts.map(\.balance) == [100, 200, 300])
        #expect(accounts.map(\.tier) == [.gold, .silver, .basic])   // "platinum" was no case: the fallback
        #expect(accounts.map(\.visits) == ["0.5", "1.5", "2.5"])
        #expect(try store.verifyGraph().isClean)
        let phases = seen.withLock { $0 }.map { "\($0.version) \($0.phase) \($0.objectsWritten)" }
        #expect(phases == ["1 started 0", "1 finished 3", "2 started 0", "2 finished 9"])   // step 2 rewrites each object once per property
        store.close()
        // Each step ran once: a reopen runs none.
        seen.withLock { $0 = [] }
        store = try Store(directoryPath: dir.path, options: options)
        defer { store.close() }
        #expect(seen.withLock { $0 }.isEmpty)
        #expect(try store.box(for: AccountV2.self).count() == 3)
    }

    @Test func aStepThatThrowsLeavesTheStoreAtThePreviousVersion() throws {
        let dir = TemporaryDirectory()
        try Self.makeV1(dir.path)
        struct Refused: Error {}
        let ran = Mutex(0)
        var options = StoreOptions()
        options.migrations = [Self.plan[0], MigrationStep(version: 2, "refuses") { m in
            try m.changeType(of: "balance", in: "Account", to: .double)
            ran.withLock { $0 += 1 }
            throw Refused()
        }]
        #expect(throws: StrataError.migrationFailed(version: 2, name: "refuses", reason: "Refused()")) {
            try Store(directoryPath: dir.path, options: options)
        }
        // Step 1 committed; step 2 wrote nothing: a plan with the real step 2 goes on from there.
        options.migrations = Self.plan
        let seen = Mutex<[Int]>([])
        options.migrationProgress = { p in if p.phase == .finished { seen.withLock { $0.append(p.version) } } }
        let store = try Store(directoryPath: dir.path, options: options)
        defer { store.close() }
        #expect(seen.withLock { $0 } == [2])
        #expect(try store.box(for: AccountV2.self).all().map(\.balance) == [100, 200, 300])
        #expect(ran.withLock { $0 } == 1)
    }

    @Test func plansAreCheckedAndANewStoreStartsAtTheLastVersion() throws {
        let dir = TemporaryDirectory()
        var options = StoreOptions()
        let ran = Mutex(0)
        options.migrations = [MigrationStep(version: 1) { _ in ran.withLock { $0 += 1 } }]
        var store = try Store(directoryPath: dir.path, options: options)
        #expect(ran.withLock { $0 } == 0)    // nothing stored: nothing to migrate
        _ = try store.box(for: AccountV2.self).count()
        store.close()
        // A newer app migrated it past what this plan knows: refused.
        options.migrations = []
        store = try Store(directoryPath: dir.path, options: options)   // no plan: no check
        store.close()
        options.migrations = [MigrationStep(version: 2) { _ in }, MigrationStep(version: 1) { _ in }]
        #expect(throws: StrataError.self) { try Store(directoryPath: dir.path, options: options) }
        let other = TemporaryDirectory()
        try Self.makeV1(other.path)
        options.migrations = [MigrationStep(version: 3) { _ in }]
        store = try Store(directoryPath: other.path, options: options)
        store.close()
        options.migrations = [MigrationStep(version: 2) { _ in }]
        #expect(throws: StrataError.schemaVersionTooNew(stored: 3, latest: 2)) { try Store(directoryPath: other.path, options: options) }
        // A value with no conversion fails its step, naming the object.
        let third = TemporaryDirectory()
        try Self.makeV1(third.path)
        options.migrations = [MigrationStep(version: 1) { m in try m.changeType(of: "name", in: "Account", to: .int64) }]
        #expect {
            try Store(directoryPath: third.path, options: options)
        } throws: { error in
            guard case let .migrationFailed(1, _, reason)? = error as? StrataError else { return false }
            return reason.contains("is not an integer")
        }
    }

    @Test func killsDuringAStepLeaveAllOrNothing() throws {
        let binary = try #require(builtExecutable(named: "strata-torture"), "strata-torture was not built next to the tests")
        let dir = TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: dir.path, withIntermediateDirectories: true)
        let report = try MigrationCrash.killTest(cycles: 8, directory: dir.path, accounts: 100_000, seed: 551, binary: binary)
        print("migration kill test: \(report.cycles) kills, \(report.killsDuringWork) during the step, \(report.afterWork) after it, \(report.beforeWork) before it, \(report.failures.count) failures")
        #expect(report.failures.isEmpty, "\(report.failures)")
        #expect(report.killsDuringWork >= 2, "kills that landed inside the step: \(report.killsDuringWork)")
    }

    /// A power cut in the middle of a step over 100,000 objects: the store opens at the version
    /// before it (and runs the step again) or after it, never between.
    @Test(arguments: [InMemoryFileSystem.CrashPolicy.dropUnsynced, .keepEverything]
          + (1...3).map { InMemoryFileSystem.CrashPolicy.keepRandomPrefixOfUnsynced(seed: $0) }
          + [.keepRandomUnsyncedPages(seed: 4, pageBytes: 4096, garbage: true)])
    func aPowerCutInAStepLeavesAllOrNothing(_ policy: InMemoryFileSystem.CrashPolicy) throws {
        let fs = InMemoryFileSystem()
        var options = StoreOptions()
        options.engine.fileSystem = fs
        try Self.makeV1("/db", options: options, count: 100_000)
        options.durability = .none   // the step's commit is not synced: the cut decides
        options.migrations = [Self.plan[1]]
        _ = try Store(directoryPath: "/db", options: options)
        fs.simulateCrash(policy)
        // Reopened without the plan: the stored schema says which side of the step it is.
        options.durability = .sync
        options.migrations = []
        let store = try Store(directoryPath: "/db", options: options)
        defer { store.close() }
        var balances: [StoredValue] = []
        try store.storedObjects(of: "Account") { o in balances.append(o["balance"] ?? .null); return true }
        #expect(balances.count == 100_000)
        let migrated = balances.allSatisfy { if case .double = $0 { true } else { false } }
        let untouched = balances.allSatisfy { if case .int = $0 { true } else { false } }
        #expect(migrated != untouched, "\(policy): some objects migrated, some not")
        if policy == .keepEverything { #expect(migrated) }
        if policy == .dropUnsynced { #expect(untouched) }
    }
}
