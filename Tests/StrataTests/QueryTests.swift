import Foundation
import Strata
import Testing

enum Tier: Int { case low = 0, mid = 1, high = 2 }

@Entity
final class QRow {
    var id: Id = 0
    var flag = false
    var small: Int8 = 0
    var qty = 0
    var wide: UInt64 = 0
    var ratio: Float = 0
    var score = 0.0
    var label = ""
    var when = Date(timeIntervalSinceReferenceDate: 0)
    var blob: [UInt8] = []
    var note: String? = nil
    var maybe: Int64? = nil
    var tier: Tier = .low
}

@Suite struct QueryTests {
    static let words = ["apple", "Apple", "APPLE pie", "banana", "band", "Bandana", "", "cherry", "über", "uber", "ab", "pineapple"]

    static func randomRow(_ rng: inout SplitMix64) -> QRow {
        let r = QRow()
        r.flag = rng.below(2) == 0
        r.small = Int8(Int(rng.below(11)) - 5)
        r.qty = Int(rng.below(21)) - 10
        r.wide = rng.below(4) == 0 ? UInt64.max - UInt64(rng.below(3)) : UInt64(rng.below(50))
        r.ratio = Float(Int(rng.below(9)) - 4) / 2
        r.score = Double(Int(rng.below(13)) - 6) * 0.25
        r.label = words[Int(rng.below(words.count))]
        r.when = Date(timeIntervalSinceReferenceDate: Double(rng.below(10) * 3600))
        r.blob = (0..<Int(rng.below(3))).map { _ in UInt8(rng.below(3)) }
        r.note = rng.below(3) == 0 ? nil : words[Int(rng.below(words.count))]
        r.maybe = rng.below(3) == 0 ? nil : Int64(rng.below(7)) - 3
        r.tier = Tier(rawValue: Int(rng.below(3)))!
        return r
    }

    /// Runs `condition` and compares its ids with a brute-force filter over the same objects.
    static func check(_ box: Box<QRow>, _ rows: [QRow], _ condition: QueryCondition<QRow>, _ label: String,
                      _ predicate: (QRow) -> Bool) throws {
        let expected = rows.filter(predicate).map(\.id)
        let q = try box.query { condition }.build()
        #expect(try q.findIds() == expected, "\(label)")
        #expect(try q.count() == expected.count, "\(label) count")
    }

    @Test(arguments: [1, 2, 3] as [UInt64])
    func everyConditionOnEveryTypeAgreesWithABruteForceFilter(seed: UInt64) throws {
        let dir = TemporaryDirectory()
        let store = try Store(directoryPath: dir.path, options: .testing())
        let box = store.box(for: QRow.self)
        var rng = SplitMix64(state: seed)
        var rows = (0..<300).map { _ in Self.randomRow(&rng) }
        try box.put(&rows)
        for _ in 0..<6 {
            let probe = Self.randomRow(&rng)
            let q = probe.qty, s = probe.small, w = probe.wide, d = probe.score, f = probe.ratio, l = probe.label, t = probe.when
            try Self.check(box, rows, QRow.qty == q, "qty == \(q)") { $0.qty == q }
            try Self.check(box, rows, QRow.qty != q, "qty != \(q)") { $0.qty != q }
            try Self.check(box, rows, QRow.qty < q, "qty < \(q)") { $0.qty < q }
            try Self.check(box, rows, QRow.qty <= q, "qty <= \(q)") { $0.qty <= q }
            try Self.check(box, rows, QRow.small > s, "small > \(s)") { $0.small > s }
            try Self.check(box, rows, QRow.small >= s, "small >= \(s)") { $0.small >= s }
            try Self.check(box, rows, QRow.wide > w, "wide > \(w)") { $0.wide > w }
            try Self.check(box, rows, QRow.wide.between(w / 2, w), "wide between") { $0.wide >= w / 2 && $0.wide <= w }
            try Self.check(box, rows, QRow.score.between(d, d + 0.5), "score between") { $0.score >= d && $0.score <= d + 0.5 }
            try Self.check(box, rows, QRow.ratio < f, "ratio < \(f)") { $0.ratio < f }
            try Self.check(box, rows, QRow.when >= t, "when >= \(t)") { $0.when >= t }
            try Self.check(box, rows, QRow.flag == probe.flag, "flag") { $0.flag == probe.flag }
            try Self.check(box, rows, QRow.blob == probe.blob, "blob ==") { $0.blob == probe.blob }
            try Self.check(box, rows, QRow.tier == probe.tier, "tier ==") { $0.tier == probe.tier }
            try Self.check(box, rows, QRow.tier > probe.tier, "tier >") { $0.tier.rawValue > probe.tier.rawValue }
            try Self.check(box, rows, QRow.qty.isIn([q, q + 1, -q]), "qty isIn") { [q, q + 1, -q].contains($0.qty) }
            try Self.check(box, rows, QRow.tier.isIn([.low, probe.tier]), "tier isIn") { [.low, probe.tier].contains($0.tier) }
            try Self.check(box, rows, QRow.label == l, "label == \(l)") { $0.label == l }
            try Self.check(box, rows, QRow.label < l, "label < \(l)") { Array($0.label.utf8).lexicographicallyPrecedes(l.utf8) }
            let part = String(l.prefix(3))
            try Self.check(box, rows, QRow.label.startsWith(part), "startsWith \(part)") { $0.label.utf8.starts(with: part.utf8) }
            try Self.check(box, rows, QRow.label.endsWith(part), "endsWith \(part)") { $0.label.utf8.reversed().starts(with: part.utf8.reversed()) }
            try Self.check(box, rows, QRow.label.contains(part), "contains \(part)") { part.isEmpty || $0.label.contains(part) }
            try Self.check(box, rows, QRow.label.startsWith(part, caseSensitive: false), "startsWith ci") { $0.label.lowercased().hasPrefix(part.lowercased()) }
            try Self.check(box, rows, QRow.label.contains(part, caseSensitive: false), "contains ci") { part.isEmpty || $0.label.lowercased().contains(part.lowercased()) }
            try Self.check(box, rows, QRow.label.isEqual(to: l, caseSensitive: false), "equal ci") { $0.label.lowercased() == l.lowercased() }
            try Self.check(box, rows, QRow.note.isNil(), "note isNil") { $0.note == nil }
            try Self.check(box, rows, QRow.note.isNotNil(), "note isNotNil") { $0.note != nil }
            try Self.check(box, rows, QRow.note == l, "note == \(l)") { $0.note == l }
            try Self.check(box, rows, QRow.note != l, "note != \(l)") { $0.note != l }
            try Self.check(box, rows, QRow.note.endsWith(part), "note endsWith") { $0.note.map { $0.utf8.reversed().starts(with: part.utf8.reversed()) } ?? false }
            let m = probe.maybe ?? 0
            try Self.check(box, rows, QRow.maybe == nil, "maybe == nil") { $0.maybe == nil }
            try Self.check(box, rows, QRow.maybe == m, "maybe == \(m)") { $0.maybe == m }
            try Self.check(box, rows, QRow.maybe > m, "maybe > \(m)") { $0.maybe.map { $0 > m } ?? false }
            try Self.check(box, rows, QRow.maybe.between(m - 1, m + 1), "maybe between") { $0.maybe.map { $0 >= m - 1 && $0 <= m + 1 } ?? false }
            try Self.check(box, rows, QRow.qty > q && (QRow.label.startsWith(part) || QRow.maybe.isNil()), "grouped") {
                $0.qty > q && ($0.label.utf8.starts(with: part.utf8) || $0.maybe == nil)
            }
            try Self.check(box, rows, (QRow.flag == true || QRow.small < s) && QRow.tier != probe.tier, "or-and") {
                ($0.flag || $0.small < s) && $0.tier != probe.tier
            }
        }
    }

    @Test func orderingIsStableWithTiesAndPagesThroughOffsets() throws {
        let dir = TemporaryDirectory()
        let store = try Store(directoryPath: dir.path, options: .testing())
        let box = store.box(for: QRow.self)
        var rng = SplitMix64(state: 7)
        var rows = (0..<200).map { _ in Self.randomRow(&rng) }
        try box.put(&rows)
        let q = try box.query { QRow.qty >= -5 }.ordered(by: QRow.tier, .descending).ordered(by: QRow.maybe).build()
        let expected = rows.filter { $0.qty >= -5 }.sorted { a, b in
            if a.tier != b.tier { return a.tier.rawValue > b.tier.rawValue }
            if a.maybe != b.maybe { return (a.maybe ?? Int64.min) < (b.maybe ?? Int64.min) }   // nil first
            return a.id < b.id
        }.map(\.id)
        #expect(try q.findIds() == expected)
        var paged: [Id] = []
        var offset = 0
        while true {
            let page = try q.find(offset: offset, limit: 7).map(\.id)
            if page.isEmpty { break }
            paged += page
            offset += 7
        }
        #expect(paged == expected)
        #expect(try q.findFirst()?.id == expected.first)
        #expect(try q.find(offset: 10_000, limit: 5).isEmpty)
        #expect(throws: StrataError.self) { try q.find(offset: -1, limit: 2) }
        let byLabel = try box.query().ordered(by: QRow.label).build().findIds()
        #expect(byLabel == rows.sorted { Array($0.label.utf8).lexicographicallyPrecedes($1.label.utf8) || ($0.label == $1.label && $0.id < $1.id) }.map(\.id))
    }

    @Test func parametersRerunABuiltQueryWithNewValues() throws {
        let dir = TemporaryDirectory()
        let store = try Store(directoryPath: dir.path, options: .testing())
        let box = store.box(for: QRow.self)
        var rng = SplitMix64(state: 11)
        var rows = (0..<100).map { _ in Self.randomRow(&rng) }
        try box.put(&rows)
        let q = try box.query { QRow.qty > 0 && QRow.label.startsWith("a") }.build()
        for v in [-3, 2, 8] {
            try q.setParameter(QRow.qty, to: v)
            #expect(try q.findIds() == rows.filter { $0.qty > v && $0.label.hasPrefix("a") }.map(\.id))
        }
        try q.setParameter(QRow.label, to: "b")
        #expect(try q.findIds() == rows.filter { $0.qty > 8 && $0.label.hasPrefix("b") }.map(\.id))
        let between = try box.query { QRow.score.between(0, 0.5) }.build()
        try between.setParameters(QRow.score, to: -1, 1)
        #expect(try between.count() == rows.filter { $0.score >= -1 && $0.score <= 1 }.count)
        #expect(throws: StrataError.self) { try between.setParameter(QRow.small, to: 1) }
    }

    @Test func queriesSeeTheirTransactionsWritesAndRemoveWithInverseMaintenance() throws {
        let dir = TemporaryDirectory()
        let store = try Store(directoryPath: dir.path, options: .testing())
        let buyers = store.box(for: Buyer.self), purchases = store.box(for: Purchase.self)
        let joe = Buyer(name: "Joe"), ann = Buyer(name: "Ann")
        try purchases.put([Purchase(summary: "p1", buyer: joe), Purchase(summary: "p2", buyer: joe), Purchase(summary: "p3", buyer: ann)])
        try store.runInTransaction {
            try purchases.put(Purchase(summary: "p4", buyer: ann))
            #expect(try purchases.query { Purchase.buyer == ann.id }.build().count() == 2)
            #expect(try buyers.query { Buyer.purchases.count >= 2 }.build().count() == 2)
        }
        let removed = try buyers.query { Buyer.name == "Joe" }.build().remove()
        #expect(removed == 1)
        #expect(try purchases.count() == 4)
        #expect(try purchases.query { Purchase.buyer.isNil() }.build().findIds().count == 2)
        #expect(try purchases.query { Purchase.buyer == ann }.build().find().map(\.summary) == ["p3", "p4"])
    }

    @Test func linksTraverseRelationsBothWays() throws {
        let dir = TemporaryDirectory()
        let store = try Store(directoryPath: dir.path, options: .testing())
        let buyers = store.box(for: Buyer.self), purchases = store.box(for: Purchase.self)
        var rng = SplitMix64(state: 5)
        let people = (0..<20).map { Buyer(name: "buyer-\($0 % 7)") }
        try buyers.put(people)
        var all: [Purchase] = []
        for i in 0..<300 {
            let buyer = rng.below(10) == 0 ? nil : people[Int(rng.below(20))]
            all.append(Purchase(summary: "s\(i % 13)", buyer: buyer))
        }
        try purchases.put(all)
        let viaToOne = try purchases.query { Purchase.summary.startsWith("s1") }
            .link(Purchase.buyer) { Buyer.name == "buyer-3" }.build().findIds()
        #expect(viaToOne == all.filter { $0.summary.hasPrefix("s1") && $0.buyer.target?.name == "buyer-3" }.map(\.id))
        let viaBacklink = try buyers.query().link(Buyer.purchases) { Purchase.summary == "s4" }.build().findIds()
        let expectedBuyers = Set(all.filter { $0.summary == "s4" }.compactMap { $0.buyer.targetId })
        #expect(viaBacklink == expectedBuyers.sorted())
        let byBuyerName = try purchases.query { Purchase.buyer.isNotNil() }
            .ordered(by: Purchase.buyer, Buyer.name, .descending).build().findIds()
        let expectedOrder = all.filter { $0.buyer.targetId != nil }.sorted { a, b in
            let x = a.buyer.target!.name, y = b.buyer.target!.name
            return x != y ? x > y : a.id < b.id
        }.map(\.id)
        #expect(byBuyerName == expectedOrder)

        let students = store.box(for: Student.self), teachers = store.box(for: Teacher.self)
        let staff = (0..<8).map { Teacher(name: "T\($0)") }
        try teachers.put(staff)
        var pupils: [Student] = []
        for i in 0..<60 {
            let s = Student(name: (i % 3 == 0 ? "A" : "B") + "\(i)")
            for _ in 0..<Int(rng.below(4)) { s.teachers.append(staff[Int(rng.below(8))]) }
            pupils.append(s)
        }
        try students.put(pupils)
        let teachersOfA = try teachers.query().link(Teacher.students) { Student.name.startsWith("A") }.build().findIds()
        #expect(teachersOfA == Set(pupils.filter { $0.name.hasPrefix("A") }.flatMap { $0.teachers.map(\.id) }).sorted())
        let studentsOfT3 = try students.query().link(Student.teachers) { Teacher.name == "T3" }.build().findIds()
        #expect(studentsOfT3 == pupils.filter { $0.teachers.contains { $0.name == "T3" } }.map(\.id))
        let busy = try teachers.query { Teacher.students.count > 6 }.build().findIds()
        #expect(busy == staff.filter { t in pupils.filter { $0.teachers.contains { $0 === t } }.count > 6 }.map(\.id))
    }
}
