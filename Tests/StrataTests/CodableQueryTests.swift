import Foundation
@testable import Strata
import StrataTestSupport
import Testing

enum PlaceKind: String, Codable { case shop, cafe, park }

/// `Codable` properties with indexes, dictionaries of every key form, optional collections and
/// an enum, for property queries and conditions.
@Entity
final class Place {
    var id: Id = 0
    var rank = 0
    var kind: PlaceKind = .shop
    @Unique var address = PostalAddress()
    @Index var tags: Set<String> = []
    @Index var previous: PostalAddress? = nil
    var attributes: [String: String] = [:]
    var codes: [Int: String] = [:]
    var byKey: [UUID: Int] = [:]
    var notes: [String]? = nil
    var extra: [String: Int]? = nil
}

/// The `Profile` entity of `CodableValueTests` with indexes added in a later release.
@Entity(name: "Profile")
final class ProfileIndexed {
    var id: Id = 0
    var tags: [String] = []
    var scores: Set<Int> = []
    var weights: [String: Double] = [:]
    var byKey: [UUID: Int] = [:]
    @Index var address = PostalAddress()
    var previous: PostalAddress? = nil
    @Index var history: [PostalAddress] = []
}

/// Issue 40's remaining queries: property queries returning `Codable` values (and enums),
/// `containsKey` and `count` on dictionaries, conditions on optional collections, `isIn`, and
/// `@Index`/`@Unique` on `Codable` properties.
@Suite struct CodableQueryTests {
    static func uuid(_ n: Int) -> UUID { UUID(uuidString: String(format: "00000000-0000-0000-0000-%012d", n))! }

    static func place(_ i: Int) -> Place {
        let p = Place()
        p.rank = (i * 7) % 10
        p.kind = [.shop, .cafe, .park][i % 3]
        p.address = PostalAddress(street: "Street \(i)", zip: 1_000 + i, geo: i % 2 == 0 ? Geo(lat: Double(i), lon: 0) : nil)
        p.tags = Set((0..<(i % 4)).map { "tag\(($0 + i) % 5)" })
        p.previous = i % 3 == 0 ? nil : PostalAddress(street: "Old \(i % 4)", zip: i % 4)
        p.attributes = i % 2 == 0 ? ["color": "red", "size": "\(i)"] : (i % 3 == 0 ? [:] : ["size": "s"])
        p.codes = Dictionary(uniqueKeysWithValues: (0..<(i % 3)).map { ($0 * 10 + i % 2, "c\($0)") })
        p.byKey = i % 4 == 0 ? [:] : [uuid(i % 5): i, uuid(99): 0]
        p.notes = i % 5 == 0 ? nil : (0..<(i % 3)).map { "n\($0)" }
        p.extra = i % 2 == 0 ? nil : ["k\(i % 3)": i]
        return p
    }

    static func open(_ dir: TemporaryDirectory) throws -> (Store, Box<Place>, [Place]) {
        let store = try Store(directoryPath: dir.path, options: .testing())
        let box = store.box(for: Place.self)
        let all = (0..<40).map(place)
        try box.put(all)
        return (store, box, all)
    }

    @Test func propertyQueriesReturnCodableValuesAndEnums() throws {
        let dir = TemporaryDirectory()
        let (store, box, all) = try Self.open(dir)
        defer { store.close() }
        let everything = try box.query().build()
        #expect(try everything.property(Place.tags).findValues() == all.map(\.tags))
        #expect(try everything.property(Place.address).findValues() == all.map(\.address))
        #expect(try everything.property(Place.attributes).findValues() == all.map(\.attributes))
        #expect(try everything.property(Place.byKey).findValues() == all.map(\.byKey))
        #expect(try everything.property(Place.codes).findValues() == all.map(\.codes))
        // Optional values: nil ones are left out, and not counted.
        #expect(try everything.property(Place.previous).findValues() == all.compactMap(\.previous))
        #expect(try everything.property(Place.notes).count() == all.compactMap(\.notes).count)
        #expect(try everything.property(Place.extra).findValues() == all.compactMap(\.extra))
        // Distinct compares stored forms: sets equal whatever their insertion order.
        var seenTags: [Set<String>] = []
        for p in all where !seenTags.contains(p.tags) { seenTags.append(p.tags) }
        #expect(try everything.property(Place.tags).distinct().findValues() == seenTags)
        #expect(try everything.property(Place.tags).distinct().count() == seenTags.count)
        var seenPrevious: [PostalAddress] = []
        for case let p? in all.map(\.previous) where !seenPrevious.contains(p) { seenPrevious.append(p) }
        #expect(try everything.property(Place.previous).distinct().findValues() == seenPrevious)
        // In the query's order, and for a condition.
        let byRank = try box.query { Place.rank >= 5 }.ordered(by: Place.rank, .descending).build()
        let expected = all.filter { $0.rank >= 5 }.sorted { ($0.rank, $1.id) > ($1.rank, $0.id) }
        #expect(try byRank.property(Place.address).findValues() == expected.map(\.address))
        // Enums come back as their cases, from the stored raw values.
        #expect(try everything.property(Place.kind).findValues() == all.map(\.kind))
        #expect(try everything.property(Place.kind).distinct().findValues() == [.shop, .cafe, .park])
        // Inside a write transaction, its own writes.
        try store.runInTransaction {
            let p = all[0]
            p.tags = ["fresh"]
            try box.put(p)
            let values = try box.query { Place.rank == p.rank }.build().property(Place.tags).findValues()
            #expect(values == all.filter { $0.rank == p.rank }.map { $0.id == p.id ? ["fresh"] : $0.tags })
        }
    }

    /// A stored value the property's type does not take is a typed error from a property query
    /// too, naming entity and id.
    @Test func aPropertyQueryOfTheWrongShapeIsATypedError() throws {
        let dir = TemporaryDirectory()
        var id: Id = 0
        do {
            let store = try Store(directoryPath: dir.path, options: .testing())
            defer { store.close() }
            id = try store.box(for: Profile.self).put(CodableValueTests.sample(3))
        }
        let store = try Store(directoryPath: dir.path, options: .testing())
        defer { store.close() }
        #expect {
            try store.box(for: ProfileWrongShape.self).query().build().property(ProfileWrongShape.tags).findValues()
        } throws: { error in
            guard case let .corruptObject(entity, errorId, _)? = error as? StrataError else { return false }
            return entity == "Profile" && errorId == id
        }
    }

    @Test func dictionaryAndOptionalCollectionConditions() throws {
        let dir = TemporaryDirectory()
        let (store, box, all) = try Self.open(dir)
        defer { store.close() }
        func ids(_ condition: () -> QueryCondition<Place>) throws -> Set<Id> { Set(try box.query(condition).build().findIds()) }
        func expected(_ keep: (Place) -> Bool) -> Set<Id> { Set(all.filter(keep).map(\.id)) }
        // String keys, Int keys (stored keyed by their text), UUID keys (a list of pairs).
        #expect(try ids { Place.attributes.containsKey("color") } == expected { $0.attributes["color"] != nil })
        #expect(try ids { Place.attributes.containsKey("nothing") }.isEmpty)
        #expect(try ids { Place.codes.containsKey(11) } == expected { $0.codes[11] != nil })
        #expect(try ids { Place.codes.containsKey(0) } == expected { $0.codes[0] != nil })
        #expect(try ids { Place.byKey.containsKey(Self.uuid(2)) } == expected { $0.byKey[Self.uuid(2)] != nil })
        #expect(try ids { Place.byKey.containsKey(Self.uuid(99)) } == expected { $0.byKey[Self.uuid(99)] != nil })
        // Entry counts, of both stored forms.
        #expect(try ids { Place.attributes.count == 2 } == expected { $0.attributes.count == 2 })
        #expect(try ids { Place.attributes.count == 0 } == expected { $0.attributes.isEmpty })
        #expect(try ids { Place.byKey.count >= 2 } == expected { $0.byKey.count >= 2 })
        #expect(try ids { Place.codes.count < 2 } == expected { $0.codes.count < 2 })
        // Optional dictionaries and arrays: a nil one matches neither `containsKey` nor a count.
        #expect(try ids { Place.extra.containsKey("k1") } == expected { $0.extra?["k1"] != nil })
        #expect(try ids { Place.extra.count == 1 } == expected { $0.extra?.count == 1 })
        #expect(try ids { Place.notes.contains("n1") } == expected { $0.notes?.contains("n1") ?? false })
        #expect(try ids { Place.notes.count == 0 } == expected { $0.notes?.isEmpty ?? false })
        #expect(try ids { Place.notes.isNil() } == expected { $0.notes == nil })
        // `isIn` on Codable values, in stored form.
        let someTags: [Set<String>] = [all[5].tags, ["tag0", "tag4", "tag3"], []]
        #expect(try ids { Place.tags.isIn(someTags) } == expected { someTags.contains($0.tags) })
        let addresses = [all[3].address, all[8].address, PostalAddress(street: "none")]
        #expect(try ids { Place.address.isIn(addresses) } == expected { addresses.contains($0.address) })
    }

    @Test func indexesOnCodablePropertiesAnswerEqualityAndEnforceUniqueness() throws {
        let dir = TemporaryDirectory()
        let (store, box, all) = try Self.open(dir)
        defer { store.close() }
        let binding = try store.binding(for: Place.self).get()
        func check(_ condition: () -> QueryCondition<Place>, _ keep: (Place) -> Bool) throws {
            let query = try box.query(condition).build()
            #expect(IndexPlan.make(query.condition, binding: binding) != nil, "the query reads the index")
            #expect(Set(try query.findIds()) == Set(all.filter(keep).map(\.id)))
        }
        let address = all[12].address
        try check({ Place.address == address }) { $0.address == address }
        #expect(try box.query { Place.address == address }.build().findUnique()?.id == all[12].id)
        let tags = all[7].tags
        try check({ Place.tags == tags }) { $0.tags == tags }
        try check({ Place.tags.isIn([tags, ["tag1"]]) }) { $0.tags == tags || $0.tags == ["tag1"] }
        let previous = PostalAddress(street: "Old 1", zip: 1)
        try check({ Place.previous == previous }) { $0.previous == previous }

        // A second object with an address already stored is refused, naming the value.
        let copy = Self.place(100)
        copy.address = all[3].address
        #expect {
            try box.put(copy)
        } throws: { error in
            guard case let .uniqueViolation(entity, property, value, existing)? = error as? StrataError else { return false }
            return entity == "Place" && property == "address" && existing == all[3].id
                && value == #"{"street": "Street 3", "zip": 1003}"#
        }
        #expect(try box.count() == all.count)
        // Changing a value moves its entry: the old value is free again.
        let moved = all[3]
        moved.address.street = "Moved"
        try box.put(moved)
        try box.put(copy)
        #expect(try box.query { Place.address == copy.address }.build().findIds() == [copy.id])
        // A removed object frees its value.
        try box.remove(copy)
        let again = Self.place(101)
        again.address = copy.address
        try box.put(again)
        #expect(try box.query { Place.address == copy.address }.build().findIds() == [again.id])
    }

    /// Nil values of an indexed optional Codable property are in its index (`isNil()` reads it),
    /// a unique Codable value is checked within one transaction too, and what a rolled-back
    /// transaction wrote leaves the index as it was.
    @Test func codableIndexesFollowNilTransactionsAndRollbacks() throws {
        let dir = TemporaryDirectory()
        let (store, box, all) = try Self.open(dir)
        defer { store.close() }
        let binding = try store.binding(for: Place.self).get()
        let nils = try box.query { Place.previous.isNil() }.build()
        #expect(IndexPlan.make(nils.condition, binding: binding) != nil)
        #expect(Set(try nils.findIds()) == Set(all.filter { $0.previous == nil }.map(\.id)))

        // Two new objects with one address in one transaction: refused, nothing kept.
        let a = Self.place(200), b = Self.place(201)
        b.address = a.address
        #expect(throws: StrataError.self) {
            try store.runInTransaction {
                try box.put(a)
                try box.put(b)
            }
        }
        #expect(try box.count() == all.count)
        #expect(try box.query { Place.address == a.address }.build().findIds().isEmpty)

        // A rolled-back change of an indexed value leaves the old entry, and only it.
        let p = all[5], before = p.tags
        struct Undo: Error {}
        #expect(throws: Undo.self) {
            try store.runInTransaction {
                p.tags = ["rolled", "back"]
                try box.put(p)
                #expect(try box.query { Place.tags == ["rolled", "back"] }.build().findIds() == [p.id])
                throw Undo()
            }
        }
        #expect(try box.query { Place.tags == ["rolled", "back"] }.build().findIds().isEmpty)
        #expect(try box.query { Place.tags == before }.build().findIds().contains(p.id))
    }

    /// An index declared on a Codable property of objects already stored is built at open, and
    /// reopening finds it.
    @Test func anIndexAddedToACodablePropertyIsBuiltFromStoredObjects() throws {
        let dir = TemporaryDirectory()
        let samples = (0..<50).map(CodableValueTests.sample)
        do {
            let store = try Store(directoryPath: dir.path, options: .testing())
            defer { store.close() }
            try store.box(for: Profile.self).put(samples)
        }
        for _ in 0..<2 {
            let store = try Store(directoryPath: dir.path, options: .testing())
            defer { store.close() }
            let box = store.box(for: ProfileIndexed.self)
            let binding = try store.binding(for: ProfileIndexed.self).get()
            for probe in [samples[9], samples[10], samples[0]] {
                let address = probe.address, history = probe.history
                let q = try box.query { ProfileIndexed.address == address }.build()
                #expect(IndexPlan.make(q.condition, binding: binding) != nil)
                #expect(Set(try q.findIds()) == Set(samples.filter { $0.address == address }.map(\.id)))
                let h = try box.query { ProfileIndexed.history == history }.build()
                #expect(IndexPlan.make(h.condition, binding: binding) != nil)
                #expect(Set(try h.findIds()) == Set(samples.filter { $0.history == history }.map(\.id)))
            }
        }
    }
}
