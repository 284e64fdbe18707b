import Foundation
@testable import Strata
import StrataStorage
import Testing

/// The bindings `box(for:)` finds without the catalog lock are the catalog's own, from any
/// thread at the first use of a type; types past the table's capacity are found in the catalog.
@Suite struct BindingTableTests {
    @Test func boxesMadeOnManyThreadsAtOnceShareTheCatalogsBindings() throws {
        let dir = TemporaryDirectory()
        let store = try Store(directoryPath: dir.path, options: .testing())
        defer { store.close() }
        let failures = LockedValue(0)
        DispatchQueue.concurrentPerform(iterations: 8) { i in
            do {
                // Every thread asks for the three types first in a different order.
                for k in 0..<3 {
                    switch (i + k) % 3 {
                    case 0: _ = try store.box(for: Customer.self).count()
                    case 1: _ = try store.box(for: Note.self).count()
                    default: _ = try store.box(for: Everything.self).count()
                    }
                }
            } catch {
                failures.withLock { $0 += 1 }
            }
        }
        #expect(failures.withLock { $0 } == 0)
        for type in [ObjectIdentifier(Customer.self), ObjectIdentifier(Note.self), ObjectIdentifier(Everything.self)] {
            let published = try #require(store.bindingTable.binding(for: type))
            let inCatalog = try #require(try store.catalog.withLock { $0.bindings[type] }?.get())
            #expect(published === inCatalog)
        }
        #expect(store.bindingTable.binding(for: ObjectIdentifier(Int.self)) == nil)
    }

    @Test func typesPastTheCapacityAreLeftToTheCatalog() throws {
        let dir = TemporaryDirectory()
        let store = try Store(directoryPath: dir.path, options: .testing())
        defer { store.close() }
        let customer = try store.binding(for: Customer.self).get()
        let note = try store.binding(for: Note.self).get()
        let table = BindingTable(capacity: 1)
        table.publish(customer, for: ObjectIdentifier(Customer.self))
        table.publish(note, for: ObjectIdentifier(Note.self))
        #expect(table.binding(for: ObjectIdentifier(Customer.self)) === customer)
        #expect(table.binding(for: ObjectIdentifier(Note.self)) == nil)
        // Through the store, past its own table or not, a box reads and writes.
        var n = Note(text: "kept")
        try store.box(for: Note.self).put(&n)
        #expect(try store.box(for: Note.self).get(n.id)?.text == "kept")
    }
}
