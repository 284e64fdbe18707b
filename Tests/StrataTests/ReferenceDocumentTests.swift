import Foundation
import Strata
import Testing

/// The Realm and AutoDB relationship documents' examples, in Strata (the ObjectBox document's
/// examples are in RelationTests).
@Suite struct ReferenceDocumentTests {
    /// Realm: "Setting a relationship field to null removes the connection between objects.
    /// Realm does not delete the referenced object"; to-many; automatic inverse relationships.
    @Test func realmPersonAndDogs() throws {
        let dir = TemporaryDirectory()
        let store = try Store(directoryPath: dir.path, options: .testing())
        let people = store.box(for: Person.self)
        let rex = Dog(name: "Rex"), fido = Dog(name: "Fido")
        let ann = Person(name: "Ann"), bob = Person(name: "Bob")
        ann.companion.target = rex
        ann.dogs.append(contentsOf: [rex, fido])
        bob.dogs.append(rex)
        try people.put([ann, bob])

        // The inverse relationship was updated automatically.
        #expect(try store.box(for: Dog.self).get(rex.id)?.owners.map(\.name) == ["Ann", "Bob"])
        #expect(try store.box(for: Dog.self).get(fido.id)?.owners.map(\.name) == ["Ann"])

        // Null removes the connection, not the dog.
        ann.companion = nil
        try people.put(ann)
        #expect(try people.get(ann.id)?.companion.target == nil)
        #expect(try store.box(for: Dog.self).count() == 2)

        // Removing a dog from a list updates the inverse side.
        let storedAnn = try #require(try people.get(ann.id))
        storedAnn.dogs.removeAll { $0.name == "Rex" }
        try storedAnn.dogs.applyToDb()
        #expect(try store.box(for: Dog.self).get(rex.id)?.owners.map(\.name) == ["Bob"])
    }

    /// AutoDB: `art.album` fetched on request, `_object == nil` before, a relation set to a new
    /// object and saved, and `arts.fetchAll(\.album)` to fetch a whole list's relations at once.
    @Test func autoDBAlbumArt() throws {
        let dir = TemporaryDirectory()
        let store = try Store(directoryPath: dir.path, options: .testing())
        let arts = store.box(for: AlbumArt.self)
        for i in 0..<5 {
            let art = AlbumArt()
            art.data = Data([UInt8(i)])
            art.album.target = Album(name: "Album \(i)", artist: "Artist")   // setObject on a new album
            try arts.put(art)                                                 // saveChanges
        }
        let art = try #require(try arts.get(1))
        #expect(!art.album.isTargetLoaded)                  // `art.album._object == nil`
        let album = try art.album.resolveTarget()           // `try await art.album.object`
        #expect(album?.name == "Album 0" && art.album.isTargetLoaded)

        let all = try arts.all()
        let before = store.statistics()
        try arts.prefetch(\.album, for: all)                // `try await arts.fetchAll(\.album)`
        #expect(store.statistics().objectsRead - before.objectsRead == 5)
        #expect(all.map { $0.album.target?.name ?? "" } == (0..<5).map { "Album \($0)" })
    }

    /// AutoDB: "we don't want the engine to auto-fetch any children, rather when the time is
    /// right we want to tell it to fetch" — `parent.children.fetch()`, then loop over the items.
    @Test func autoDBParentAndChildren() throws {
        let dir = TemporaryDirectory()
        let store = try Store(directoryPath: dir.path, options: .testing())
        let parent = Parent(name: "P")
        try store.box(for: Child.self).put([Child(name: "a", parent: parent), Child(name: "b", parent: parent)])
        let stored = try #require(try store.box(for: Parent.self).get(parent.id))
        let before = store.statistics()
        #expect(!stored.children.isResolved)                // nothing fetched by reading the parent
        #expect(store.statistics() == before)
        try stored.children.load()                          // `try await parent.children.fetch()`
        #expect(stored.children.map(\.name) == ["a", "b"])
    }
}
