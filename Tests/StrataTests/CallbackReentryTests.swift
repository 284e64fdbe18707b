import Foundation
import Strata
import StrataStorage
import StrataTestSupport
import Testing

/// A store call from `indexProgress` (which runs while the store builds an index, holding its
/// write and catalog locks) is a typed error, not a deadlock (issue 39).
@Suite struct StoreCallbackReentryTests {
    final class Ref: @unchecked Sendable {
        var store: Store?
    }

    @Test(.timeLimit(.minutes(1)))
    func storeCallsFromIndexProgressAreRefusedNotDeadlocked() throws {
        let dir = TemporaryDirectory()
        do {
            let store = try Store(directoryPath: dir.path, options: .testing())
            try store.box(for: EvolvingPlain.self).put((0..<200).map { EvolvingPlain(n: $0 % 10, word: "w\($0)") })
            store.close()
        }
        let ref = Ref()
        let outcomes = Locked<Set<String>>([])
        var options = StoreOptions.testing()
        options.indexProgress = { _ in
            guard let s = ref.store else { return }
            for (name, call) in [("count", { _ = try s.box(for: Customer.self).count() }),
                                 ("put", { try s.box(for: Customer.self).put(Customer(name: "x")) }),
                                 ("transaction", { try s.runInTransaction {} }),
                                 ("read", { try s.runInReadOnlyTransaction {} })] as [(String, () throws -> Void)] {
                do {
                    try call()
                    outcomes.withLock { _ = $0.insert("\(name) ran") }
                } catch StrataError.storage(.calledFromCallback) {
                    outcomes.withLock { _ = $0.insert("\(name) refused") }
                } catch {
                    outcomes.withLock { _ = $0.insert("\(name) failed: \(error)") }
                }
            }
        }
        let store = try Store(directoryPath: dir.path, options: options)
        defer { store.close() }
        ref.store = store
        let box = store.box(for: EvolvingIndexed.self)
        #expect(try box.query { EvolvingIndexed.n == 3 }.build().count() == 20)
        #expect(outcomes.withLock { $0 } == ["count refused", "put refused", "transaction refused", "read refused"])
        // Outside the callback the store works, the entity the callback asked for included.
        try store.box(for: Customer.self).put(Customer(name: "after"))
        #expect(try store.box(for: Customer.self).count() == 1)
    }
}

/// Relation accessors that cannot throw say why a lazy load failed (issue 39).
@Suite struct RelationLoadErrorTests {
    @Test func aFailedLazyLoadIsVisibleOnTheRelation() throws {
        let dir = TemporaryDirectory()
        let store = try Store(directoryPath: dir.path, options: .testing())
        let ada = Buyer(name: "Ada")
        try store.box(for: Purchase.self).put([Purchase(summary: "a", buyer: ada), Purchase(summary: "b", buyer: ada)])
        let purchase = try #require(try store.box(for: Purchase.self).get(1))
        let buyer = try #require(try store.box(for: Buyer.self).get(ada.id))
        store.close()
        #expect(purchase.customerTargetAfterClose == nil)
        #expect(purchase.buyer.loadError == .storeClosed)
        #expect(Array(buyer.purchases).isEmpty)
        #expect(buyer.purchases.loadError == .storeClosed)
        #expect(throws: StrataError.storeClosed) { try buyer.purchases.load() }
        buyer.purchases.append(Purchase(summary: "c"))
        #expect(throws: StrataError.storeClosed) { try buyer.purchases.applyToDb() }
    }

    @Test func aLoadThatWorksClearsTheError() throws {
        let dir = TemporaryDirectory()
        let store = try Store(directoryPath: dir.path, options: .testing())
        defer { store.close() }
        let ada = Buyer(name: "Ada")
        try store.box(for: Purchase.self).put(Purchase(summary: "a", buyer: ada))
        let purchase = try #require(try store.box(for: Purchase.self).get(1))
        #expect(purchase.buyer.target?.name == "Ada")
        #expect(purchase.buyer.loadError == nil)
        let buyer = try #require(try store.box(for: Buyer.self).get(ada.id))
        #expect(buyer.purchases.count == 1 && buyer.purchases.loadError == nil)
    }
}

extension Purchase {
    var customerTargetAfterClose: Buyer? { buyer.target }
}
