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
    public static func check(_ store: Store, orders: Int) throws -> Result<Bool, CrashChild.CheckFailure> {
        let customers = try store.box(for: CascadeCustomer.self).all()
        let stored = try store.box(for: CascadeOrder.self).all()
        let verification = try store.verifyGraph()
        guard verification.isClean else { return .failure(CrashChild.CheckFailure("verifyGraph: \(verification.problems.prefix(3))")) }
        if customers.isEmpty && stored.isEmpty { return .success(true) }
        // The index entries went (or stayed) with their objects.
        let indexed = try store.box(for: CascadeOrder.self).query({ CascadeOrder.amount >= 0 }).build().count()
        guard customers.count == 1, stored.count == orders, indexed == orders,
              stored.allSatisfy({ $0.customer.targetId == customers[0].id }) else {
            return .failure(CrashChild.CheckFailure("half a cascade: \(customers.count) customers, \(stored.count) orders of \(orders)"))
        }
        return .success(false)
    }

    /// Kills the child (`strata-torture cascade DIR N`) `cycles` times inside its removal
    /// (``CrashChild/killTest(cycles:directory:seed:binary:arguments:check:after:)``).
    public static func killTest(cycles: Int, directory: String, orders: Int, seed: UInt64, binary: String) throws -> CrashChild.Report {
        try CrashChild.killTest(cycles: cycles, directory: directory, seed: seed, binary: binary,
                                arguments: { ["cascade", $0, String(orders)] }) { path in
            let store = try Store(directoryPath: path)
            defer { store.close() }
            return try check(store, orders: orders)
        }
    }
}
