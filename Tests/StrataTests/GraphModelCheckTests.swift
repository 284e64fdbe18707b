import Foundation
import Strata
import StrataTortureModel
import Testing

/// RELIABILITY.md §10: 100,000 random graph operations (to-one sets and clears, tree puts,
/// to-many appends and removals, removals of objects at either end of a relation, nested
/// transactions rolled back to their savepoint, puts retried after a rollback, stale copies
/// edited after removals, cycles of new objects) against an in-memory model, compared after
/// every step (the touched objects, both directions of their relations), in full every 5,000
/// transactions, and in full after a reopen.
///
/// The graph's invariants are checked after every transaction: `verifyTransaction()` checks,
/// just before each commit, every invariant the transaction's writes can touch (with a clean
/// store before it, the same verdict as `verifyGraph()` after it), and a whole `verifyGraph()`
/// runs after each of the first 500 transactions and every 2,500th after that (it reads the
/// whole store, ~50,000 objects by the end: after every transaction it would take hours).
@Suite struct GraphModelCheckTests {
    @Test func aHundredThousandOperationsMatchTheModel() throws {
        let dir = TemporaryDirectory()
        let seed: UInt64 = 0x5EED_2026
        var store = try GraphStoreDriver.open(dir.path)
        var model = GraphModel()
        var operations = 0
        var number: Int64 = 0
        var mismatches: [String] = []
        var verified = 0
        while operations < 100_000 && mismatches.isEmpty {
            number += 1
            let touched = try GraphStoreDriver.runTransaction(number, seed: seed, store: store, model: &model) {
                mismatches += try store.verifyTransaction().problems.map { "verify of transaction \(number): \($0)" }
                verified += 1
            }
            operations += touched.operations
            if number <= 500 || number % 2_500 == 0 {
                mismatches += try store.verifyGraph().problems.map { "verify after transaction \(number): \($0)" }
            }
            mismatches += try GraphStoreDriver.differences(store, model, touched: touched).map { "after transaction \(number): \($0)" }
            if number % 5_000 == 0 {
                mismatches += try GraphStoreDriver.differences(store, model).map { "full check after \(number): \($0)" }
            }
        }
        #expect(mismatches.isEmpty, "\(mismatches.prefix(10))")
        #expect(operations >= 100_000)
        #expect(verified == number)
        mismatches += try GraphStoreDriver.differences(store, model)
        store.close()
        store = try GraphStoreDriver.open(dir.path)
        defer { store.close() }
        #expect(try GraphStoreDriver.differences(store, model).isEmpty, "after reopen")
        #expect(try store.verifyGraph().problems.isEmpty)
    }
}
