import Foundation
import Strata
import Testing

/// Seeded random transactions against Strata and against a dictionary model, compared inside
/// each transaction, after each commit or rollback, and after a reopen. Many objects per
/// transaction exercise the pending-write index's growth; small memtables make flushes and
/// compactions happen under the object layer.
@Suite struct ObjectModelTests {
    @Test(arguments: [1, 2, 3, 4])
    func randomTransactionsMatchTheModel(seed: UInt64) throws {
        let dir = TemporaryDirectory()
        var rng = SplitMix64(state: seed)
        var notes: [Id: String] = [:]
        var customers: [Id: String] = [:]
        var store = try Store(directoryPath: dir.path, options: .testing(memtableBytes: 16 << 10))

        func check(_ store: Store, _ notes: [Id: String], _ customers: [Id: String], _ context: String) throws {
            let n = try store.box(for: Note.self).all()
            #expect(n.map(\.id) == notes.keys.sorted(), "seed \(seed) \(context)")
            #expect(n.allSatisfy { notes[$0.id] == $0.text }, "seed \(seed) \(context)")
            let c = try store.box(for: Customer.self).all()
            #expect(c.map(\.id) == customers.keys.sorted(), "seed \(seed) \(context)")
            #expect(c.allSatisfy { customers[$0.id] == $0.name }, "seed \(seed) \(context)")
        }

        for round in 0..<40 {
            var txNotes = notes
            var txCustomers = customers
            let rollback = rng.below(5) == 0
            let noteBox = store.box(for: Note.self)
            let customerBox = store.box(for: Customer.self)
            do {
                try store.runInTransaction {
                    for step in 0..<(50 + rng.below(400)) {
                        switch rng.below(6) {
                        case 0, 1:
                            let text = "n\(round)-\(step)"
                            let id = try noteBox.put(Note(text: text))
                            txNotes[id] = text
                        case 2:
                            let name = "c\(round)-\(step)"
                            let id = try customerBox.put(Customer(name: name))
                            txCustomers[id] = name
                        case 3:
                            if let id = txNotes.keys.randomElement(using: &rng) {
                                let text = "u\(round)-\(step)"
                                try noteBox.put(Note(id: id, text: text))
                                txNotes[id] = text
                            }
                        case 4:
                            if let id = txNotes.keys.randomElement(using: &rng) {
                                #expect(try noteBox.remove(id))
                                txNotes[id] = nil
                            }
                        default:
                            let id = Id(1 + rng.below(Int(max(1, txCustomers.keys.max() ?? 1))))
                            #expect(try customerBox.get(id)?.name == txCustomers[id])
                            if rng.below(2) == 0, txCustomers[id] != nil {
                                #expect(try customerBox.remove(id))
                                txCustomers[id] = nil
                            }
                        }
                    }
                    #expect(try noteBox.count() == txNotes.count)
                    if rollback { throw Boom() }
                }
            } catch is Boom {}
            if !rollback {
                notes = txNotes
                customers = txCustomers
            }
            try check(store, notes, customers, "after round \(round)")
            if round % 10 == 9 {
                store.close()
                store = try Store(directoryPath: dir.path, options: .testing(memtableBytes: 16 << 10))
                try check(store, notes, customers, "after reopen in round \(round)")
            }
        }
    }
}
