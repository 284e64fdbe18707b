import Foundation
import Strata
import StrataStorage
import Synchronization
import Testing

/// `Store.backup`: a backup taken while transactions commit is one committed state of the
/// object graph, every relation whole, and opens as a store.
@Suite struct StoreBackupTests {
    @Test func backupUnderConcurrentTransactionsHoldsWholeRelations() throws {
        let dir = TemporaryDirectory(), root = TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: root.path, withIntermediateDirectories: true)
        let store = try Store(directoryPath: dir.path, options: .testing(memtableBytes: 32 << 10))
        defer { store.close() }
        let stop = Atomic<Bool>(false)
        let writer = Thread {
            var round = 0
            while !stop.load(ordering: .relaxed) {
                round += 1
                // One buyer and three purchases per transaction; every fifth round moves one
                // earlier purchase to the new buyer and removes another, so edges change too.
                try? store.runInTransaction {
                    let buyer = Buyer(name: "b\(round)")
                    try store.box(for: Buyer.self).put(buyer)
                    let purchases = (0..<3).map { Purchase(summary: "p\(round)-\($0)", buyer: buyer) }
                    try store.box(for: Purchase.self).put(purchases)
                    if round % 5 == 0, let moved = try store.box(for: Purchase.self).get(Id(round)) {
                        moved.buyer.target = buyer
                        try store.box(for: Purchase.self).put(moved)
                        try store.box(for: Purchase.self).remove(Id(round / 2))
                    }
                }
            }
        }
        writer.start()
        defer { stop.store(true, ordering: .relaxed) }
        var lastPurchases = -1
        for n in 0..<5 {
            usleep(30_000)
            let path = root.path + "/backup\(n)"
            let report = try store.backup(toDirectoryPath: path)
            #expect(report.segments > 0)
            let copy = try Store(directoryPath: path)
            defer { copy.close() }
            let verification = try copy.verifyGraph()
            #expect(verification.problems.isEmpty, "backup \(n): \(verification.problems)")
            let buyers = try copy.box(for: Buyer.self).all()
            let purchases = try copy.box(for: Purchase.self).all()
            // Each backlink lists exactly the purchases that point at the buyer.
            var pointing: [Id: Set<Id>] = [:]
            for p in purchases { if let b = p.buyer.targetId { pointing[b, default: []].insert(p.id) } }
            for b in buyers { #expect(Set(b.purchases.map(\.id)) == pointing[b.id] ?? [], "buyer \(b.id) in backup \(n)") }
            #expect(pointing.keys.allSatisfy { id in buyers.contains { $0.id == id } }, "no purchase points at a missing buyer")
            #expect(purchases.count >= lastPurchases)
            lastPurchases = purchases.count
        }
        stop.store(true, ordering: .relaxed)
        #expect(lastPurchases > 0)
    }

    @Test func backupOfAClosedStoreThrows() throws {
        let dir = TemporaryDirectory(), backup = TemporaryDirectory()
        let store = try Store(directoryPath: dir.path, options: .testing())
        store.close()
        #expect(throws: StrataError.storeClosed) { try store.backup(toDirectoryPath: backup.path) }
    }
}
