import Foundation
import Strata
import StrataStorage
import Testing

@Entity
final class CIShop {
    var id: Id = 0
    @Index(caseInsensitive: true) var city = ""
    @Index(caseInsensitive: true) var alias: String? = nil
    var rank = 0
}

/// The same entity name and properties, with a plain index: the store's first binding of the
/// other declaration rebuilds the index.
@Entity(name: "CIShop")
final class CIShopPlain {
    var id: Id = 0
    @Index var city = ""
    var alias: String? = nil
    var rank = 0
}

@Entity
final class CIWrong {
    var id: Id = 0
    @Index(caseInsensitive: true) var count = 0
}

@Suite struct CaseInsensitiveIndexTests {
    /// Strings whose lowercasing is not simple: ß (whose upper case is two letters), a final
    /// sigma, a dotted capital I, combining marks, a zero byte, the empty string.
    static let words = ["Berlin", "berlin", "BERLIN", "Bern", "bern", "Über", "über", "ÜBER", "uber", "straße", "STRASSE",
                        "Strasse", "ΟΔΟΣ", "οδος", "ΟΔΟΣΟ", "İstanbul", "istanbul", "e\u{301}", "\u{e9}", "", "a\0b", "A\0B", "Zürich"]

    static func folded(_ s: String) -> [UInt8] { Array(s.lowercased().utf8) }

    static func randomShop(_ rng: inout SplitMix64) -> CIShop {
        let s = CIShop()
        s.city = words[Int(rng.below(words.count))]
        s.alias = rng.below(3) == 0 ? nil : words[Int(rng.below(words.count))]
        s.rank = Int(rng.below(100))
        return s
    }

    @Test(arguments: [1, 2] as [UInt64])
    func everyStringConditionAgreesWithABruteForceFilter(seed: UInt64) throws {
        let dir = TemporaryDirectory()
        let store = try Store(directoryPath: dir.path, options: .testing())
        let box = store.box(for: CIShop.self)
        var rng = SplitMix64(state: seed)
        try box.put((0..<600).map { _ in Self.randomShop(&rng) })
        // Updates and removals, so that stale entries would show.
        var all = try box.all()
        for s in all where s.rank % 7 == 0 { s.city = Self.words[s.rank % Self.words.count].uppercased(); try box.put(s) }
        for s in all where s.rank % 11 == 0 { try box.remove(s) }
        all = try box.all()

        func check(_ label: String, _ condition: QueryCondition<CIShop>, _ predicate: (CIShop) -> Bool) throws {
            let q = try box.query { condition }.build()
            let expected = all.filter(predicate).map(\.id)
            #expect(try q.findIds() == expected, "\(label)")
            #expect(try q.count() == expected.count, "\(label) count")
        }
        for w in Self.words + ["BeRlIn", "STRASSE", "zz", "b", "ΟΔ", "Ü"] {
            let bytes = Array(w.utf8)
            try check("ci == \(w)", CIShop.city.isEqual(to: w, caseSensitive: false)) { Self.folded($0.city) == Self.folded(w) }
            try check("ci startsWith \(w)", CIShop.city.startsWith(w, caseSensitive: false)) { Self.folded($0.city).starts(with: Self.folded(w)) }
            try check("== \(w)", CIShop.city == w) { Array($0.city.utf8) == bytes }
            try check("cs startsWith \(w)", CIShop.city.startsWith(w)) { Array($0.city.utf8).starts(with: bytes) }
            try check("< \(w)", CIShop.city < w) { Array($0.city.utf8).lexicographicallyPrecedes(bytes) }
            try check("alias ci == \(w)", CIShop.alias.isEqual(to: w, caseSensitive: false)) {
                $0.alias.map { Self.folded($0) == Self.folded(w) } ?? false
            }
            try check("ci == \(w) && rank", CIShop.city.isEqual(to: w, caseSensitive: false) && CIShop.rank < 50) {
                Self.folded($0.city) == Self.folded(w) && $0.rank < 50
            }
        }
        try check("isIn", CIShop.city.isIn(["Berlin", "über"])) { ["Berlin", "über"].map { Array($0.utf8) }.contains(Array($0.city.utf8)) }
        try check("alias nil", CIShop.alias.isNil()) { $0.alias == nil }
        try check("ci || ci", CIShop.city.isEqual(to: "bern", caseSensitive: false) || CIShop.alias.startsWith("ü", caseSensitive: false)) {
            Self.folded($0.city) == Self.folded("bern") || ($0.alias.map { Self.folded($0).starts(with: Self.folded("ü")) } ?? false)
        }
        #expect(try store.verifyGraph().problems.isEmpty)
    }

    @Test func aCaseInsensitiveEqualityReadsTheIndexNotEveryObject() throws {
        let dir = TemporaryDirectory()
        let store = try Store(directoryPath: dir.path, options: .testing())
        let box = store.box(for: CIShop.self)
        var rng = SplitMix64(state: 3)
        try box.put((0..<2_000).map { _ in Self.randomShop(&rng) })
        let berlin = CIShop()
        berlin.city = "BeRLiN-Mitte"
        try box.put(berlin)
        let before = store.statistics()
        let found = try box.query { CIShop.city.isEqual(to: "berlin-mitte", caseSensitive: false) }.build().findIds()
        let after = store.statistics()
        #expect(found == [berlin.id])
        #expect(after.objectsRead - before.objectsRead <= 1)
        #expect(after.indexEntriesRead - before.indexEntriesRead == 1)
    }

    @Test func switchingBetweenAPlainAndACaseInsensitiveIndexRebuildsIt() throws {
        let dir = TemporaryDirectory()
        do {
            let store = try Store(directoryPath: dir.path, options: .testing())
            let box = store.box(for: CIShopPlain.self)
            for w in Self.words { let s = CIShopPlain(); s.city = w; try box.put(s) }
            // A plain index answers a case-insensitive condition by scanning.
            #expect(try box.query { CIShopPlain.city.isEqual(to: "berlin", caseSensitive: false) }.build().count() == 3)
            store.close()
        }
        do {
            let store = try Store(directoryPath: dir.path, options: .testing())
            let box = store.box(for: CIShop.self)
            #expect(try box.query { CIShop.city.isEqual(to: "BERLIN", caseSensitive: false) }.build().count() == 3)
            #expect(try box.query { CIShop.city == "Berlin" }.build().count() == 1)
            #expect(try box.query { CIShop.city.startsWith("str", caseSensitive: false) }.build().count() == 3)
            #expect(try store.verifyGraph().problems.isEmpty)
            let entities = try store.storedEntities()
            let city = try #require(entities.first { $0.name == "CIShop" }?.properties.first { $0.name == "city" })
            #expect(city.index == .caseInsensitive)
            store.close()
        }
        // And back: the plain index holds the values as they are again.
        let store = try Store(directoryPath: dir.path, options: .testing())
        let box = store.box(for: CIShopPlain.self)
        #expect(try box.query { CIShopPlain.city == "BERLIN" }.build().count() == 1)
        #expect(try box.query { CIShopPlain.city.startsWith("B") }.build().count() == 3)
        #expect(try store.verifyGraph().problems.isEmpty)
    }

    /// SPEC.md §11.2 and §13: the record's flag 32 and the entry's lowercased value.
    @Test func entriesAndRecordsAreStoredAsTheSpecSays() throws {
        let dir = TemporaryDirectory()
        do {
            let store = try Store(directoryPath: dir.path, options: .testing())
            let s = CIShop()
            s.city = "ÄB"
            try store.box(for: CIShop.self).put(s)
            store.close()
        }
        let stored = try StoredBytes(directory: dir.path)
        let engine = stored.engine, meta = stored.meta
        defer { engine.close() }
        let indexes = try #require(stored.indexes)
        // city (property 1): tag 4, "äb" in UTF-8, terminator 00 01, then the id; alias
        // (property 2): nil (tag 0), then the id.
        let id: [UInt8] = [0, 0, 0, 0, 0, 0, 0, 1]
        let city: [UInt8] = [0, 0, 0, 1, 0, 0, 0, 1, 4, 0xC3, 0xA4, 0x62, 0, 1] + id
        let alias: [UInt8] = [0, 0, 0, 1, 0, 0, 0, 2, 0] + id
        #expect(try engine.scan(indexes).map(\.key) == [city, alias])
        // Record v6: city flags 32|4 (case-insensitive, indexed) + default "" (tag 4,
        // terminator); alias flags 32|4|1 (optional) + default nil; rank flags 0.
        let record: [UInt8] = [6, 0, 6] + Array("CIShop".utf8) + [3, 3,
                               1, 4] + Array("city".utf8) + [12, 36, 3, 4, 0, 1,
                               2, 5] + Array("alias".utf8) + [12, 37, 1, 0,
                               3, 4] + Array("rank".utf8) + [5, 0]
        #expect(try engine.get([2, 0, 0, 0, 1], in: meta) == record)
    }

    @Test func aCaseInsensitiveIndexOnANonStringIsATypedError() throws {
        let dir = TemporaryDirectory()
        let store = try Store(directoryPath: dir.path, options: .testing())
        #expect(throws: StrataError.invalidIndex(entity: "CIWrong", property: "count", reason: "a case-insensitive index needs a String, not Int64")) {
            try store.box(for: CIWrong.self).put(CIWrong())
        }
    }

    /// A store of object format 4 (entity records of version 5, before case-insensitive
    /// indexes) opens read-only as it is, and a writable open upgrades it and builds the index.
    @Test func aFormat4StoreOpensAndGainsACaseInsensitiveIndex() throws {
        let dir = TemporaryDirectory()
        do {
            let store = try Store(directoryPath: dir.path, options: .testing())
            let box = store.box(for: CIShopPlain.self)
            for w in Self.words { let s = CIShopPlain(); s.city = w; try box.put(s) }
            store.close()
        }
        // Write it back as format 4 wrote it: the same record bytes with version 5.
        do {
            let engine = try Engine.open(directory: dir.path)
            let meta = try engine.keySpace(named: "meta")
            var batch = WriteBatch()
            for (key, value) in try engine.scan(meta) where key.first == 2 {
                #expect(value.first == 6)
                var v5 = value
                v5[0] = 5
                batch.put(key, v5, in: meta)
            }
            batch.put([1], [4, 0, 0, 0], in: meta)
            try engine.write(batch)
            engine.close()
        }
        do {
            var options = StoreOptions.testing()
            options.readOnly = true
            let store = try Store(directoryPath: dir.path, options: options)
            #expect(store.formatVersion == 4)
            #expect(try store.box(for: CIShopPlain.self).query { CIShopPlain.city == "Bern" }.build().count() == 1)
            store.close()
        }
        let store = try Store(directoryPath: dir.path, options: .testing())
        #expect(store.formatVersion == 5)
        let box = store.box(for: CIShop.self)
        #expect(try box.query { CIShop.city.isEqual(to: "ÜBER", caseSensitive: false) }.build().count() == 3)
        #expect(try store.verifyGraph().problems.isEmpty)
    }
}
