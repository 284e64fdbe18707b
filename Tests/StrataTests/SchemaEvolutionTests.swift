import Foundation
import Strata
import StrataStorage
import Testing

// Successive versions of one entity, as an app would declare it release after release. Each is
// used with its own open of the same store directory.

@Entity(name: "Person")
struct PersonV1 {
    var id: Id = 0
    var name = ""
    var mail = ""
    var age = 0
    var nickname: String? = nil
}

@Entity(name: "Person")
struct PersonV2 {
    var id: Id = 0
    var name = ""
    @Renamed(from: "mail") var email = ""   // renamed: keeps its data
    var city = "Paris"                       // new: old objects read the default
    // `age` removed: ignored in old objects
    var nickname: String? = "none"           // nil stored stays nil, not the new default
}

@Entity(name: "Person")
struct PersonV3 {
    var id: Id = 0
    var name = ""
    var email = 0                            // changed type: refused
}

@Entity(name: "Person")
struct PersonV4 {
    var id: Id = 0
    var name = ""
    var age: String = ""                     // a new property reusing a removed name: starts fresh
}

@Suite struct SchemaEvolutionTests {
    @Test func addRemoveRenameAndChangeType() throws {
        let dir = TemporaryDirectory()
        do {
            let store = try Store(directoryPath: dir.path, options: .testing())
            try store.box(for: PersonV1.self).put(PersonV1(name: "Ada", mail: "ada@x", age: 36))
            store.close()
        }
        do {
            let store = try Store(directoryPath: dir.path, options: .testing())
            let people = store.box(for: PersonV2.self)
            let ada = try #require(try people.get(1))
            #expect(ada.name == "Ada" && ada.email == "ada@x" && ada.city == "Paris" && ada.nickname == nil)
            try people.put(PersonV2(name: "Bob", email: "bob@x", city: "Oslo", nickname: "B"))
            store.close()
        }
        do {
            let store = try Store(directoryPath: dir.path, options: .testing())
            let people = store.box(for: PersonV3.self)
            #expect(throws: StrataError.schemaMismatch(entity: "Person", property: "email", stored: "String", declared: "Int64")) {
                try people.all()
            }
            #expect(throws: StrataError.self) { try people.put(PersonV3(name: "Eve")) }
            store.close()
        }
        do {
            let store = try Store(directoryPath: dir.path, options: .testing())
            let people = store.box(for: PersonV4.self)
            // Ada's old Int age (36) must not be read as this new String property.
            #expect(try people.all().map { "\($0.name):\($0.age)" } == ["Ada:", "Bob:"])
            store.close()
        }
        // Back to V2: V4 removed email and city, and a removed property never comes back
        // (its id is retired), so they read as V2's defaults; name and nickname are intact.
        let store = try Store(directoryPath: dir.path, options: .testing())
        let all = try store.box(for: PersonV2.self).all()
        #expect(all.map(\.name) == ["Ada", "Bob"])
        #expect(all.map(\.email) == ["", ""])
        #expect(all.map(\.city) == ["Paris", "Paris"])
        #expect(all.map(\.nickname) == ["none", "none"])
    }

    @Test func twoTypesCannotShareAnEntityName() throws {
        let dir = TemporaryDirectory()
        let store = try Store(directoryPath: dir.path, options: .testing())
        try store.box(for: PersonV1.self).put(PersonV1(name: "x"))
        #expect(throws: StrataError.duplicateEntityName("Person")) { try store.box(for: PersonV2.self).count() }
    }

    @Test func aStoreFromANewerFormatIsRefused() throws {
        let dir = TemporaryDirectory()
        try Store(directoryPath: dir.path, options: .testing()).close()
        // Stamp a future object-format version into the catalog through the engine's API.
        do {
            let engine = try Engine.open(directory: dir.path)
            var batch = WriteBatch()
            batch.put([1], [99, 0, 0, 0], in: try engine.keySpace(named: "meta"))
            try engine.write(batch)
            engine.close()
        }
        #expect(throws: StrataError.unsupportedFormatVersion(found: 99, supported: 5)) {
            try Store(directoryPath: dir.path, options: .testing())
        }
    }
}

@Suite struct FormatUpgradeTests {
    /// A version 1 store kept no object counts: a read-only open counts by iterating; the first
    /// writable open records the counts and the new version.
    @Test func version1StoresGetTheirCounts() throws {
        let dir = TemporaryDirectory()
        do {
            let store = try Store(directoryPath: dir.path, options: .testing())
            try store.box(for: Note.self).put((0..<7).map { Note(text: "\($0)") })
            store.close()
        }
        do {   // turn it into a version 1 store
            let engine = try Engine.open(directory: dir.path)
            let meta = try engine.keySpace(named: "meta")
            var batch = WriteBatch()
            batch.put([1], [1, 0, 0, 0], in: meta)
            batch.delete([4, 0, 0, 0, 1], in: meta)
            try engine.write(batch)
            engine.close()
        }
        var readOnly = StoreOptions.testing()
        readOnly.readOnly = true
        do {
            let store = try Store(directoryPath: dir.path, options: readOnly)
            #expect(try store.box(for: Note.self).count() == 7)
            store.close()
        }
        let store = try Store(directoryPath: dir.path, options: .testing())
        #expect(try store.box(for: Note.self).count() == 7)
        try store.box(for: Note.self).remove(1)
        #expect(try store.box(for: Note.self).count() == 6)
    }
    /// A record lists every id from 1 to its last one (SPEC.md §11.2). A crafted record that
    /// claims a last id of 2^28 with four properties would have the decoders size their
    /// id-indexed maps at 1 GiB; it is refused as a damaged catalog instead, and so is a gap.
    @Test(arguments: [[0x80, 0x80, 0x80, 0x80, 0x01], [5]] as [[UInt8]])
    func aRecordWhoseIdsAreNotOneToLastIsRefused(last: [UInt8]) throws {
        let dir = TemporaryDirectory()
        do {
            let store = try Store(directoryPath: dir.path, options: .testing())
            try store.box(for: PersonV1.self).put(PersonV1(name: "Ada"))
            store.close()
        }
        let key: [UInt8] = [2, 0, 0, 0, 1]   // MetaKey.entity, entity 1
        do {
            let engine = try Engine.open(directory: dir.path, options: EngineOptions())
            let meta = try #require(engine.existingKeySpace(named: "meta") as KeySpace?)
            var record = try #require(try engine.get(key, in: meta))
            // version · flags · name ("Person") · lastPropertyId (4) · count (4) · properties
            let at = 2 + 1 + 6
            #expect(Array(record[at...at + 1]) == [4, 4])
            record.replaceSubrange(at...at, with: last)
            var batch = WriteBatch()
            batch.put(key, record, in: meta)
            try engine.write(batch, durability: .sync)
            engine.close()
        }
        #expect(throws: StrataError.corruptCatalog(reason: "entity record 1 does not parse")) {
            try Store(directoryPath: dir.path, options: .testing())
        }
    }
    /// An object count near 2^64, or one lower than the objects stored, is a typed error where
    /// it is read, never an overflow trap (the count is added to a transaction's delta as Int64).
    @Test(arguments: [UInt64.max, 1 << 62, 0])
    func aCraftedObjectCountIsATypedError(count: UInt64) throws {
        let dir = TemporaryDirectory()
        do {
            let store = try Store(directoryPath: dir.path, options: .testing())
            try store.box(for: PersonV1.self).put([PersonV1(name: "Ada"), PersonV1(name: "Bob")])
            store.close()
        }
        do {
            let engine = try Engine.open(directory: dir.path, options: EngineOptions())
            let meta = try #require(engine.existingKeySpace(named: "meta") as KeySpace?)
            var batch = WriteBatch()
            batch.put([4, 0, 0, 0, 1], withUnsafeBytes(of: count.littleEndian) { Array($0) }, in: meta)   // MetaKey.count, entity 1
            try engine.write(batch, durability: .sync)
            engine.close()
        }
        let store = try Store(directoryPath: dir.path, options: .testing())
        let people = store.box(for: PersonV1.self)
        if count == 0 {
            // Removing one of the two objects the count says are not there: below 0.
            #expect(throws: StrataError.corruptCatalog(reason: "object count of entity 1 would be -1")) {
                try store.runInTransaction {
                    try people.remove(1)
                    _ = try people.count()
                }
            }
            #expect(try people.count() == 0)
            #expect(try store.verifyGraph().problems.map(\.reason) == ["the catalog counts 0 objects, 2 are stored"])
        } else {
            let reason = "object count of entity 1 is \(count), past the limit"
            #expect(throws: StrataError.corruptCatalog(reason: reason)) { try people.count() }
            #expect(throws: StrataError.corruptCatalog(reason: reason)) { try people.put(PersonV1(name: "Eve")) }
            #expect(throws: StrataError.corruptCatalog(reason: reason)) { try store.verifyGraph() }
        }
        #expect(try people.all().map(\.name) == ["Ada", "Bob"], "nothing written")
    }
}

/// An entity record stored under entity id 0 or 2^32 - 1 (which Strata never writes; the next
/// id would overflow) is a typed error at open, not a trap in every `Store.init`.
@Suite struct CraftedEntityIdTests {
    @Test(arguments: [UInt32.max, 0])
    func anEntityIdOutOfRangeIsATypedError(entityId: UInt32) throws {
        let dir = TemporaryDirectory()
        do {
            let store = try Store(directoryPath: dir.path, options: .testing())
            try store.box(for: PersonV1.self).put(PersonV1(name: "Ada"))
            store.close()
        }
        do {
            let engine = try Engine.open(directory: dir.path, options: EngineOptions())
            let meta = try #require(engine.existingKeySpace(named: "meta") as KeySpace?)
            let record = try #require(try engine.get([2, 0, 0, 0, 1], in: meta))   // MetaKey.entity, entity 1
            var batch = WriteBatch()
            batch.put([2] + withUnsafeBytes(of: entityId.bigEndian) { Array($0) }, record, in: meta)
            try engine.write(batch, durability: .sync)
            engine.close()
        }
        #expect(throws: StrataError.corruptCatalog(reason: "entity id \(entityId) is out of range")) {
            try Store(directoryPath: dir.path, options: .testing())
        }
    }
}
