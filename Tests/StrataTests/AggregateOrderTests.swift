import Foundation
import Strata
import Testing

/// Aggregates give one answer whatever order the objects are visited in, and `min()`/`max()`
/// agree with `ordered(by:)` (strings by their UTF-8 bytes).
@Suite struct AggregateOrderTests {
    @Test(arguments: [[Int.max, 1, -1], [1, Int.max, -1], [-1, 1, Int.max], [Int.min, -1, 1]])
    func integerSumsDoNotDependOnOrder(_ values: [Int]) throws {
        let dir = TemporaryDirectory()
        let store = try Store(directoryPath: dir.path, options: .testing())
        defer { store.close() }
        let box = store.box(for: QRow.self)
        for v in values {
            let r = QRow()
            r.qty = v
            try box.put(r)
        }
        let expected = values.contains(Int.min) ? Int64.min : Int64.max
        #expect(try box.query().build().property(QRow.qty).sum() == expected)
        for order in [SortDirection.ascending, .descending] {
            #expect(try box.query().ordered(by: QRow.qty, order).build().property(QRow.qty).sum() == expected)
        }
        #expect(try box.query().build().property(QRow.qty).average() == Double(expected) / 3)
        // A sum that really does not fit still throws.
        let more = QRow()
        more.qty = values.contains(Int.min) ? -1 : 1
        try box.put(more)
        #expect(throws: StrataError.self) { try box.query().build().property(QRow.qty).sum() }
    }

    @Test func floatingSumsAreCorrectlyRoundedInAnyOrder() throws {
        let dir = TemporaryDirectory()
        let store = try Store(directoryPath: dir.path, options: .testing())
        defer { store.close() }
        let box = store.box(for: QRow.self)
        for v in [1e16, 1.0, -1e16, 0.1, 0.2, -0.3] {
            let r = QRow()
            r.score = v
            try box.put(r)
        }
        let exact = 1.0 + (0.1 + 0.2 - 0.3)   // 1e16 and -1e16 cancel exactly
        for order in [SortDirection.ascending, .descending] {
            let sum = try box.query().ordered(by: QRow.score, order).build().property(QRow.score).sum()
            #expect(abs(sum - exact) < 1e-15, "\(order): \(sum)")
            #expect(sum == (try box.query().build().property(QRow.score).sum()))
        }
        let nan = QRow()
        nan.score = .nan
        try box.put(nan)
        #expect(try box.query().build().property(QRow.score).sum().isNaN)
    }

    @Test func stringMinAndMaxAreTheEndsOfTheOrdering() throws {
        let dir = TemporaryDirectory()
        let store = try Store(directoryPath: dir.path, options: .testing())
        defer { store.close() }
        let box = store.box(for: QRow.self)
        // "e\u{301}" (e and a combining accent) sorts after "f" by Swift's `<`, which compares
        // normalized characters, and before it by bytes.
        for label in ["f", "e\u{301}", "Z", "zz"] {
            let r = QRow()
            r.label = label
            try box.put(r)
        }
        let ordered = try box.query().ordered(by: QRow.label).build().property(QRow.label).findValues()
        let labels = try box.query().build().property(QRow.label)
        #expect(try labels.min() == ordered.first)
        #expect(try labels.max() == ordered.last)
        #expect(try labels.min() == "Z")
        #expect(ordered.firstIndex(of: "e\u{301}")! < ordered.firstIndex(of: "f")!)
    }
}
