import Foundation
import Strata
import Testing

/// Property queries, `findUnique` and `forEach`, each compared with a brute-force computation
/// over the same objects (QueryTests' random rows: nil values, huge unsigned values, removed
/// objects among them).
@Suite struct PropertyQueryTests {
    static func store(_ dir: TemporaryDirectory, seed: UInt64) throws -> (Store, Box<QRow>, [QRow]) {
        let store = try Store(directoryPath: dir.path, options: .testing())
        let box = store.box(for: QRow.self)
        var rng = SplitMix64(state: seed)
        var rows = (0..<400).map { _ in QueryTests.randomRow(&rng) }
        try box.put(&rows)
        // Removed objects must not count.
        let removed = Set(rows.indices.filter { $0 % 7 == 3 }.map { rows[$0].id })
        try box.remove(Array(removed))
        return (store, box, rows.filter { !removed.contains($0.id) })
    }

    @Test(arguments: [1, 2] as [UInt64])
    func aggregatesAndValueListsAgreeWithABruteForceComputation(seed: UInt64) throws {
        let dir = TemporaryDirectory()
        let (store, box, rows) = try Self.store(dir, seed: seed)
        defer { store.close() }
        for threshold in [-11, -3, 0, 4, 11] {
            let q = try box.query { QRow.qty > threshold }.build()
            let match = rows.filter { $0.qty > threshold }
            let qty = try q.property(QRow.qty)
            #expect(try qty.findValues() == match.map(\.qty))
            #expect(try qty.count() == match.count)
            #expect(try qty.sum() == Int64(match.map(\.qty).reduce(0, +)))
            #expect(try qty.min() == match.map(\.qty).min())
            #expect(try qty.max() == match.map(\.qty).max())
            #expect(try qty.average() == (match.isEmpty ? nil : Double(match.map(\.qty).reduce(0, +)) / Double(match.count)))
            var firstSeen: [Int] = []
            for v in match.map(\.qty) where !firstSeen.contains(v) { firstSeen.append(v) }
            #expect(try qty.distinct().findValues() == firstSeen)
            #expect(try qty.distinct().count() == firstSeen.count)

            // An optional property: nil values are left out of everything.
            let maybe = try q.property(QRow.maybe)
            let present = match.compactMap(\.maybe)
            #expect(try maybe.findValues() == present)
            #expect(try maybe.count() == present.count)
            #expect(try maybe.sum() == present.reduce(0, +))
            #expect(try maybe.min() == present.min())
            #expect(try maybe.average() == (present.isEmpty ? nil : Double(present.reduce(0, +)) / Double(present.count)))
            let notes = try q.property(QRow.note)
            #expect(try notes.findValues() == match.compactMap(\.note))
            #expect(try Set(notes.distinct().findValues()) == Set(match.compactMap(\.note)))

            // Floating point, and strings ordered by their bytes as queries compare them.
            #expect(try q.property(QRow.score).sum() == match.map(\.score).reduce(0, +))
            #expect(try q.property(QRow.ratio).max() == match.map(\.ratio).max())
            let labels = match.map(\.label)
            #expect(try q.property(QRow.label).min() == labels.min())
            #expect(try q.property(QRow.small).sum() == Int64(match.map { Int($0.small) }.reduce(0, +)))
        }
        // The query's order is the values' order.
        let ordered = try box.query { QRow.flag == true }.ordered(by: QRow.qty, .descending).build()
        let flagged = rows.filter(\.flag).sorted { $0.qty != $1.qty ? $0.qty > $1.qty : $0.id < $1.id }
        #expect(try ordered.property(QRow.qty).findValues() == flagged.map(\.qty))
        #expect(try ordered.property(QRow.label).findValues() == flagged.map(\.label))
    }

    @Test func aSumThatDoesNotFitThrowsInsteadOfTrapping() throws {
        let dir = TemporaryDirectory()
        let (store, box, rows) = try Self.store(dir, seed: 3)
        defer { store.close() }
        let huge = try box.query { QRow.wide > UInt64(Int64.max) }.build()
        if rows.contains(where: { $0.wide > UInt64(Int64.max) }) {
            #expect(throws: StrataError.self) { try huge.property(QRow.wide).sum() }
        }
        let small = try box.query { QRow.wide < 100 }.build()
        #expect(try small.property(QRow.wide).sum() == Int64(rows.filter { $0.wide < 100 }.map(\.wide).reduce(0, +)))
    }

    @Test func propertyQueriesSeeTheTransactionsOwnWrites() throws {
        let dir = TemporaryDirectory()
        let (store, box, rows) = try Self.store(dir, seed: 4)
        defer { store.close() }
        let q = try box.query { QRow.qty >= 0 }.build()
        let before = try q.property(QRow.qty).sum()
        struct RollBack: Error {}
        var inside: Int64 = 0
        do {
            try store.runInTransaction {
                let extra = QRow()
                extra.qty = 1_000
                try box.put(extra)
                inside = try q.property(QRow.qty).sum()
                throw RollBack()
            }
        } catch is RollBack {}
        #expect(inside == before + 1_000)
        #expect(try q.property(QRow.qty).sum() == before)
        #expect(before == Int64(rows.filter { $0.qty >= 0 }.map(\.qty).reduce(0, +)))
    }

    @Test func findUniqueAndForEachAgreeWithFind() throws {
        let dir = TemporaryDirectory()
        let (store, box, rows) = try Self.store(dir, seed: 5)
        defer { store.close() }
        for label in QueryTests.words {
            let q = try box.query { QRow.label == label && QRow.qty == 3 }.build()
            let expected = rows.filter { $0.label == label && $0.qty == 3 }
            if expected.count > 1 {
                do {
                    _ = try q.findUnique()
                    Issue.record("\(expected.count) matches of \(label), and findUnique did not throw")
                } catch {
                    #expect(error == .notUnique(entity: "QRow"))
                }
            } else {
                #expect(try q.findUnique()?.id == expected.first?.id)
            }
        }
        // forEach: every match in order, and an early stop after five.
        let q = try box.query { QRow.flag == true }.ordered(by: QRow.label).build()
        var seen: [Id] = []
        try q.forEach { row in
            seen.append(row.id)
            return true
        }
        #expect(seen == (try q.findIds()))
        var firstFive: [Id] = []
        try q.forEach { row in
            firstFive.append(row.id)
            return firstFive.count < 5
        }
        #expect(firstFive == Array(seen.prefix(5)))
        let unordered = try box.query { QRow.qty < 0 }.build()
        var ids: [Id] = []
        try unordered.forEach { ids.append($0.id); return true }
        #expect(ids == rows.filter { $0.qty < 0 }.map(\.id))
    }
}

@Suite struct BoxVisitorTests {
    @Test func getDictionaryAndForEachAgreeWithGetAndAll() throws {
        let dir = TemporaryDirectory()
        let (store, box, rows) = try PropertyQueryTests.store(dir, seed: 6)
        defer { store.close() }
        let ids = rows.map(\.id)
        let asked = ids.enumerated().filter { $0.offset % 3 == 0 }.map(\.element) + [999_999]
        let dictionary = try box.getDictionary(asked)
        #expect(dictionary.count == asked.count - 1)
        for id in asked.dropLast() { #expect(dictionary[id]?.label == rows.first { $0.id == id }?.label) }
        #expect(throws: StrataError.self) { try box.getDictionary([0]) }

        var visited: [Id] = []
        try box.forEach { visited.append($0.id); return true }
        #expect(visited == ids)
        var some: [Id] = []
        try box.forEach { some.append($0.id); return some.count < 10 }
        #expect(some == Array(ids.prefix(10)))
    }
}
