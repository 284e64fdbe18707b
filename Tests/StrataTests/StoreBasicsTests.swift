import Foundation
import Strata
import Testing

@Suite struct StoreBasicsTests {
    @Test func putGetUpdateRemove() throws {
        let dir = TemporaryDirectory()
        let store = try Store(directoryPath: dir.path + "/nested/store")   // creates missing parents
        let customers = store.box(for: Customer.self)
        #expect(try customers.isEmpty())

        let ada = Customer(name: "Ada", email: "ada@example.com")
        ada.scratch = 42
        let id = try customers.put(ada)
        #expect(id == 1 && ada.id == 1)

        let read = try #require(try customers.get(id))
        #expect(read.name == "Ada" && read.email == "ada@example.com")
        #expect(read.scratch == 0)   // transient: not stored

        read.email = nil
        read.name = "Ada L."
        #expect(try customers.put(read) == id)
        let again = try #require(try customers.get(id))
        #expect(again.name == "Ada L." && again.email == nil)
        #expect(try customers.count() == 1)
        #expect(try customers.contains(id))

        #expect(try customers.remove(id))
        #expect(try customers.remove(id) == false)
        #expect(try customers.get(id) == nil)
        #expect(try customers.isEmpty())
        store.close()
    }

    @Test func structsGetTheirIdThroughInout() throws {
        let dir = TemporaryDirectory()
        let store = try Store(directoryPath: dir.path, options: .testing())
        let notes = store.box(for: Note.self)
        var note = Note(text: "hello")
        try notes.put(&note)
        #expect(note.id == 1)
        let copy = Note(text: "copy")
        #expect(try notes.put(copy) == 2)
        #expect(copy.id == 0)   // a struct passed by value keeps its id
        var batch = [Note(text: "a"), Note(text: "b")]
        #expect(try notes.put(&batch) == [3, 4])
        #expect(batch.map(\.id) == [3, 4])
        #expect(try notes.all().map(\.text) == ["hello", "copy", "a", "b"])
    }

    @Test func manyGetsReturnTheStoredOnesInOrder() throws {
        let dir = TemporaryDirectory()
        let store = try Store(directoryPath: dir.path, options: .testing())
        let customers = store.box(for: Customer.self)
        let ids = try customers.put([Customer(name: "a"), Customer(name: "b"), Customer(name: "c")])
        #expect(ids == [1, 2, 3])
        try customers.remove(2)
        #expect(try customers.get([3, 2, 1, 99]).map(\.name) == ["c", "a"])
        #expect(try customers.remove([1, 2, 3]) == 2)
    }

    @Test func idsIncreaseAndAreNeverReused() throws {
        let dir = TemporaryDirectory()
        do {
            let store = try Store(directoryPath: dir.path, options: .testing())
            let notes = store.box(for: Note.self)
            for i in 1...5 { #expect(try notes.put(Note(text: "\(i)")) == Id(i)) }
            try notes.remove(5)
            #expect(try notes.removeAll() == 4)
            #expect(try notes.put(Note(text: "six")) == 6)
            store.close()
        }
        let store = try Store(directoryPath: dir.path, options: .testing())
        let notes = store.box(for: Note.self)
        try notes.remove(6)
        #expect(try notes.put(Note(text: "seven")) == 7)
        #expect(try notes.count() == 1)
    }

    @Test func putModes() throws {
        let dir = TemporaryDirectory()
        let store = try Store(directoryPath: dir.path, options: .testing())
        let notes = store.box(for: Note.self)
        var stray = Note(id: 40, text: "stray")
        #expect(throws: StrataError.objectNotFound(entity: "Note", id: 40)) { try notes.put(stray) }
        #expect(try notes.count() == 0)
        #expect(try notes.put(&stray, mode: .insert) == 40)
        #expect(throws: StrataError.objectExists(entity: "Note", id: 40)) { try notes.put(stray, mode: .insert) }
        #expect(try notes.put(Note(text: "next")) == 41)   // new ids start above an inserted one
        #expect(throws: StrataError.invalidId(entity: "Note")) { try notes.put(Note(text: "x"), mode: .update) }
        stray.text = "updated"
        try notes.put(stray, mode: .update)
        #expect(try notes.get(40)?.text == "updated")
    }

    @Test func invalidInputGetsTypedErrors() throws {
        let dir = TemporaryDirectory()
        let store = try Store(directoryPath: dir.path, options: .testing())
        let notes = store.box(for: Note.self)
        #expect(throws: StrataError.invalidId(entity: "Note")) { try notes.get(0) }
        #expect(throws: StrataError.invalidId(entity: "Note")) { try notes.get([1, 0]) }
        #expect(throws: StrataError.invalidId(entity: "Note")) { try notes.remove(0) }
        #expect(throws: StrataError.invalidId(entity: "Note")) { try notes.contains(0) }
        store.close()
        #expect(throws: StrataError.storeClosed) { try notes.put(Note(text: "late")) }
        #expect(throws: StrataError.storeClosed) { try notes.get(1) }
        #expect(throws: StrataError.storeClosed) { try notes.count() }
        #expect(throws: StrataError.storeClosed) { try store.runInTransaction {} }
        #expect(throws: StrataError.storeClosed) { try store.box(for: Customer.self).all() }
    }

    @Test func secondStoreOnTheSameDirectoryIsRefused() throws {
        let dir = TemporaryDirectory()
        let store = try Store(directoryPath: dir.path, options: .testing())
        #expect {
            _ = try Store(directoryPath: dir.path, options: .testing())
        } throws: { error in
            guard case StrataError.storage(let e) = error, case .locked = e else { return false }
            return "\(error)".contains("locked")
        }
        store.close()
        let reopened = try Store(directoryPath: dir.path, options: .testing())
        reopened.close()
    }
}

@Suite struct ReadOnlyStoreTests {
    @Test func readOnlyStoreReadsAndRefusesWrites() throws {
        let dir = TemporaryDirectory()
        do {
            let store = try Store(directoryPath: dir.path, options: .testing())
            try store.box(for: Note.self).put(Note(text: "kept"))
            store.close()
        }
        var options = StoreOptions.testing()
        options.readOnly = true
        let store = try Store(directoryPath: dir.path, options: options)
        let notes = store.box(for: Note.self)
        #expect(try notes.all().map(\.text) == ["kept"])
        #expect(throws: StrataError.readOnly) { try notes.put(Note(text: "no")) }
        #expect(throws: StrataError.readOnly) { try notes.remove(1) }
        #expect(throws: StrataError.readOnly) { try store.runInTransaction {} }
        #expect(throws: StrataError.readOnly) { try store.compact() }
        // An entity the store never saw reads as empty, and nothing is written for it.
        #expect(try store.box(for: Customer.self).count() == 0)
        // Readers share the store; a writer is kept out while they hold it.
        let second = try Store(directoryPath: dir.path, options: options)
        #expect(try second.box(for: Note.self).count() == 1)
        #expect(throws: StrataError.self) { try Store(directoryPath: dir.path, options: .testing()) }
    }

    @Test func readOnlyOpenOfAMissingStoreFails() throws {
        let dir = TemporaryDirectory()
        var options = StoreOptions()
        options.readOnly = true
        #expect(throws: StrataError.storage(.notAStore(path: dir.path))) { try Store(directoryPath: dir.path, options: options) }
    }
}

/// `StoreOptions.fileMode`/`directoryMode`: the owner alone by default, or what the app asks.
@Suite struct StorePermissionTests {
    static func mode(_ path: String) throws -> Int {
        (try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? NSNumber)?.intValue ?? -1
    }

    @Test func filesAreTheOwnersAloneUnlessAskedOtherwise() throws {
        let root = TemporaryDirectory()
        let own = root.path + "/own", shared = root.path + "/shared"
        let store = try Store(directoryPath: own)
        try store.box(for: Note.self).put(Note(text: "private"))
        store.close()
        #expect(try Self.mode(own) == 0o700)
        for name in try FileManager.default.contentsOfDirectory(atPath: own) { #expect(try Self.mode(own + "/" + name) == 0o600, "\(name)") }
        var options = StoreOptions()
        options.fileMode = 0o640
        options.directoryMode = 0o750
        #expect(options.fileMode == 0o640)
        let other = try Store(directoryPath: shared, options: options)
        try other.box(for: Note.self).put(Note(text: "team"))
        other.close()
        #expect(try Self.mode(shared) == 0o750)
        for name in try FileManager.default.contentsOfDirectory(atPath: shared) { #expect(try Self.mode(shared + "/" + name) == 0o640, "\(name)") }
    }
}
