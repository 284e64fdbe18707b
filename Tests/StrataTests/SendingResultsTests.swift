import Foundation
import Strata
import StrataTestSupport
import Testing

/// A view model on the main actor, as a SwiftUI app has: it receives objects read off the main
/// actor by `Store.read`, whose result is `sending`.
@MainActor
final class BuyersModel {
    var buyers: [Buyer] = []
    var purchaseCounts: [Int] = []

    func load(from store: Store) async throws {
        buyers = try await store.read { tx in try tx.box(for: Buyer.self).all() }
        // Lazy relations of the objects that crossed load here, on the main actor.
        purchaseCounts = buyers.map { $0.purchases.count }
    }

    func add(_ name: String, to store: Store) async throws {
        let made = try await store.write { tx in
            let b = Buyer(name: name)
            try tx.box(for: Buyer.self).put(b)
            return b
        }
        buyers.append(made)
    }
}

/// `Store.read` and `Store.write` return `sending` results: entities (not `Sendable`) read in a
/// background transaction reach the main actor, and their relations still load there.
@Suite struct SendingResultsTests {
    @Test @MainActor func objectsReadOffTheMainActorReachAMainActorModel() async throws {
        let dir = TemporaryDirectory()
        let store = try Store(directoryPath: dir.path, options: .testing())
        defer { store.close() }
        let ada = Buyer(name: "Ada"), alan = Buyer(name: "Alan")
        try store.box(for: Purchase.self).put([Purchase(summary: "a", buyer: ada), Purchase(summary: "b", buyer: ada),
                                               Purchase(summary: "c", buyer: alan)])
        let model = BuyersModel()
        try await model.load(from: store)
        #expect(model.buyers.map(\.name) == ["Ada", "Alan"])
        #expect(model.purchaseCounts == [2, 1])
        try await model.add("Grace", to: store)
        #expect(model.buyers.map(\.name) == ["Ada", "Alan", "Grace"])
        #expect(model.buyers.last?.id != 0)
        // The objects that crossed are ordinary objects: changed and put again from here.
        model.buyers[0].name = "Ada L."
        try store.box(for: Buyer.self).put(model.buyers[0])
        #expect(try store.box(for: Buyer.self).get(model.buyers[0].id)?.name == "Ada L.")
    }
}
