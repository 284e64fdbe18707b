import Foundation
import Strata
import StrataTestSupport
import Synchronization
import Testing

/// Embedded objects held by a `ToMany` are edited through their parent (issue 55): putting the
/// parent, or `applyToDb()`, writes the elements that changed, as it does for a `ToOne`.
@Suite struct EmbeddedEditTests {
    @Test func puttingTheParentWritesItsEditedEmbeddedElements() throws {
        let dir = TemporaryDirectory()
        let store = try Store(directoryPath: dir.path)
        defer { store.close() }
        let businesses = store.box(for: Business.self)
        let shop = Business(name: "Shop")
        shop.addresses.append(Address(street: "1 Main St", city: "Springfield"))
        shop.addresses.append(Address(street: "2 Side St", city: "Shelbyville"))
        try businesses.put(shop)

        let updates = Mutex<[Set<Id>]>([])
        let token = try store.subscribe(to: Address.self) { changes in updates.withLock { $0.append(changes[Address.self].updated) } }
        defer { token.cancel() }

        // Read back, edit one element in place, put the parent.
        let copy = try #require(try businesses.get(shop.id))
        copy.addresses[0].city = "Capital City"
        try businesses.put(copy)
        var stored = try #require(try businesses.get(shop.id)).addresses.map { "\($0.street), \($0.city)" }
        #expect(stored == ["1 Main St, Capital City", "2 Side St, Shelbyville"])
        // Only the edited element was written.
        let deadline = Date().addingTimeInterval(10)
        while updates.withLock({ $0.isEmpty }) && Date() < deadline { usleep(5_000) }
        #expect(updates.withLock { $0 } == [[copy.addresses[0].id]])

        // applyToDb() writes edits too.
        copy.addresses[1].street = "22 Side St"
        try copy.addresses.applyToDb()
        stored = try #require(try businesses.get(shop.id)).addresses.map { "\($0.street), \($0.city)" }
        #expect(stored == ["1 Main St, Capital City", "22 Side St, Shelbyville"])

        // New, edited and removed in one put.
        let removed = copy.addresses[0].id
        copy.addresses.remove(at: 0)
        copy.addresses[0].city = "Ogdenville"
        copy.addresses.append(Address(street: "3 New St", city: "North Haverbrook"))
        try businesses.put(copy)
        stored = try #require(try businesses.get(shop.id)).addresses.map { "\($0.street), \($0.city)" }
        #expect(stored == ["22 Side St, Ogdenville", "3 New St, North Haverbrook"])
        #expect(try store.box(for: Address.self).count() == 2)
        #expect(try store.box(for: Address.self).get(removed) == nil)
        #expect(try store.verifyGraph().isClean)
        // A direct put of an embedded object is still refused: it is edited through its parent.
        #expect(throws: StrataError.self) { try store.box(for: Address.self).put(copy.addresses[0]) }
    }

    /// Elements of a to-many that are not embedded are objects of their own: editing one in
    /// place and putting the owner leaves it as stored (put it to write it).
    @Test func aPlainToManysElementsAreNotWrittenByTheOwnersPut() throws {
        let dir = TemporaryDirectory()
        let store = try Store(directoryPath: dir.path)
        defer { store.close() }
        let ann = Student(name: "Ann")
        let teacher = Teacher(name: "Hopper")
        ann.teachers.append(teacher)
        try store.box(for: Student.self).put(ann)
        let copy = try #require(try store.box(for: Student.self).get(ann.id))
        copy.teachers[0].name = "Lovelace"
        try store.box(for: Student.self).put(copy)
        #expect(try store.box(for: Teacher.self).get(teacher.id)?.name == "Hopper")
    }
}
