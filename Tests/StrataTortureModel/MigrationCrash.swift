import Foundation
import Strata
import StrataTestSupport

/// A migration step over thousands of objects, cut short (issue 55): the child stores
/// `accounts` accounts (committed), then opens the store with a plan whose one step changes
/// every balance's type; the parent kills it at a random moment of that open. After each cut
/// every balance is of the old type or every one of the new; an open with the plan then
/// finishes the step.
public enum MigrationCrash {
    public static let plan = [MigrationStep(version: 1, "balance as a Double") { m in
        try m.changeType(of: "balance", in: "MigratingAccount", to: .double)
    }]

    /// The child: builds the accounts if the store has none, prints "working", opens the store
    /// with the plan, prints "done".
    public static func runChild(store path: String, accounts: Int) throws {
        let store = try Store(directoryPath: path)
        if try store.box(for: MigratingAccount.self).count() == 0 {
            for chunk in stride(from: 0, to: accounts, by: 10_000) {
                try store.box(for: MigratingAccount.self).put((chunk..<min(chunk + 10_000, accounts)).map { i in
                    let a = MigratingAccount()
                    a.balance = Int64(i)
                    return a
                })
            }
        }
        store.close()
        CrashChild.emit("working")
        var options = StoreOptions()
        options.migrations = plan
        try Store(directoryPath: path, options: options).close()
        CrashChild.emit("done")
    }

    public struct Report: Sendable {
        public var cycles = 0
        public var migrated = 0
        public var untouched = 0
        public var killsDuringStep = 0
        public var failures: [String] = []
    }

    /// Which side of the step a store is on: true after it; a problem when objects are on both.
    public static func check(_ path: String, accounts: Int) throws -> Result<Bool, CascadeCrash.CheckFailure> {
        let store = try Store(directoryPath: path)
        defer { store.close() }
        var ints = 0, doubles = 0, total = 0
        try store.storedObjects(of: "MigratingAccount") { o in
            total += 1
            switch o["balance"] {
            case .int?, .uint?: ints += 1
            case .double?: doubles += 1
            default: break   // 0 stored as absent reads as nil either way
            }
            return true
        }
        guard total == accounts else { return .failure(.init("\(total) accounts of \(accounts)")) }
        guard ints == 0 || doubles == 0 else { return .failure(.init("half a step: \(ints) old balances, \(doubles) new")) }
        return .success(doubles > 0)
    }

    public static func killTest(cycles: Int, directory: String, accounts: Int, seed: UInt64, binary: String) throws -> Report {
        var report = Report()
        var rng = SplitMix64(state: seed)
        let timing = try CrashChild.run(binary: binary, arguments: ["migrate", directory + "/timing", String(accounts)], killAfter: nil)
        let step = max(0.005, timing.workSeconds ?? 0.5)
        for cycle in 0..<cycles {
            let path = "\(directory)/store-\(cycle)"
            let delay = step * 1.2 * Double(rng.next() % 1_000) / 1_000
            let outcome = try CrashChild.run(binary: binary, arguments: ["migrate", path, String(accounts)], killAfter: delay)
            report.cycles += 1
            if outcome.killedDuringWork { report.killsDuringStep += 1 }
            switch try check(path, accounts: accounts) {
            case .success(true): report.migrated += 1
            case .success(false): report.untouched += 1
            case let .failure(problem): report.failures.append("cycle \(cycle) (kill \(delay) s into the step): \(problem)")
            }
            // The next open with the plan finishes what the cut left.
            var options = StoreOptions()
            options.migrations = plan
            try Store(directoryPath: path, options: options).close()
            if case .success(false) = try check(path, accounts: accounts) {
                report.failures.append("cycle \(cycle): the step did not run again at the next open")
            }
            try? FileManager.default.removeItem(atPath: path)
        }
        return report
    }
}
