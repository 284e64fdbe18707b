import Foundation
@testable import Strata
import StrataTortureModel
import Testing

/// `verifyTransaction()` checks only what a transaction wrote. Its promise: on a clean store, it
/// finds a problem exactly when a whole `verifyGraph()` of the transaction's view does. Shown by
/// damaging a transaction's overlay directly (deleting edges, objects and index entries, adding
/// stray entries, rewriting objects) the way a bug in the object layer would, and comparing the
/// two verdicts.
@Suite struct ChangeVerifierTests {
    private enum Damage: CaseIterable {
        case deleteEdge, deleteObject, deleteIndexEntry, strayReverseEntry, strayListTarget, swapObjectBytes, strayIndexEntry
    }

    private static func keys(_ space: WriteOverlay.Space, _ store: Store, _ t: Transaction) throws -> [[UInt8]] {
        guard let it = try t.makeIterator(space) else { return [] }
        var out: [[UInt8]] = []
        try it.seekToFirst()
        while it.isValid {
            out.append(Array(it.key))
            try it.next()
        }
        return out
    }

    private static func damage(_ kind: Damage, _ store: Store, _ t: Transaction, _ rng: inout SplitMix64) throws {
        let overlay = try #require(t.overlay)
        func objectKey(_ k: [UInt8]) -> ObjectKey {
            k.withUnsafeBytes { ObjectKey(entityId: ObjectKey.entityId(fromKey: $0), id: ObjectKey.id(fromKey: $0)) }
        }
        switch kind {
        case .deleteEdge:
            if let k = try keys(.edges, store, t).randomElement(using: &rng) { overlay.write(.edges, key: k, value: nil) }
        case .deleteObject:
            if let k = try keys(.objects, store, t).randomElement(using: &rng) {
                overlay.writeObject(objectKey(k), value: nil, committedPresent: true)
            }
        case .deleteIndexEntry:
            if let k = try keys(.indexes, store, t).randomElement(using: &rng) { overlay.write(.indexes, key: k, value: nil) }
        case .strayReverseEntry, .strayListTarget:
            let lists = try keys(.edges, store, t).compactMap { k in k.withUnsafeBytes { EdgeKey(bytes: $0) } }.filter { $0.kind == .toManyList }
            guard var list = lists.randomElement(using: &rng) else { return }
            let target = Id(1 + rng.below(40))
            if kind == .strayReverseEntry {
                overlay.write(.edges, key: EdgeKey(kind: .toManyBacklink, entityId: list.entityId, propertyId: list.propertyId, a: target, b: list.a).bytes, value: [])
            } else {
                var ids = try EdgeList.decode(try #require(try t.edgeValue(list)))
                ids.append(target)
                overlay.write(.edges, key: list.bytes, value: EdgeList.encode(ids))
                list.b = 0
            }
        case .swapObjectBytes:
            // Another object's bytes under this one's key: its to-one and index values change
            // without their edges and entries.
            let all = try keys(.objects, store, t)
            guard let a = all.randomElement(using: &rng) else { return }
            let same = all.filter { objectKey($0).entityId == objectKey(a).entityId }
            guard let b = same.randomElement(using: &rng), let bytes = try t.objectBytes(objectKey(b)) else { return }
            bytes.withUnsafeBytes { overlay.writeObject(objectKey(a), value: $0, committedPresent: true) }
        case .strayIndexEntry:
            if var k = try keys(.indexes, store, t).randomElement(using: &rng) {
                k[k.count - 1] ^= 1   // the entry of a neighbouring id
                overlay.write(.indexes, key: k, value: [])
            }
        }
    }

    @Test func findsAProblemExactlyWhenAFullVerifyDoes() throws {
        let dir = TemporaryDirectory()
        let store = try GraphStoreDriver.open(dir.path)
        defer { store.close() }
        var model = GraphModel()
        for number in 1...150 as ClosedRange<Int64> {
            try GraphStoreDriver.runTransaction(number, seed: 0xDA3A6E, store: store, model: &model)
        }
        #expect(try store.verifyGraph().problems.isEmpty)

        var rng = SplitMix64(state: 7)
        var damaged = 0, disagreements: [String] = []
        for trial in 0..<300 {
            struct Undo: Error {}
            let kinds = (0..<(1 + rng.below(2))).map { _ in Damage.allCases.randomElement(using: &rng)! }
            try? store.runInTransaction {
                let t = try #require(TransactionContext.current(for: store))
                // Sometimes a real operation first, so the damage lands among real writes.
                // (On a copy of the model: the trial is rolled back. An operation naming an id
                // the copy expected but a rolled-back trial used fails alone, as a savepoint.)
                if rng.below(2) == 0 {
                    var scratch = model
                    for op in scratch.nextTransaction(Int64(1_000 + trial), seed: 0xDA3A6E).operations {
                        try? GraphStoreDriver.apply(op, to: store)
                    }
                }
                for kind in kinds { try Self.damage(kind, store, t, &rng) }
                let full = try store.verifyGraph().problems, scoped = try store.verifyTransaction().problems
                if !full.isEmpty { damaged += 1 }
                if full.isEmpty != scoped.isEmpty {
                    disagreements.append("trial \(trial) \(kinds): full \(full.prefix(3)), scoped \(scoped.prefix(3))")
                }
                throw Undo()
            }
        }
        #expect(disagreements.isEmpty, "\(disagreements.prefix(5))")
        #expect(damaged > 150, "most damage must be visible to the full verify, or the test proves nothing")
        #expect(try store.verifyGraph().problems.isEmpty)
    }

    @Test func cleanTransactionsAreCleanAndOutsideOneItThrows() throws {
        let dir = TemporaryDirectory()
        let store = try Store(directoryPath: dir.path, options: .testing())
        defer { store.close() }
        #expect(throws: StrataError.readOnly) { try store.verifyTransaction() }
        let contacts = store.box(for: Contact.self), students = store.box(for: Student.self)
        try store.runInTransaction {
            try contacts.put(Contact(name: "c", address: Address(street: "s", city: "c")))
            let s = Student(name: "s")
            s.teachers.append(Teacher(name: "t"))
            try students.put(s)
            #expect(try store.verifyTransaction().problems.isEmpty)
            // A read-only transaction inside joins the write transaction.
            let clean = try store.runInReadOnlyTransaction { try store.verifyTransaction().problems.isEmpty }
            #expect(clean)
        }
        try store.runInReadOnlyTransaction {
            #expect(throws: StrataError.readOnly) { try store.verifyTransaction() }
        }
    }
}
