import Foundation
import Strata
import StrataTestSupport
import Testing

@Entity
final class DiffRow {
    var id: Id = 0
    @Index var qty = 0
    var score = 0.0
    var label = ""
    var note: String? = nil
    var maybe: Int64? = nil
    var flag = false
    var uid = UUID(uuidString: "00000000-0000-0000-0000-000000000000")!
    var price: Decimal = 0
    var tags: [String] = []
    var attrs: [String: Int] = [:]
    var maybeTags: [String]? = nil
}

/// The query engine against SQLite on the same rows: random conditions (comparisons, ranges,
/// `isIn`, string matches, nil tests, `&&` and `||` nested), orderings on one or two
/// properties, pages, and aggregates, each run on both and compared. Strata's rules are
/// written out in SQL: a nil matches only `isNil()` and `!=`; nil orders first ascending and
/// last descending; ties end by id; strings compare by their UTF-8 bytes (SQLite's BINARY), UUIDs
/// by their 16 bytes (a BLOB), decimals as numbers (quarters, exact as SQLite's REAL). Arrays
/// and dictionaries are JSON text in SQLite, asked with its JSON functions: a nil collection
/// matches no `contains`, `containsKey` or count comparison.
@Suite struct SQLiteDifferentialTests {
    static let scores: [Double] = [-2.5, -1, 0, 0.1, 0.5, 1, 1.5, 3.25, 100]
    /// Beside ASCII: accents and their case pairs, the same letters decomposed (canonically
    /// equal in Swift, other bytes on disk: "é" and "e\u{301}"), a sharp s, CJK, emoji (four
    /// UTF-8 bytes), a titlecase digraph, a combining mark alone (issue 54).
    static let labels = ["", "a", "ab", "abc", "b", "ba", "Z", "zeta", "é", "éa", "a é", "b1", "B",
                         "É", "Éa", "ü", "Ü", "u\u{308}", "e\u{301}", "e\u{301}a", "ß", "SS", "日本", "日",
                         "😀", "😀a", "ǅ", "\u{301}", "z\u{301}"]
    static let parts = ["a", "ab", "b", "é", "Z", "z", "1", "ta", "É", "ü", "\u{301}", "日", "😀"]
    static let notes = ["x", "m", "alpha", "x2", ""]
    /// Quarters: exact in binary too, so SQLite's REAL compares them as Decimal does.
    static func price(_ r: inout SplitMix64) -> Decimal { Decimal(r.below(81) - 40) / 4 }
    static func uid(_ r: inout SplitMix64) -> UUID {
        // Few distinct values, with bytes that order differently from their text.
        let b = UInt8(r.below(6) * 45)
        return UUID(uuid: (b, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, UInt8(r.below(3))))
    }
    static let words = ["a", "b", "ab", "é"]
    static func words(_ r: inout SplitMix64) -> [String] { (0..<r.below(4)).map { _ in words[r.below(words.count)] } }
    static func attrs(_ r: inout SplitMix64) -> [String: Int] {
        var d: [String: Int] = [:]
        for _ in 0..<r.below(4) { d[words[r.below(words.count)]] = r.below(9) - 4 }
        return d
    }
    /// An array as SQLite keeps it: JSON text, elements in order.
    static func json(_ a: [String]) -> String { "[" + a.map { "\"\($0)\"" }.joined(separator: ",") + "]" }
    static func json(_ d: [String: Int]) -> String {
        "{" + d.sorted { $0.key < $1.key }.map { "\"\($0.key)\":\($0.value)" }.joined(separator: ",") + "}"
    }

    static func blob(_ u: UUID) -> String {
        "x'" + withUnsafeBytes(of: u.uuid) { $0.map { String(format: "%02x", $0) }.joined() } + "'"
    }

    /// A condition and the same condition in SQL.
    struct Case {
        var condition: QueryCondition<DiffRow>
        var sql: String
    }

    static func compare(_ r: inout SplitMix64) -> (String, Int) {
        let ops = ["=", "!=", "<", "<=", ">", ">="]
        let i = r.below(ops.count)
        return (ops[i], i)
    }

    static func leaf(_ r: inout SplitMix64) -> Case {
        switch r.below(18) {
        case 15:
            let w = words[r.below(words.count)], q = SQLiteConnection.literal(w)
            return r.below(2) == 0
                ? Case(condition: DiffRow.tags.contains(w), sql: "EXISTS (SELECT 1 FROM json_each(t.tags) WHERE value = \(q))")
                : Case(condition: DiffRow.maybeTags.contains(w), sql: "EXISTS (SELECT 1 FROM json_each(t.maybeTags) WHERE value = \(q))")
        case 16:
            let n = r.below(4)
            let (op, k) = compare(&r)
            switch r.below(4) {
            case 0:
                let c: QueryCondition<DiffRow> = [DiffRow.tags.count == n, DiffRow.tags.count != n, DiffRow.tags.count < n,
                                                  DiffRow.tags.count <= n, DiffRow.tags.count > n, DiffRow.tags.count >= n][k]
                return Case(condition: c, sql: "json_array_length(tags) \(op) \(n)")
            case 1:
                let c: QueryCondition<DiffRow> = [DiffRow.maybeTags.count == n, DiffRow.maybeTags.count != n, DiffRow.maybeTags.count < n,
                                                  DiffRow.maybeTags.count <= n, DiffRow.maybeTags.count > n, DiffRow.maybeTags.count >= n][k]
                return Case(condition: c, sql: "json_array_length(maybeTags) \(op) \(n)")
            case 2:
                let c: QueryCondition<DiffRow> = [DiffRow.attrs.count == n, DiffRow.attrs.count != n, DiffRow.attrs.count < n,
                                                  DiffRow.attrs.count <= n, DiffRow.attrs.count > n, DiffRow.attrs.count >= n][k]
                return Case(condition: c, sql: "(SELECT count(*) FROM json_each(t.attrs)) \(op) \(n)")
            default:
                let a = words(&r), b = words(&r)
                return r.below(2) == 0
                    ? Case(condition: DiffRow.tags == a, sql: "tags = \(SQLiteConnection.literal(json(a)))")
                    : Case(condition: DiffRow.tags.isIn([a, b]), sql: "tags IN (\(SQLiteConnection.literal(json(a))), \(SQLiteConnection.literal(json(b))))")
            }
        case 17:
            let w = words[r.below(words.count)]
            return Case(condition: DiffRow.attrs.containsKey(w),
                        sql: "EXISTS (SELECT 1 FROM json_each(t.attrs) WHERE key = \(SQLiteConnection.literal(w)))")
        case 0, 1:
            let v = r.below(111) - 55
            let (op, k) = compare(&r)
            let c: QueryCondition<DiffRow> = [DiffRow.qty == v, DiffRow.qty != v, DiffRow.qty < v, DiffRow.qty <= v,
                                              DiffRow.qty > v, DiffRow.qty >= v][k]
            return Case(condition: c, sql: "qty \(op) \(v)")
        case 2:
            let a = r.below(111) - 55, b = r.below(111) - 55
            return Case(condition: DiffRow.qty.between(a, b), sql: "qty BETWEEN \(a) AND \(b)")
        case 3:
            let values = (0..<(1 + r.below(5))).map { _ in r.below(111) - 55 }
            return Case(condition: DiffRow.qty.isIn(values), sql: "qty IN (\(values.map(String.init).joined(separator: ", ")))")
        case 4:
            let v = scores[r.below(scores.count)]
            let (op, k) = compare(&r)
            let c: QueryCondition<DiffRow> = [DiffRow.score == v, DiffRow.score != v, DiffRow.score < v, DiffRow.score <= v,
                                              DiffRow.score > v, DiffRow.score >= v][k]
            return Case(condition: c, sql: "score \(op) \(v)")
        case 5:
            let v = labels[r.below(labels.count)]
            let (op, k) = compare(&r)
            let c: QueryCondition<DiffRow> = [DiffRow.label == v, DiffRow.label != v, DiffRow.label < v, DiffRow.label <= v,
                                              DiffRow.label > v, DiffRow.label >= v][k]
            return Case(condition: c, sql: "label \(op) \(SQLiteConnection.literal(v))")
        case 6:
            let p = parts[r.below(parts.count)], q = SQLiteConnection.literal(p)
            switch r.below(3) {
            case 0: return Case(condition: DiffRow.label.startsWith(p), sql: "substr(label, 1, length(\(q))) = \(q)")
            case 1: return Case(condition: DiffRow.label.endsWith(p), sql: "(length(label) >= length(\(q)) AND substr(label, -length(\(q))) = \(q))")
            default: return Case(condition: DiffRow.label.contains(p), sql: "instr(label, \(q)) > 0")
            }
        case 7:
            let v = notes[r.below(notes.count)], q = SQLiteConnection.literal(v)
            switch r.below(4) {
            case 0: return Case(condition: DiffRow.note == v, sql: "note = \(q)")
            case 1: return Case(condition: DiffRow.note != v, sql: "(note IS NULL OR note != \(q))")
            case 2: return Case(condition: DiffRow.note < v, sql: "note < \(q)")
            default: return Case(condition: DiffRow.note >= v, sql: "note >= \(q)")
            }
        case 8:
            return r.below(2) == 0 ? Case(condition: DiffRow.note.isNil(), sql: "note IS NULL")
                                   : Case(condition: DiffRow.maybe.isNotNil(), sql: "maybe IS NOT NULL")
        case 9, 10:
            let v = Int64(r.below(41) - 20)
            switch r.below(5) {
            case 0: return Case(condition: DiffRow.maybe == v, sql: "maybe = \(v)")
            case 1: return Case(condition: DiffRow.maybe != v, sql: "(maybe IS NULL OR maybe != \(v))")
            case 2: return Case(condition: DiffRow.maybe < v, sql: "maybe < \(v)")
            case 3: return Case(condition: DiffRow.maybe >= v, sql: "maybe >= \(v)")
            default:
                let w = v + Int64(r.below(15))
                return Case(condition: DiffRow.maybe.between(v, w), sql: "maybe BETWEEN \(v) AND \(w)")
            }
        case 11:
            let v = r.below(2) == 0
            return Case(condition: DiffRow.flag == v, sql: "flag = \(v ? 1 : 0)")
        case 12, 13:
            let v = price(&r)
            let (op, k) = compare(&r)
            let c: QueryCondition<DiffRow> = [DiffRow.price == v, DiffRow.price != v, DiffRow.price < v, DiffRow.price <= v,
                                              DiffRow.price > v, DiffRow.price >= v][k]
            return Case(condition: c, sql: "price \(op) \(v)")
        default:
            let v = uid(&r)
            switch r.below(3) {
            case 0:
                let (op, k) = compare(&r)
                let c: QueryCondition<DiffRow> = [DiffRow.uid == v, DiffRow.uid != v, DiffRow.uid < v, DiffRow.uid <= v,
                                                  DiffRow.uid > v, DiffRow.uid >= v][k]
                return Case(condition: c, sql: "uid \(op) \(blob(v))")
            case 1:
                let w = uid(&r)
                return Case(condition: DiffRow.uid.isIn([v, w]), sql: "uid IN (\(blob(v)), \(blob(w)))")
            default:
                let w = price(&r)
                return Case(condition: DiffRow.price.isIn([w, w + 1]), sql: "price IN (\(w), \(w + 1))")
            }
        }
    }

    static func condition(_ r: inout SplitMix64, depth: Int) -> Case {
        guard depth > 0, r.below(3) > 0 else { return leaf(&r) }
        let a = condition(&r, depth: depth - 1), b = condition(&r, depth: depth - 1)
        return r.below(2) == 0
            ? Case(condition: a.condition && b.condition, sql: "(\(a.sql) AND \(b.sql))")
            : Case(condition: a.condition || b.condition, sql: "(\(a.sql) OR \(b.sql))")
    }

    /// Adds a random ordering key to `builder` and its SQL to `sql`.
    static func order(_ builder: QueryBuilder<DiffRow>, _ r: inout SplitMix64, _ sql: inout [String]) -> QueryBuilder<DiffRow> {
        let direction: SortDirection = r.below(2) == 0 ? .ascending : .descending
        let word = direction == .ascending ? "ASC" : "DESC"
        switch r.below(7) {
        case 5: sql.append("price \(word)"); return builder.ordered(by: DiffRow.price, direction)
        case 6: sql.append("uid \(word)"); return builder.ordered(by: DiffRow.uid, direction)
        case 0: sql.append("qty \(word)"); return builder.ordered(by: DiffRow.qty, direction)
        case 1: sql.append("score \(word)"); return builder.ordered(by: DiffRow.score, direction)
        case 2: sql.append("label \(word)"); return builder.ordered(by: DiffRow.label, direction)
        case 3: sql.append("note \(word)"); return builder.ordered(by: DiffRow.note, direction)
        default: sql.append("maybe \(word)"); return builder.ordered(by: DiffRow.maybe, direction)
        }
    }

    static func integer(_ v: SQLiteConnection.Value) -> Int64? {
        if case let .integer(i) = v { return i }
        return nil
    }

    static func real(_ v: SQLiteConnection.Value) -> Double? {
        switch v {
        case let .real(d): d
        case let .integer(i): Double(i)
        default: nil
        }
    }

    static func close(_ a: Double?, _ b: Double?) -> Bool {
        guard let a, let b else { return a == nil && b == nil }
        return abs(a - b) <= 1e-9 * max(1, abs(a), abs(b))
    }

    @Test func queriesAgreeWithSQLite() throws {
        let sqlite: SQLiteConnection
        do {
            sqlite = try SQLiteConnection()
        } catch {
            Issue.record("the differential test needs SQLite: \(error)")
            return
        }
        let dir = TemporaryDirectory()
        let store = try Store(directoryPath: dir.path, options: .testing())
        defer { store.close() }
        let box = store.box(for: DiffRow.self)
        try sqlite.query("CREATE TABLE t (id INTEGER PRIMARY KEY, qty INTEGER, score REAL, label TEXT, note TEXT, maybe INTEGER, flag INTEGER, uid BLOB, price REAL, tags TEXT, attrs TEXT, maybeTags TEXT)")

        var r = SplitMix64(state: 41)
        var rows: [DiffRow] = []
        for _ in 0..<600 {
            let row = DiffRow()
            row.qty = r.below(101) - 50
            row.score = Self.scores[r.below(Self.scores.count)]
            row.label = Self.labels[r.below(Self.labels.count)]
            row.note = r.below(10) < 3 ? nil : Self.notes[r.below(Self.notes.count)]
            row.maybe = r.below(10) < 3 ? nil : Int64(r.below(41) - 20)
            row.flag = r.below(2) == 0
            row.uid = Self.uid(&r)
            row.price = Self.price(&r)
            row.tags = Self.words(&r)
            row.attrs = Self.attrs(&r)
            row.maybeTags = r.below(10) < 3 ? nil : Self.words(&r)
            rows.append(row)
        }
        try box.put(rows)
        // Some removals and updates, so that ids have gaps and the index has moved entries.
        var removed = Set<Id>()
        for _ in 0..<80 { removed.insert(Id(1 + r.below(rows.count))) }
        _ = try box.remove(Array(removed))
        let kept = rows.filter { !removed.contains($0.id) }
        for i in stride(from: 0, to: kept.count, by: 7) {
            kept[i].qty = r.below(101) - 50
            kept[i].note = r.below(2) == 0 ? nil : "m"
            kept[i].price = Self.price(&r)
            kept[i].tags = Self.words(&r)
        }
        try box.put(Array(stride(from: 0, to: kept.count, by: 7).map { kept[$0] }))
        for row in kept {
            let note = row.note.map(SQLiteConnection.literal) ?? "NULL"
            let maybe = row.maybe.map(String.init) ?? "NULL"
            let maybeTags = row.maybeTags.map { SQLiteConnection.literal(Self.json($0)) } ?? "NULL"
            try sqlite.query("INSERT INTO t VALUES (\(row.id), \(row.qty), \(row.score), \(SQLiteConnection.literal(row.label)), \(note), \(maybe), "
                             + "\(row.flag ? 1 : 0), \(Self.blob(row.uid)), \(row.price), \(SQLiteConnection.literal(Self.json(row.tags))), "
                             + "\(SQLiteConnection.literal(Self.json(row.attrs))), \(maybeTags))")
        }

        var mismatches: [String] = []
        // STRATA_DIFFERENTIAL_CASES=20000 for a long run; the test command runs 700.
        let cases = Int(ProcessInfo.processInfo.environment["STRATA_DIFFERENTIAL_CASES"] ?? "") ?? 700
        for n in 0..<cases {
            let c = Self.condition(&r, depth: 3)
            var builder = box.query { c.condition }
            var orderSQL: [String] = []
            for _ in 0..<r.below(3) { builder = Self.order(builder, &r, &orderSQL) }
            let query = try builder.build()
            let orderBy = " ORDER BY " + (orderSQL + ["id ASC"]).joined(separator: ", ")
            let whereSQL = " FROM t WHERE \(c.sql)"

            // The matching ids, in order, whole or one page.
            let paged = r.below(3) == 0
            let offset = r.below(20), limit = 1 + r.below(30)
            let ids = paged ? try query.findIds(offset: offset, limit: limit) : try query.findIds()
            let expected = try sqlite.query("SELECT id" + whereSQL + orderBy + (paged ? " LIMIT \(limit) OFFSET \(offset)" : ""))
                .compactMap { Self.integer($0[0]) }.map { Id($0) }
            if ids != expected {
                mismatches.append("#\(n) \(c.sql)\(orderBy)\(paged ? " page \(offset)+\(limit)" : ""): \(ids.prefix(8)) vs \(expected.prefix(8)) (\(ids.count) vs \(expected.count))")
                continue
            }
            // Aggregates over the same rows.
            let agg = try sqlite.query("SELECT count(*), coalesce(sum(qty), 0), min(qty), max(qty), avg(qty), coalesce(sum(score), 0.0), "
                                       + "min(label), max(label), coalesce(sum(maybe), 0), min(note), avg(maybe), min(price), max(price), "
                                       + "count(DISTINCT tags), count(maybeTags)" + whereSQL)[0]
            let qty = try query.property(DiffRow.qty)
            let checks: [(String, Bool)] = [
                ("count", try query.count() == Int(Self.integer(agg[0]) ?? -1)),
                ("sum(qty)", try qty.sum() == Self.integer(agg[1])),
                ("min(qty)", try qty.min().map(Int64.init) == Self.integer(agg[2])),
                ("max(qty)", try qty.max().map(Int64.init) == Self.integer(agg[3])),
                ("avg(qty)", Self.close(try qty.average(), Self.real(agg[4]))),
                ("sum(score)", Self.close(try query.property(DiffRow.score).sum(), Self.real(agg[5]))),
                ("min(label)", try query.property(DiffRow.label).min().map(SQLiteConnection.Value.text) ?? .null == agg[6]),
                ("max(label)", try query.property(DiffRow.label).max().map(SQLiteConnection.Value.text) ?? .null == agg[7]),
                ("sum(maybe)", try query.property(DiffRow.maybe).sum() == Self.integer(agg[8])),
                ("min(note)", try query.property(DiffRow.note).min().map(SQLiteConnection.Value.text) ?? .null == agg[9]),
                ("avg(maybe)", Self.close(try query.property(DiffRow.maybe).average(), Self.real(agg[10]))),
                ("min(price)", Self.close(try query.property(DiffRow.price).min().map { NSDecimalNumber(decimal: $0).doubleValue }, Self.real(agg[11]))),
                ("max(price)", Self.close(try query.property(DiffRow.price).max().map { NSDecimalNumber(decimal: $0).doubleValue }, Self.real(agg[12]))),
                ("count(DISTINCT tags)", try query.property(DiffRow.tags).distinct().count() == Int(Self.integer(agg[13]) ?? -1)),
                ("count(maybeTags)", try query.property(DiffRow.maybeTags).count() == Int(Self.integer(agg[14]) ?? -1)),
            ]
            // A Codable property's values, in the query's order.
            let tags = try sqlite.query("SELECT tags" + whereSQL + orderBy).map { $0[0] }
            if try query.property(DiffRow.tags).findValues().map({ SQLiteConnection.Value.text(Self.json($0)) }) != tags {
                mismatches.append("#\(n) tags values where \(c.sql)\(orderBy)")
            }
            for (name, ok) in checks where !ok {
                mismatches.append("#\(n) \(name) where \(c.sql): SQLite \(agg)")
            }
        }
        print("SQLite differential: \(cases) cases, \(mismatches.count) differences")
        #expect(mismatches.isEmpty, "\(mismatches.count) of \(cases) cases differ: \(mismatches.prefix(5))")
    }
}
