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

    /// Which side of the step a store is on: true after it; a problem when objects are on both.
    public static func check(_ path: String, accounts: Int) throws -> Result<Bool, CrashChild.CheckFailure> {
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

    /// Kills the child (`strata-torture migrate DIR N`) `cycles` times inside the step's open;
    /// after each check, an open with the plan must finish the step.
    public static func killTest(cycles: Int, directory: String, accounts: Int, seed: UInt64, binary: String) throws -> CrashChild.Report {
        try CrashChild.killTest(cycles: cycles, directory: directory, seed: seed, binary: binary,
                                arguments: { ["migrate", $0, String(accounts)] },
                                check: { try check($0, accounts: accounts) }) { path in
            var options = StoreOptions()
            options.migrations = plan
            try Store(directoryPath: path, options: options).close()
            if case .success(false) = try check(path, accounts: accounts) {
                throw CrashChild.CheckFailure("the step did not run again at the next open")
            }
        }
    }
}
