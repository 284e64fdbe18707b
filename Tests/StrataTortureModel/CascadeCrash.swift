import Foundation
import Strata
import StrataTestSupport

/// A removal that cascades over thousands of objects, cut short (issue 55): the child builds a
/// customer with `orders` orders (committed), then removes her, which removes every order in
/// the same transaction; the parent kills it at a random moment of that removal. After each
/// cut the store must hold all of it or none of it, and verify clean.
public enum CascadeCrash {
    /// The child: builds the customer and her orders if the store has none, prints "working",
    /// removes her, prints "done".
    public static func runChild(store path: String, orders: Int, options: StoreOptions = StoreOptions()) throws {
        let store = try Store(directoryPath: path, options: options)
        try build(store, orders: orders)
        let customer = try store.box(for: CascadeCustomer.self).all().first!
        CrashChild.emit("working")
        try store.box(for: CascadeCustomer.self).remove(customer)
        CrashChild.emit("done")
        store.close()
    }

    /// A customer and `orders` orders of hers, in transactions of 1,000.
    public static func build(_ store: Store, orders: Int) throws {
        guard try store.box(for: CascadeCustomer.self).count() == 0 else { return }
        let customer = CascadeCustomer()
        customer.name = "Ada"
        try store.box(for: CascadeCustomer.self).put(customer)
        for chunk in stride(from: 0, to: orders, by: 1_000) {
            try store.box(for: CascadeOrder.self).put((chunk..<min(chunk + 1_000, orders)).map { i in
                let o = CascadeOrder()
                o.amount = Int64(i)
                o.customer.target = customer
                return o
            })
        }
    }

    /// What a store holds after a cut: `true` if the removal happened (no customer, no order),
    /// `false` if not (the customer and all `orders` orders, each hers); a problem otherwise.
    public static func check(_ store: Store, orders: Int) throws -> Result<Bool, CheckFailure> {
        let customers = try store.box(for: CascadeCustomer.self).all()
        let stored = try store.box(for: CascadeOrder.self).all()
        let verification = try store.verifyGraph()
        guard verification.isClean else { return .failure(CheckFailure("verifyGraph: \(verification.problems.prefix(3))")) }
        if customers.isEmpty && stored.isEmpty { return .success(true) }
        // The index entries went (or stayed) with their objects.
        let indexed = try store.box(for: CascadeOrder.self).query({ CascadeOrder.amount >= 0 }).build().count()
        guard customers.count == 1, stored.count == orders, indexed == orders,
              stored.allSatisfy({ $0.customer.targetId == customers[0].id }) else {
            return .failure(CheckFailure("half a cascade: \(customers.count) customers, \(stored.count) orders of \(orders)"))
        }
        return .success(false)
    }

    public struct CheckFailure: Error, CustomStringConvertible {
        public var description: String
        public init(_ description: String) { self.description = description }
    }

    public struct Report: Sendable {
        public var cycles = 0
        /// Cuts after which the removal was whole, and after which it had not happened.
        public var removed = 0
        public var kept = 0
        /// Kills that landed after "removing" and before "removed".
        public var killsDuringRemoval = 0
        public var failures: [String] = []
    }

    /// Kills the child (`strata-torture cascade DIR N`) `cycles` times, each at a random moment
    /// between its "working" and a little past how long a removal took uncut.
    public static func killTest(cycles: Int, directory: String, orders: Int, seed: UInt64, binary: String) throws -> Report {
        var report = Report()
        var rng = SplitMix64(state: seed)
        // One uncut run: how long the removal takes.
        let timing = try CrashChild.run(binary: binary, arguments: ["cascade", directory + "/timing", String(orders)], killAfter: nil)
        let removal = max(0.005, timing.workSeconds ?? 0.2)
        for cycle in 0..<cycles {
            let path = "\(directory)/store-\(cycle)"
            let delay = removal * 1.2 * Double(rng.next() % 1_000) / 1_000
            let outcome = try CrashChild.run(binary: binary, arguments: ["cascade", path, String(orders)], killAfter: delay)
            report.cycles += 1
            if outcome.killedDuringWork { report.killsDuringRemoval += 1 }
            let store = try Store(directoryPath: path)
            switch try check(store, orders: orders) {
            case .success(true): report.removed += 1
            case .success(false): report.kept += 1
            case let .failure(problem): report.failures.append("cycle \(cycle) (kill \(delay) s into the removal): \(problem)")
            }
            store.close()
            try? FileManager.default.removeItem(atPath: path)
        }
        return report
    }
}
