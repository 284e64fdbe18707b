import Foundation
@testable import Strata
import StrataTestSupport
import Testing

struct Geo: Codable, Equatable {
    var lat = 0.0
    var lon = 0.0
}

struct PostalAddress: Codable, Equatable {
    var street = ""
    var zip = 0
    var geo: Geo? = nil
}

/// The same struct after a release added fields (and dropped none).
struct PostalAddressV2: Codable, Equatable {
    var street = ""
    var zip = 0
    var geo: Geo? = nil
    var city: String
    var floor: Int
    var tags: [String]
    var note: String?
    var location: Geo
}

@Entity
final class Profile {
    var id: Id = 0
    var tags: [String] = []
    var scores: Set<Int> = []
    var weights: [String: Double] = [:]
    var byKey: [UUID: Int] = [:]
    var address = PostalAddress()
    var previous: PostalAddress? = nil
    var history: [PostalAddress] = []
}

@Entity(name: "Profile")
final class ProfileV2 {
    var id: Id = 0
    var tags: [String] = []
    var scores: Set<Int> = []
    var weights: [String: Double] = [:]
    var byKey: [UUID: Int] = [:]
    var address = PostalAddressV2(city: "", floor: 0, tags: [], note: nil, location: Geo())
    var previous: PostalAddressV2? = nil
    var history: [PostalAddress] = []
}

@Entity(name: "Profile")
final class ProfileWrongShape {
    var id: Id = 0
    var tags: [Int] = []
}

/// A value whose nesting the app chooses: each level is a keyed value holding an array.
struct Tree: Codable, Equatable {
    var children: [Tree] = []

    /// `levels` trees, each the only child of the one above: stored nested 2 × levels − 1 deep.
    static func chain(_ levels: Int) -> Tree {
        var t = Tree()
        for _ in 1..<levels { t = Tree(children: [t]) }
        return t
    }
}

@Entity
final class Forest {
    var id: Id = 0
    var tree = Tree()
}

/// `Codable` properties (SPEC.md §11.4): arrays, sets, dictionaries and structs, stored whole in
/// a compact canonical form; equality, `contains` and `count` conditions; schema evolution of a
/// struct; typed errors for stored values of the wrong shape or damaged bytes.
@Suite struct CodableValueTests {
    static func sample(_ i: Int) -> Profile {
        let p = Profile()
        p.tags = (0..<(i % 4)).map { "t\($0 + i % 3)" }
        p.scores = Set((0..<(i % 5)).map { $0 * 7 % 11 })
        p.weights = i % 2 == 0 ? ["a": 1.5, "b": -2, "ü": Double(i)] : [:]
        p.byKey = i % 3 == 0 ? [UUID(uuidString: "00000000-0000-0000-0000-00000000000\(i % 10)")!: i] : [:]
        p.address = PostalAddress(street: "Main \(i)", zip: 10_000 + i, geo: i % 2 == 0 ? Geo(lat: 1, lon: Double(i)) : nil)
        p.previous = i % 3 == 1 ? PostalAddress(street: "Old \(i)", zip: i) : nil
        p.history = (0..<(i % 3)).map { PostalAddress(street: "H\($0)", zip: $0) }
        return p
    }

    /// A value nested deeper than a reader accepts (64 levels) is refused at put, with a typed
    /// error and nothing written: it used to be stored and then never read again.
    @Test func aValueNestedPastTheReadersLimitIsRefusedAtPut() throws {
        let dir = TemporaryDirectory()
        let store = try Store(directoryPath: dir.path, options: .testing())
        defer { store.close() }
        let box = store.box(for: Forest.self)
        let deepest = Forest()
        deepest.tree = Tree.chain(32)   // 63 deep: the most a reader takes
        try box.put(deepest)
        #expect(try box.get(deepest.id)?.tree == Tree.chain(32))
        let tooDeep = Forest()
        tooDeep.tree = Tree.chain(33)
        #expect {
            try box.put(tooDeep)
        } throws: { error in
            guard case let StrataError.invalidValue(entity, _, _, reason) = error else { return false }
            return entity == "Forest" && reason.contains("nested more than 64 deep")
        }
        #expect(try box.count() == 1)
        #expect(try box.all().map(\.tree) == [Tree.chain(32)])
    }

    @Test func valuesRoundTripIncludingNilAndEmpty() throws {
        let dir = TemporaryDirectory()
        var ids: [Id] = []
        do {
            let store = try Store(directoryPath: dir.path, options: .testing())
            defer { store.close() }
            ids = try store.box(for: Profile.self).put((0..<30).map(Self.sample))
        }
        let store = try Store(directoryPath: dir.path, options: .testing())
        defer { store.close() }
        let box = store.box(for: Profile.self)
        for (i, id) in ids.enumerated() {
            let p = try #require(try box.get(id))
            let e = Self.sample(i)
            #expect(p.tags == e.tags && p.scores == e.scores && p.weights == e.weights && p.byKey == e.byKey)
            #expect(p.address == e.address && p.previous == e.previous && p.history == e.history)
        }
    }

    @Test func equalSetsAndDictionariesStoreEqualBytes() throws {
        var a = Set<Int>(), b = Set<Int>()
        for i in 0..<200 { a.insert(i * 31 % 1_000) }
        for i in (0..<200).reversed() { b.insert(i * 31 % 1_000) }
        #expect(try CompactValueEncoder.encode(a).encoded() == CompactValueEncoder.encode(b).encoded())
        var d1: [String: Int] = [:], d2: [String: Int] = [:]
        for i in 0..<100 { d1["k\(i)"] = i }
        for i in (0..<100).reversed() { d2["k\(i)"] = i }
        #expect(try CompactValueEncoder.encode(d1).encoded() == CompactValueEncoder.encode(d2).encoded())
        let u1 = Dictionary(uniqueKeysWithValues: (0..<50).map { (UUID(), $0) })
        let u2 = Dictionary(uniqueKeysWithValues: u1.shuffled().map { ($0.key, $0.value) })
        #expect(try CompactValueEncoder.encode(u1).encoded() == CompactValueEncoder.encode(u2).encoded())
    }

    @Test func queriesOnArraysSetsAndStructs() throws {
        let dir = TemporaryDirectory()
        let store = try Store(directoryPath: dir.path, options: .testing())
        defer { store.close() }
        let box = store.box(for: Profile.self)
        let all = (0..<60).map(Self.sample)
        try box.put(all)
        func ids(_ q: Query<Profile>) throws -> Set<Id> { Set(try q.findIds()) }
        let expectContains = Set(all.filter { $0.tags.contains("t1") }.map(\.id))
        #expect(try ids(box.query { Profile.tags.contains("t1") }.build()) == expectContains)
        #expect(try ids(box.query { Profile.scores.contains(7) }.build()) == Set(all.filter { $0.scores.contains(7) }.map(\.id)))
        #expect(try ids(box.query { Profile.tags.count >= 2 }.build()) == Set(all.filter { $0.tags.count >= 2 }.map(\.id)))
        #expect(try ids(box.query { Profile.scores.count == 0 }.build()) == Set(all.filter { $0.scores.isEmpty }.map(\.id)))
        let address = all[7].address
        #expect(try ids(box.query { Profile.address == address }.build()) == Set(all.filter { $0.address == address }.map(\.id)))
        let set: Set<Int> = [7, 3, 0, 10]
        #expect(try ids(box.query { Profile.scores == set }.build()) == Set(all.filter { $0.scores == set }.map(\.id)))
        #expect(try ids(box.query { Profile.previous.isNil() && Profile.tags.count > 0 }.build())
                == Set(all.filter { $0.previous == nil && !$0.tags.isEmpty }.map(\.id)))
    }

    /// A struct that gained fields reads its old values as before, and the new fields as nil or
    /// their type's zero value; a property whose stored shape no longer fits is a typed error
    /// naming entity and id.
    @Test func aStructThatGainedFieldsReadsOldValues() throws {
        let dir = TemporaryDirectory()
        var id: Id = 0
        do {
            let store = try Store(directoryPath: dir.path, options: .testing())
            defer { store.close() }
            id = try store.box(for: Profile.self).put(Self.sample(4))
        }
        let store = try Store(directoryPath: dir.path, options: .testing())
        defer { store.close() }
        let p = try #require(try store.box(for: ProfileV2.self).get(id))
        #expect(p.address.street == "Main 4" && p.address.zip == 10_004 && p.address.geo == Geo(lat: 1, lon: 4))
        #expect(p.address.city == "" && p.address.floor == 0 && p.address.tags == [] && p.address.note == nil)
        #expect(p.address.location == Geo())
        #expect(p.tags == Self.sample(4).tags)
    }

    @Test func aStoredValueOfTheWrongShapeIsATypedError() throws {
        let dir = TemporaryDirectory()
        var id: Id = 0
        do {
            let store = try Store(directoryPath: dir.path, options: .testing())
            defer { store.close() }
            id = try store.box(for: Profile.self).put(Self.sample(3))
        }
        let store = try Store(directoryPath: dir.path, options: .testing())
        defer { store.close() }
        #expect {
            try store.box(for: ProfileWrongShape.self).get(id)
        } throws: { error in
            guard case let .corruptObject(entity, errorId, reason)? = error as? StrataError else { return false }
            return entity == "Profile" && errorId == id && reason.contains("Int")
        }
    }

    @Test func craftedBytesAreTypedErrors() throws {
        for value in [CompactValue.null, .bool(true), .int(-5), .uint(7), .double(1.5), .string("é"),
                      .array([.int(1), .string("x")]), .keyed([("a", .int(1)), ("b", .array([]))])] {
            #expect(try value.encoded().withUnsafeBytes { try CompactValue.parse($0) } == value)
        }
        let bad: [[UInt8]] = [[], [9], [3], [3, 0x80], [5, 1, 2], [6, 5, 0x61], [6, 1, 0xFF], [7, 3, 0], [7, 0xFF, 0xFF, 0xFF, 0xFF, 0x0F],
                              [8, 2, 1, 0x62, 0, 1, 0x61, 0], [8, 2, 1, 0x61, 0, 1, 0x61, 0], [0, 0],
                              [UInt8](repeating: 7, count: 100) + [0]]
        for b in bad {
            #expect(throws: CodecFailure.self, "\(b)") { try b.withUnsafeBytes { try CompactValue.parse($0) } }
        }
        var r = SplitMix64(state: 3)
        for _ in 0..<20_000 {
            var b = [UInt8](repeating: 0, count: 1 + r.below(16))
            for i in b.indices { b[i] = UInt8(r.below(12)) }
            if let v = try? b.withUnsafeBytes({ try CompactValue.parse($0) }) {
                // What parses is canonical: it writes back the same bytes, except doubles' NaNs.
                _ = try? v.encoded()
                _ = try? CompactValueDecoder.decode(PostalAddressV2.self, from: v)
            }
        }
    }

    @Test func storedObjectsAndPutStoredObjectsCarryCodableValues() throws {
        let dir = TemporaryDirectory()
        let store = try Store(directoryPath: dir.path, options: .testing())
        defer { store.close() }
        let box = store.box(for: Profile.self)
        let id = try box.put(Self.sample(2))
        var seen: [StoredObject] = []
        try store.storedObjects(of: "Profile") { seen.append($0); return true }
        let values = Dictionary(uniqueKeysWithValues: try #require(seen.first).values.map { ($0.name, $0.value) })
        #expect(values["tags"] == .codable(.array([.string("t2"), .string("t3")])))
        #expect(values["address"] == .codable(.keyed([("geo", .keyed([("lat", .double(1)), ("lon", .double(2))])),
                                                       ("street", .string("Main 2")), ("zip", .int(10_002))])))
        try store.putStoredObjects([StoredObject(id: id, values: [("tags", .codable(.array([.string("z")])))])], of: "Profile")
        #expect(try box.get(id)?.tags == ["z"])
    }

    /// Change sets name objects whose Codable properties changed, and a live query on them
    /// follows commits (issue 40).
    @Test func changeSetsAndLiveQueriesFollowCodableProperties() throws {
        let dir = TemporaryDirectory()
        let store = try Store(directoryPath: dir.path, options: .testing())
        defer { store.close() }
        let box = store.box(for: Profile.self)
        let p = Self.sample(1)
        try box.put(p)
        let updated = Locked<Set<Id>>([])
        let token = try store.subscribe(to: Profile.self) { changes in updated.withLock { $0.formUnion(changes[Profile.self].updated) } }
        let query = try box.query { Profile.tags.contains("swift") }.build()
        let seen = Locked<[[Id]]>([])
        let queryToken = try query.subscribe { result in
            if case let .success(list) = result { seen.withLock { $0.append(list.map(\.id)) } }
        }
        p.tags.append("swift")
        p.address.street = "Elm 1"
        try box.put(p)
        let deadline = Date().addingTimeInterval(10)
        while (updated.withLock { $0 }.isEmpty || seen.withLock { $0.last } != [p.id]) && Date() < deadline { usleep(2_000) }
        #expect(updated.withLock { $0 } == [p.id])
        #expect(seen.withLock { $0.last } == [p.id])
        token.cancel()
        queryToken.cancel()
    }
}
