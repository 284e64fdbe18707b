import Foundation
import Strata
import StrataStorage
import Synchronization
import Testing

/// Every indexable type, each with an index.
@Entity
final class IRow {
    var id: Id = 0
    @Index var flag = false
    @Index var small: Int8 = 0
    @Index var qty = 0
    @Index var wide: UInt64 = 0
    @Index var ratio: Float = 0
    @Index var score = 0.0
    @Index var label = ""
    @Index var when = Date(timeIntervalSinceReferenceDate: 0)
    @Index var blob: [UInt8] = []
    @Index var note: String? = nil
    @Index var maybe: Int64? = nil
    @Index var tier: Tier = .low
    var plain = 0
}

@Entity
final class Account {
    var id: Id = 0
    @Unique var email = ""
    @Index var age = 0
    var name = ""

    init() {}
    init(email: String, age: Int, name: String = "") {
        self.email = email
        self.age = age
        self.name = name
    }
}

/// One entity name under three declarations: without indexes, with an index (and a property
/// the first lacks), with a unique constraint.
@Entity(name: "Evolving") struct EvolvingPlain {
    var id: Id = 0
    var n = 0
    var word = ""
}

@Entity(name: "Evolving") struct EvolvingIndexed {
    var id: Id = 0
    @Index var n = 0
    var word = ""
    @Index var rank = 7
}

@Entity(name: "Evolving") struct EvolvingUnique {
    var id: Id = 0
    var n = 0
    @Unique var word = ""
}

@Suite struct IndexTests {
    static let words = ["apple", "Apple", "ab", "a\u{0}b", "a", "", "band", "banana", "über", "uber", "a\u{0}"]
    static let doubles: [Double] = [-.infinity, -2.5, -0.0, 0, 0.25, 1e300, .infinity, .nan]

    /// Queries without an ordering decode while they scan and stop at the end of the page:
    /// pages must still be the id-ordered matches, through an index, a scan, and a write
    /// transaction's own writes.
    @Test func unorderedPagesAreTheIdOrderedMatchesThroughIndexesScansAndPendingWrites() throws {
        let dir = TemporaryDirectory()
        let store = try Store(directoryPath: dir.path, options: .testing())
        let box = store.box(for: IRow.self)
        var rng = SplitMix64(state: 21)
        var rows = (0..<400).map { _ in Self.randomRow(&rng) }
        try box.put(&rows)
        func pages(_ q: Query<IRow>, size: Int) throws -> [Id] {
            var out: [Id] = []
            while true {
                let page = try q.find(offset: out.count, limit: size).map { $0.id }
                #expect(page.count <= size)
                if page.isEmpty { return out }
                out += page
            }
        }
        let cases: [(Query<IRow>, (IRow) -> Bool)] = [
            (try box.query { IRow.qty > 0 }.build(), { $0.qty > 0 }),                      // index range
            (try box.query { IRow.plain < 2 }.build(), { $0.plain < 2 }),                  // scan
            (try box.query { IRow.qty > 0 && IRow.plain < 2 }.build(), { $0.qty > 0 && $0.plain < 2 }),
        ]
        for (q, predicate) in cases {
            let expected = rows.filter(predicate).map(\.id).sorted()
            #expect(try q.find().map { $0.id } == expected)
            #expect(try pages(q, size: 7) == expected)
            #expect(try pages(q, size: 1) == expected)
            #expect(try q.findFirst()?.id == expected.first)
            #expect(try q.find(offset: 3, limit: 0).isEmpty)
            #expect(try q.find(offset: expected.count, limit: 5).isEmpty)
            do {
              try store.runInTransaction {
                // A new match, a removed match and a changed row, seen by pages inside.
                let extra = Self.randomRow(&rng)
                extra.qty = 1
                extra.plain = 0
                try box.put(extra)
                try box.remove(expected[expected.count / 2])
                var inside = rows.filter(predicate).map(\.id).filter { $0 != expected[expected.count / 2] }
                if predicate(extra) { inside.append(extra.id) }
                #expect(try pages(q, size: 5) == inside.sorted())
                throw CancellationError()   // roll back for the next case
              }
            } catch is CancellationError {}
            #expect(try q.find().map { $0.id } == expected)
        }
        // A built query keeps its index plan between runs: new values must replan.
        let q = try box.query { IRow.qty == 0 && IRow.label == "" }.build()
        for qty in [0, 1, -1, Int.max, 3] {
            for label in ["", "band", "a\u{0}b", "zz"] {
                try q.setParameter(IRow.qty, to: qty)
                try q.setParameter(IRow.label, to: label)
                let expected = rows.filter { $0.qty == qty && $0.label == label }.map(\.id).sorted()
                #expect(try q.find().map { $0.id } == expected, "qty \(qty), label \(label)")
                #expect(try q.findIds() == expected)
                #expect(try q.count() == expected.count)
            }
        }
    }

    static func randomRow(_ rng: inout SplitMix64) -> IRow {
        let r = IRow()
        r.flag = rng.below(2) == 0
        r.small = Int8(rng.below(256) - 128)
        r.qty = [Int.min, -1, 0, 1, Int.max, rng.below(20) - 10][rng.below(6)]
        r.wide = [0, 1, UInt64.max, UInt64(rng.below(50))][rng.below(4)]
        r.ratio = Float(doubles[rng.below(doubles.count)])
        r.score = doubles[rng.below(doubles.count)]
        r.label = words[rng.below(words.count)]
        r.when = Date(timeIntervalSinceReferenceDate: Double(rng.below(10) * 3600 - 18000))
        r.blob = (0..<rng.below(3)).map { _ in [0, 1, 0xFF][rng.below(3)] }
        r.note = rng.below(3) == 0 ? nil : words[rng.below(words.count)]
        r.maybe = rng.below(3) == 0 ? nil : Int64(rng.below(7)) - 3
        r.tier = Tier(rawValue: rng.below(3))!
        r.plain = rng.below(5)
        return r
    }

    /// Compares a query's ids (and count) with a brute-force filter; `indexed` says whether the
    /// query must have read the index instead of every object.
    static func check(_ store: Store, _ rows: [IRow], _ condition: QueryCondition<IRow>, _ label: String,
                      indexed: Bool = true, _ predicate: (IRow) -> Bool) throws {
        let box = store.box(for: IRow.self)
        let expected = rows.filter(predicate).map(\.id)
        let q = try box.query { condition }.build()
        let before = store.statistics()
        #expect(try q.findIds() == expected, "\(label)")
        let after = store.statistics()
        if indexed {
            #expect(after.objectsRead - before.objectsRead == 0, "\(label) decoded objects")
            #expect(after.indexEntriesRead > before.indexEntriesRead || expected.isEmpty, "\(label) read no index")
        }
        #expect(try q.count() == expected.count, "\(label) count")
        #expect(try q.find().map(\.id) == expected, "\(label) find")
    }

    static func checkAll(_ store: Store, _ rows: [IRow], _ rng: inout SplitMix64) throws {
        for _ in 0..<4 {
            let p = randomRow(&rng)
            let q = p.qty, s = p.small, w = p.wide, d = p.score, f = p.ratio, l = p.label, t = p.when
            try check(store, rows, IRow.qty == q, "qty == \(q)") { $0.qty == q }
            try check(store, rows, IRow.qty < q, "qty < \(q)") { $0.qty < q }
            try check(store, rows, IRow.qty <= q, "qty <= \(q)") { $0.qty <= q }
            try check(store, rows, IRow.qty > q, "qty > \(q)") { $0.qty > q }
            try check(store, rows, IRow.qty != q, "qty != \(q)", indexed: false) { $0.qty != q }
            try check(store, rows, IRow.small >= s, "small >= \(s)") { $0.small >= s }
            try check(store, rows, IRow.wide > w, "wide > \(w)") { $0.wide > w }
            try check(store, rows, IRow.wide.between(w / 2, w), "wide between") { $0.wide >= w / 2 && $0.wide <= w }
            // A stored NaN is unordered: it is neither equal to nor below anything, and the
            // comparison treats it as above (FieldView.compare).
            try check(store, rows, IRow.score == d, "score == \(d)") { $0.score == d }
            if !d.isNaN {
                try check(store, rows, IRow.score < d, "score < \(d)") { $0.score < d }
                try check(store, rows, IRow.score > d, "score > \(d)") { $0.score > d || $0.score.isNaN }
                try check(store, rows, IRow.score.between(d, d + 1), "score between") { $0.score >= d && $0.score <= d + 1 }
                try check(store, rows, IRow.ratio >= Float(d), "ratio >= \(d)") { $0.ratio >= Float(d) || $0.ratio.isNaN }
            }
            try check(store, rows, IRow.ratio == f, "ratio == \(f)") { $0.ratio == f }
            try check(store, rows, IRow.when < t, "when < \(t)") { $0.when < t }
            try check(store, rows, IRow.flag == p.flag, "flag") { $0.flag == p.flag }
            try check(store, rows, IRow.blob == p.blob, "blob ==") { $0.blob == p.blob }
            try check(store, rows, IRow.tier <= p.tier, "tier <=") { $0.tier.rawValue <= p.tier.rawValue }
            try check(store, rows, IRow.qty.isIn([q, 0, Int.max]), "qty isIn") { [q, 0, Int.max].contains($0.qty) }
            try check(store, rows, IRow.label == l, "label == \(l.debugDescription)") { Array($0.label.utf8) == Array(l.utf8) }
            try check(store, rows, IRow.label < l, "label < \(l.debugDescription)") { Array($0.label.utf8).lexicographicallyPrecedes(l.utf8) }
            try check(store, rows, IRow.label >= l, "label >= \(l.debugDescription)") { !Array($0.label.utf8).lexicographicallyPrecedes(l.utf8) }
            let part = String(l.prefix(2))
            try check(store, rows, IRow.label.startsWith(part), "startsWith \(part.debugDescription)") { $0.label.utf8.starts(with: part.utf8) }
            try check(store, rows, IRow.label.startsWith(part, caseSensitive: false), "startsWith ci", indexed: false) {
                $0.label.lowercased().hasPrefix(part.lowercased())
            }
            try check(store, rows, IRow.note.isNil(), "note isNil") { $0.note == nil }
            try check(store, rows, IRow.note == l, "note == \(l.debugDescription)") { $0.note.map { Array($0.utf8) == Array(l.utf8) } ?? false }
            let m = p.maybe ?? 0
            try check(store, rows, IRow.maybe > m, "maybe > \(m)") { $0.maybe.map { $0 > m } ?? false }
            try check(store, rows, IRow.maybe <= m, "maybe <= \(m)") { $0.maybe.map { $0 <= m } ?? false }
            try check(store, rows, IRow.qty > q && IRow.plain == 2, "and with an unindexed branch") { $0.qty > q && $0.plain == 2 }
            try check(store, rows, IRow.tier == p.tier || IRow.maybe.isNil(), "or of indexed") { $0.tier == p.tier || $0.maybe == nil }
            try check(store, rows, IRow.tier == p.tier || IRow.plain == 1, "or with an unindexed branch", indexed: false) {
                $0.tier == p.tier || $0.plain == 1
            }
        }
    }

    @Test(arguments: [1, 2] as [UInt64])
    func indexedConditionsAgreeWithABruteForceFilterThroughUpdatesRemovesAndReopen(seed: UInt64) throws {
        let dir = TemporaryDirectory()
        var rng = SplitMix64(state: seed)
        var rows: [IRow]
        do {
            let store = try Store(directoryPath: dir.path, options: .testing())
            let box = store.box(for: IRow.self)
            rows = (0..<400).map { _ in Self.randomRow(&rng) }
            try box.put(&rows)
            try Self.checkAll(store, rows, &rng)
            // Updates move entries, removes delete them; the old values must stop matching.
            for i in stride(from: 0, to: rows.count, by: 3) {
                let fresh = Self.randomRow(&rng)
                fresh.id = rows[i].id
                rows[i] = fresh
            }
            try box.put(stride(from: 0, to: rows.count, by: 3).map { rows[$0] })
            let removed = Set(stride(from: 1, to: rows.count, by: 4).map { rows[$0].id })
            try box.remove(Array(removed))
            rows.removeAll { removed.contains($0.id) }
            try Self.checkAll(store, rows, &rng)
            store.close()
        }
        let store = try Store(directoryPath: dir.path, options: .testing())
        try Self.checkAll(store, rows, &rng)
        try store.compact()
        try Self.checkAll(store, rows, &rng)
    }

    @Test func queriesInAWriteTransactionSeeItsOwnWritesThroughTheIndex() throws {
        let dir = TemporaryDirectory()
        let store = try Store(directoryPath: dir.path, options: .testing())
        let accounts = store.box(for: Account.self)
        let ada = Account(email: "ada@example.com", age: 36)
        let bob = Account(email: "bob@example.com", age: 40)
        try accounts.put([ada, bob])
        let byAge = try accounts.query { Account.age == 40 }.build()
        try store.runInTransaction {
            ada.age = 40
            try accounts.put(ada)
            try accounts.remove(bob)
            try accounts.put(Account(email: "cy@example.com", age: 40))
            #expect(try byAge.find().map(\.email) == ["ada@example.com", "cy@example.com"])
            #expect(try accounts.query { Account.age < 40 }.build().count() == 0)
        }
        #expect(try byAge.find().map(\.email) == ["ada@example.com", "cy@example.com"])
        #expect(try accounts.query { Account.age.between(30, 39) }.build().count() == 0)
    }

    /// Many unique checks in one transaction (they share one iterator over the committed index
    /// entries, seeking back and forth): a conflict with a committed value late in the
    /// transaction is found, and a value freed earlier in the same transaction is no conflict.
    @Test func uniqueChecksWithinOneTransactionSeeCommittedValuesInAnyOrder() throws {
        let dir = TemporaryDirectory()
        let store = try Store(directoryPath: dir.path, options: .testing())
        let accounts = store.box(for: Account.self)
        let committed = (0..<50).map { Account(email: "e\($0)", age: $0) }
        try accounts.put(committed)
        #expect(throws: StrataError.uniqueViolation(entity: "Account", property: "email", value: "\"e17\"", existing: committed[17].id)) {
            try store.runInTransaction {
                for i in stride(from: 29, through: 0, by: -1) { try accounts.put(Account(email: "n\(i)", age: i)) }
                try accounts.put(Account(email: "e49x", age: 0))
                try accounts.put(Account(email: "e17", age: 0))
            }
        }
        #expect(try accounts.count() == 50)
        try store.runInTransaction {
            try accounts.put(Account(email: "e4a", age: 0))
            try accounts.remove(committed[5].id)
            committed[9].email = "moved"
            try accounts.put(committed[9])
            try accounts.put(Account(email: "e5", age: 5))
            try accounts.put(Account(email: "e9", age: 9))
        }
        #expect(try accounts.query { Account.email == "e5" }.build().count() == 1)
        #expect(try accounts.query { Account.email == "e9" }.build().findIds() != [committed[9].id])
        #expect(try accounts.count() == 52)
    }

    @Test func aUniqueViolationNamesPropertyAndValueAndLeavesTheStoreUnchanged() throws {
        let dir = TemporaryDirectory()
        let store = try Store(directoryPath: dir.path, options: .testing())
        let accounts = store.box(for: Account.self)
        let ada = Account(email: "ada@example.com", age: 36)
        try accounts.put(ada)
        let before = try accounts.all().map(\.email)

        let copy = Account(email: "ada@example.com", age: 1)
        #expect(throws: StrataError.uniqueViolation(entity: "Account", property: "email", value: "\"ada@example.com\"", existing: ada.id)) {
            try accounts.put(copy)
        }
        #expect(copy.id == 0)
        #expect(try accounts.all().map(\.email) == before)
        let message = "\(StrataError.uniqueViolation(entity: "Account", property: "email", value: "\"x\"", existing: 1))"
        #expect(message.contains("Account.email") && message.contains("\"x\""))

        // Two new objects with one value in one transaction: all of it rolls back.
        #expect(throws: StrataError.self) {
            try store.runInTransaction {
                try accounts.put(Account(email: "new@example.com", age: 2))
                try accounts.put(Account(email: "new@example.com", age: 3))
            }
        }
        #expect(try accounts.count() == 1)
        // Putting an object again with its own value is no conflict; swapping values in one
        // transaction is none either.
        ada.name = "Ada"
        try accounts.put(ada)
        let bob = Account(email: "bob@example.com", age: 40)
        try accounts.put(bob)
        try store.runInTransaction {
            ada.email = "swap"
            try accounts.put(ada)
            bob.email = "ada@example.com"
            try accounts.put(bob)
            ada.email = "bob@example.com"
            try accounts.put(ada)
        }
        #expect(try accounts.query { Account.email == "ada@example.com" }.build().findIds() == [bob.id])
        #expect(try accounts.query { Account.email == "swap" }.build().count() == 0)
        // A removed object frees its value.
        try accounts.remove(bob)
        try accounts.put(Account(email: "ada@example.com", age: 5))
        #expect(try accounts.count() == 2)
    }

    @Test func anIndexIsBuiltAtOpenDroppedWhenUndeclaredAndAUniqueConflictIsRefused() throws {
        let dir = TemporaryDirectory()
        do {
            let store = try Store(directoryPath: dir.path, options: .testing())
            try store.box(for: EvolvingPlain.self).put((0..<1_000).map { EvolvingPlain(n: $0 % 10, word: "w\($0 % 500)") })
            store.close()
        }
        let events = LockedEvents()
        var options = StoreOptions.testing()
        options.indexProgress = { events.append($0) }
        do {
            let store = try Store(directoryPath: dir.path, options: options)
            let box = store.box(for: EvolvingIndexed.self)
            let built = events.all.filter { $0.phase == .building }
            #expect(Set(built.map(\.property)) == ["n", "rank"])
            #expect(built.last?.done == 1_000 && built.last?.total == 1_000)
            let before = store.statistics()
            // `rank` did not exist: stored objects read it as its default, and so does the index.
            #expect(try box.query { EvolvingIndexed.rank == 7 }.build().count() == 1_000)
            #expect(try box.query { EvolvingIndexed.n == 3 }.build().find().count == 100)
            #expect(store.statistics().objectsRead - before.objectsRead == 100)
            var changed = try #require(try box.get(1))
            changed.rank = 1
            try box.put(changed)
            #expect(try box.query { EvolvingIndexed.rank < 7 }.build().findIds() == [1])
            store.close()
        }
        do {
            // Reopened with the same declaration: nothing to build.
            events.removeAll()
            let store = try Store(directoryPath: dir.path, options: options)
            #expect(try store.box(for: EvolvingIndexed.self).query { EvolvingIndexed.rank == 7 }.build().count() == 999)
            #expect(events.all.isEmpty)
            store.close()
        }
        do {
            // Values duplicate: the unique index is refused, nothing changes.
            events.removeAll()
            let store = try Store(directoryPath: dir.path, options: options)
            let box = store.box(for: EvolvingUnique.self)
            let error = #expect(throws: StrataError.self) { try box.count() }
            if case let .uniqueViolation(entity, property, value, _)? = error {
                #expect(entity == "Evolving" && property == "word" && value.hasPrefix("\"w"))
            } else {
                Issue.record("expected a unique violation, got \(String(describing: error))")
            }
            #expect(!events.all.contains { $0.phase == .dropping && $0.property != "word" })
            store.close()
        }
        do {
            // The refused unique index changed nothing: the indexes still answer.
            let store = try Store(directoryPath: dir.path, options: options)
            #expect(try store.box(for: EvolvingIndexed.self).query { EvolvingIndexed.n == 3 }.build().count() == 100)
            store.close()
        }
        do {
            // Undeclared: dropped.
            events.removeAll()
            let store = try Store(directoryPath: dir.path, options: options)
            #expect(try store.box(for: EvolvingPlain.self).query { EvolvingPlain.n == 3 }.build().count() == 100)
            #expect(Set(events.all.filter { $0.phase == .dropping }.map(\.property)) == ["n", "rank"])
            store.close()
        }
        do {
            let store = try Store(directoryPath: dir.path, options: options)
            let plain = store.box(for: EvolvingPlain.self)
            #expect(try plain.count() == 1_000)
            // Make the words unique; now the unique index builds and enforces.
            var all = try plain.all()
            for i in all.indices { all[i].word = "w\(all[i].id)" }
            try plain.put(all)
            store.close()
        }
        let store = try Store(directoryPath: dir.path, options: options)
        let unique = store.box(for: EvolvingUnique.self)
        #expect(try unique.query { EvolvingUnique.word == "w10" }.build().findIds() == [10])
        #expect(throws: StrataError.uniqueViolation(entity: "Evolving", property: "word", value: "\"w10\"", existing: 10)) {
            try unique.put(EvolvingUnique(n: 0, word: "w10"))
        }
    }

    /// A build writes its entries in chunks of 16,384 objects; a value held twice is found
    /// also when the two objects fall in different chunks, and the refused index leaves no
    /// entry behind.
    @Test func aUniqueBuildFindsADuplicateInAnEarlierChunk() throws {
        let dir = TemporaryDirectory()
        let count = 20_000
        do {
            let store = try Store(directoryPath: dir.path, options: .testing())
            // Object 20,000 repeats the word of object 3; every other word is its own.
            try store.box(for: EvolvingPlain.self).put((1...count).map { EvolvingPlain(n: 0, word: "w\($0 == count ? 3 : $0)") })
            store.close()
        }
        do {
            let store = try Store(directoryPath: dir.path, options: .testing())
            #expect(throws: StrataError.uniqueViolation(entity: "Evolving", property: "word", value: "\"w3\"", existing: 3)) {
                try store.box(for: EvolvingUnique.self).count()
            }
            store.close()
        }
        let engine = try Engine.open(directory: dir.path)
        defer { engine.close() }
        #expect(try engine.scan(try engine.keySpace(named: "indexes")).isEmpty)
    }

    @Test func indexEntriesAndRecordsAreStoredAsTheSpecSays() throws {
        let dir = TemporaryDirectory()
        do {
            let store = try Store(directoryPath: dir.path, options: .testing())
            try store.box(for: Account.self).put(Account(email: "a\u{0}", age: -2))
            store.close()
        }
        let stored = try StoredBytes(directory: dir.path)
        let engine = stored.engine, meta = stored.meta
        defer { engine.close() }
        let indexes = try #require(stored.indexes)
        let id: [UInt8] = [0, 0, 0, 0, 0, 0, 0, 1]
        // email (property 1, unique: keyed by value, the id as value): tag 4, "a", 0x00
        // escaped as 00 FF, terminator 00 01.
        let email: [UInt8] = [0, 0, 0, 1, 0, 0, 0, 1, 4, 0x61, 0, 0xFF, 0, 1]
        // age (property 2): tag 1, -2 as u64 with the sign bit flipped, then the id; no value.
        let age: [UInt8] = [0, 0, 0, 1, 0, 0, 0, 2, 1, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFE] + id
        #expect(try engine.scan(indexes).map(\.key) == [email, age])
        #expect(try engine.scan(indexes).map(\.value) == [id, []])
        // Record v6: email flags 16|8|4 (keyed by value, unique, indexed) + default ""
        // (tag 4, terminator); age flags 4 + default 0; name flags 0.
        let record: [UInt8] = [6, 0, 7] + Array("Account".utf8) + [3, 3,
                               1, 5] + Array("email".utf8) + [12, 28, 3, 4, 0, 1,
                               2, 3] + Array("age".utf8) + [5, 4, 9, 1, 0x80, 0, 0, 0, 0, 0, 0, 0,
                               3, 4] + Array("name".utf8) + [12, 0]
        #expect(try engine.get([2, 0, 0, 0, 1], in: meta) == record)
    }

    /// A store of object format 3 keeps its unique indexes with one entry per object, like
    /// `@Index`. Read-only, its queries read them as they are; the first writable binding of
    /// the type rebuilds them keyed by value, and then lookups, checks and verify agree.
    @Test func aUniqueIndexOfFormat3IsReadAsItIsThenRebuiltKeyedByValue() throws {
        let dir = TemporaryDirectory()
        let accounts = [Account(email: "a@x", age: 1), Account(email: "b@x", age: 2), Account(email: "c@x", age: 2)]
        do {
            let store = try Store(directoryPath: dir.path, options: .testing())
            try store.box(for: Account.self).put(accounts)
            store.close()
        }
        // Turn it into what format 3 wrote: entries "header · value · id" with empty values, a
        // version 4 record without the keyed-by-value flag, format 3.
        let header: [UInt8] = [0, 0, 0, 1, 0, 0, 0, 1]
        do {
            let engine = try Engine.open(directory: dir.path)
            let indexes = try engine.keySpace(named: "indexes"), meta = try engine.keySpace(named: "meta")
            var batch = WriteBatch()
            var converted = 0
            for (key, value) in try engine.scan(indexes) where key.starts(with: header) {
                #expect(value.count == 8)
                batch.delete(key, in: indexes)
                batch.put(key + value, [], in: indexes)
                converted += 1
            }
            #expect(converted == 3)
            let v6: [UInt8] = [6, 0, 7] + Array("Account".utf8) + [3, 3, 1, 5] + Array("email".utf8) + [12, 28, 3, 4, 0, 1]
            let record = try #require(try engine.get([2, 0, 0, 0, 1], in: meta))
            #expect(Array(record.prefix(v6.count)) == v6)
            var v4 = record
            v4[0] = 4
            v4[v6.count - 5] = 12
            batch.put([2, 0, 0, 0, 1], v4, in: meta)
            batch.put([1], [3, 0, 0, 0], in: meta)
            try engine.write(batch)
            engine.close()
        }
        do {
            var options = StoreOptions.testing()
            options.readOnly = true
            let store = try Store(directoryPath: dir.path, options: options)
            #expect(store.formatVersion == 3)
            let box = store.box(for: Account.self)
            #expect(try box.query { Account.email == "b@x" }.build().findIds() == [accounts[1].id])
            #expect(try box.query { Account.email.startsWith("c") }.build().findIds() == [accounts[2].id])
            #expect(try box.query { Account.email == "zz" }.build().count() == 0)
            #expect(try store.verifyGraph().problems.isEmpty)
            store.close()
        }
        let events = LockedEvents()
        var options = StoreOptions.testing()
        options.indexProgress = { events.append($0) }
        let store = try Store(directoryPath: dir.path, options: options)
        #expect(store.formatVersion == 5)
        let box = store.box(for: Account.self)
        #expect(Set(events.all.filter { $0.phase == .building }.map(\.property)) == ["email"])
        #expect(try box.query { Account.email == "b@x" }.build().findIds() == [accounts[1].id])
        #expect(try box.query { Account.email >= "b" }.build().findIds() == [accounts[1].id, accounts[2].id])
        #expect(try box.query { Account.age == 2 }.build().findIds() == [accounts[1].id, accounts[2].id])
        #expect(throws: StrataError.uniqueViolation(entity: "Account", property: "email", value: "\"a@x\"", existing: accounts[0].id)) {
            try box.put(Account(email: "a@x", age: 9))
        }
        #expect(try store.verifyGraph().problems.isEmpty)
        store.close()
        let engine = try Engine.open(directory: dir.path)
        defer { engine.close() }
        let entries = try engine.scan(try engine.keySpace(named: "indexes")).filter { $0.key.starts(with: header) }
        #expect(entries.map(\.key) == ["a@x", "b@x", "c@x"].map { header + [4] + Array($0.utf8) + [0, 1] })
        #expect(entries.map(\.value) == accounts.map { a in (0..<8).reversed().map { UInt8(truncatingIfNeeded: a.id >> (8 * UInt64($0))) } })
    }

    /// Every condition an index can answer, on a unique index (entries keyed by value, the id
    /// in the entry's value), agrees with a filter over the same objects.
    @Test func conditionsOnAUniqueIndexKeyedByValueMatchAFilter() throws {
        let dir = TemporaryDirectory()
        let store = try Store(directoryPath: dir.path, options: .testing())
        let box = store.box(for: Account.self)
        var rng = SystemRandomNumberGenerator()
        let words = Set((0..<300).map { _ in String((0..<Int.random(in: 0...4, using: &rng)).map { _ in "ab\u{0}c".randomElement(using: &rng)! }) })
        let accounts = words.map { Account(email: $0, age: 0) }
        try box.put(accounts)
        try box.remove(accounts.prefix(20).map(\.id))
        let live = Array(accounts.dropFirst(20))
        let probes = Array(words.prefix(12)) + ["", "b", "c\u{0}", "zz"]
        for p in probes {
            let u = Array(p.utf8)
            let cases: [(QueryCondition<Account>, (String) -> Bool)] = [
                (Account.email == p, { $0 == p }),
                (Account.email < p, { Array($0.utf8).lexicographicallyPrecedes(u) }),
                (Account.email <= p, { !u.lexicographicallyPrecedes(Array($0.utf8)) }),
                (Account.email > p, { u.lexicographicallyPrecedes(Array($0.utf8)) }),
                (Account.email >= p, { !Array($0.utf8).lexicographicallyPrecedes(u) }),
                (Account.email.startsWith(p), { $0.utf8.starts(with: u) }),
                (Account.email.isIn([p, "a", "ab"]), { [p, "a", "ab"].contains($0) }),
            ]
            for (i, (condition, filter)) in cases.enumerated() {
                let found = try box.query { condition }.build().findIds()
                #expect(found == live.filter { filter($0.email) }.map(\.id).sorted(), "probe \(Array(p.utf8)), case \(i)")
            }
        }
        #expect(try store.verifyGraph().problems.isEmpty)
    }

    /// An equality on a unique value outside a transaction takes the two-point-read path: its
    /// answers match a filter after puts, updates and removals, and, with a writer moving the
    /// value between objects meanwhile, it never returns an object that does not hold it.
    @Test func aUniqueEqualityLookupIsExactEvenWhileAWriterMovesTheValue() throws {
        let dir = TemporaryDirectory()
        let store = try Store(directoryPath: dir.path, options: .testing())
        defer { store.close() }
        let box = store.box(for: Account.self)
        let accounts = (0..<200).map { Account(email: "user\($0)@x\u{0}y", age: $0) }
        try box.put(accounts)
        try box.remove(accounts.prefix(20).map(\.id))
        accounts[50].email = "moved"
        try box.put(accounts[50])
        let q = try box.query { Account.email == "" }.build()
        for probe in ["user10@x\u{0}y", "user30@x\u{0}y", "user50@x\u{0}y", "moved", "absent", ""] {
            try q.setParameter(Account.email, to: probe)
            let expected = try box.all().filter { $0.email == probe }.map(\.id)
            #expect(try q.find().map(\.id) == expected, "\(probe)")
            #expect(try q.findFirst()?.id == expected.first, "\(probe)")
        }
        // Inside a transaction the query sees the transaction's own writes (the normal path).
        try store.runInTransaction {
            accounts[60].email = "fresh"
            try box.put(accounts[60])
            try q.setParameter(Account.email, to: "fresh")
            #expect(try q.findFirst()?.id == accounts[60].id)
        }

        // A writer passes "hot" back and forth between two accounts; every hit holds it.
        let a = accounts[100], b = accounts[101]
        a.email = "hot"
        try box.put(a)
        let done = Atomic<Bool>(false)
        let (aId, bId) = (a.id, b.id)   // objects stay in their thread: the writer loads its own
        let writer = Thread {
            var (holder, other) = (aId, bId)
            for i in 0..<400 {
                try! store.runInTransaction {
                    let h = try box.get(holder)!, o = try box.get(other)!
                    h.email = "cold\(i)"
                    try box.put(h)
                    o.email = "hot"
                    try box.put(o)
                }
                swap(&holder, &other)
            }
            done.store(true, ordering: .releasing)
        }
        writer.start()
        try q.setParameter(Account.email, to: "hot")
        var hits = 0
        while !done.load(ordering: .acquiring) {
            if let found = try q.findFirst() {
                #expect(found.email == "hot")
                #expect(found.id == a.id || found.id == b.id)
                hits += 1
            }
        }
        #expect(hits > 0)
    }

    /// Objects that swap values of a unique property in one transaction, in either order, end
    /// with an entry keyed by each value naming its new holder: the commit deletes before it adds.
    @Test func swappedUniqueValuesKeepOneEntryEachWhateverTheOrder() throws {
        let dir = TemporaryDirectory()
        let store = try Store(directoryPath: dir.path, options: .testing())
        let box = store.box(for: Account.self)
        let a = Account(email: "one", age: 1), b = Account(email: "two", age: 2)
        try box.put([a, b])
        for firstIsA in [true, false, true] {
            let (x, y) = firstIsA ? (a, b) : (b, a)
            try store.runInTransaction {
                let (vx, vy) = (x.email, y.email)
                x.email = "tmp"
                try box.put(x)
                y.email = vx
                try box.put(y)
                x.email = vy
                try box.put(x)
            }
            for x in [a, b] {
                #expect(try box.query { Account.email == x.email }.build().findIds() == [x.id])
            }
            #expect(try store.verifyGraph().problems.isEmpty)
        }
    }

    @Test func indexedValuesTooLargeForAKeyAreRefused() throws {
        let dir = TemporaryDirectory()
        let store = try Store(directoryPath: dir.path, options: .testing())
        let accounts = store.box(for: Account.self)
        #expect(throws: StrataError.self) { try accounts.put(Account(email: String(repeating: "x", count: 20_000), age: 1)) }
        #expect(try accounts.count() == 0)
    }
}

/// Progress events collected from the callback's thread.
final class LockedEvents: @unchecked Sendable {
    private let lock = NSLock()
    private var events: [IndexProgress] = []
    func append(_ e: IndexProgress) { lock.lock(); events.append(e); lock.unlock() }
    func removeAll() { lock.lock(); events.removeAll(); lock.unlock() }
    var all: [IndexProgress] { lock.lock(); defer { lock.unlock() }; return events }
}
