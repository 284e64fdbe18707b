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

/// `StoreOptions.archive` and `Store.restoreArchive`: the object graph as of a date.
@Suite struct StoreArchiveTests {
    @Test func restoreAtADateGivesTheGraphAsItWasThen() throws {
        let dir = TemporaryDirectory(), archive = TemporaryDirectory(), root = TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: root.path, withIntermediateDirectories: true)
        var options = StoreOptions.testing(memtableBytes: 16 << 10)
        var a = ArchiveOptions(target: DirectoryArchiveTarget(path: archive.path))
        a.interval = 0.01
        options.archive = a
        let store = try Store(directoryPath: dir.path, options: options)
        var checkpoints: [(date: Date, buyers: Int, purchases: Int)] = []
        for round in 1...4 {
            try store.runInTransaction {
                let buyer = Buyer(name: "b\(round)")
                try store.box(for: Buyer.self).put(buyer)
                try store.box(for: Purchase.self).put((0..<round).map { Purchase(summary: "p\(round)-\($0)", buyer: buyer) })
            }
            usleep(10_000)
            checkpoints.append((Date(), try store.box(for: Buyer.self).count(), try store.box(for: Purchase.self).count()))
            usleep(10_000)
        }
        try store.archiveNow()
        #expect(store.archiveStatus()?.consecutiveFailures == 0)
        store.close()
        for (i, c) in checkpoints.enumerated() {
            let path = root.path + "/at\(i)"
            try Store.restoreArchive(from: DirectoryArchiveTarget(path: archive.path), toDirectoryPath: path, at: c.date)
            let restored = try Store(directoryPath: path)
            defer { restored.close() }
            #expect(try restored.box(for: Buyer.self).count() == c.buyers)
            #expect(try restored.box(for: Purchase.self).count() == c.purchases)
            #expect(try restored.verifyGraph().problems.isEmpty)
            for b in try restored.box(for: Buyer.self).all() { #expect(b.purchases.count == Int(b.name.dropFirst())!) }
        }
    }
}
