import Foundation
import Strata
import StrataStorage
import StrataTestSupport
import Testing

/// Encryption at rest through the object layer (issue 57): objects, relations, indexes and
/// queries of an encrypted store; the typed errors; a key change on an open store; a backup, an
/// archive and a replica of an encrypted store.
@Suite struct StoreEncryptionTests {
    static let key = Data((0..<32).map { UInt8($0 ^ 0xA5) })
    static let otherKey = Data(repeating: 0x42, count: 32)

    static func options(_ key: Data?) -> StoreOptions {
        var o = StoreOptions.testing(memtableBytes: 16 << 10)
        o.encryptionKey = key
        return o
    }

    static func fill(_ store: Store) throws {
        try store.runInTransaction {
            for b in 0..<20 {
                let buyer = Buyer(name: "buyer-\(b)")
                try store.box(for: Purchase.self).put((0..<10).map { Purchase(summary: "purchase \(b)-\($0)", buyer: buyer) })
            }
            let customers = store.box(for: Customer.self)
            for i in 0..<300 {
                try customers.put(Customer(name: "customer-\(i)", email: "c\(i)@example.com"))
            }
        }
        try store.compact()
        try store.box(for: Note.self).put(Note(text: "only in the log"))
    }

    static func expectGraph(_ store: Store) throws {
        #expect(try store.box(for: Purchase.self).count() == 200)
        let buyers = try store.box(for: Buyer.self).all()
        #expect(buyers.count == 20)
        for b in buyers { #expect(b.purchases.count == 10, "\(b.name)") }
        let found = try store.box(for: Customer.self).query { Customer.email == "c42@example.com" }.build().find()
        #expect(found.map(\.name) == ["customer-42"])
        #expect(try store.box(for: Customer.self).query { Customer.name.startsWith("customer-29") }.build().count() == 11)
        #expect(try store.box(for: Note.self).all().map(\.text) == ["only in the log"])
        #expect(try store.verifyGraph().problems.isEmpty)
    }

    @Test func anEncryptedStoreKeepsItsGraphIndexesAndQueries() throws {
        let dir = TemporaryDirectory()
        do {
            let store = try Store(directoryPath: dir.path, options: Self.options(Self.key))
            try Self.fill(store)
            try Self.expectGraph(store)
            store.close()
        }
        let store = try Store(directoryPath: dir.path, options: Self.options(Self.key))
        try Self.expectGraph(store)
        store.close()
        // No email, name or summary is in any file.
        for name in try FileManager.default.contentsOfDirectory(atPath: dir.path) {
            let bytes = try Data(contentsOf: URL(fileURLWithPath: dir.path + "/" + name))
            for needle in ["@example.com", "customer-", "purchase ", "only in the log", "buyer-"] {
                #expect(bytes.range(of: Data(needle.utf8)) == nil, "\(name) holds \(needle)")
            }
        }
    }

    @Test func aKeyThatDoesNotOpenTheStoreIsATypedError() throws {
        let dir = TemporaryDirectory(), plain = TemporaryDirectory()
        try Store(directoryPath: dir.path, options: Self.options(Self.key)).close()
        try Store(directoryPath: plain.path, options: Self.options(nil)).close()
        #expect(throws: StrataError.encryptionKeyRequired) { try Store(directoryPath: dir.path, options: Self.options(nil)) }
        #expect(throws: StrataError.wrongEncryptionKey) { try Store(directoryPath: dir.path, options: Self.options(Self.otherKey)) }
        #expect(throws: StrataError.storeNotEncrypted) { try Store(directoryPath: plain.path, options: Self.options(Self.key)) }
        var readOnly = Self.options(nil)
        readOnly.readOnly = true
        #expect(throws: StrataError.encryptionKeyRequired) { try Store(directoryPath: dir.path, options: readOnly) }
        #expect(throws: StrataError.self) { try Store(directoryPath: TemporaryDirectory().path, options: StoreOptions(encryptionKey: Data([1, 2, 3]))) }
    }

    @Test func aKeyChangeOnAnOpenStoreReturnsItUnderTheNewKey() throws {
        let dir = TemporaryDirectory()
        var store = try Store(directoryPath: dir.path, options: Self.options(nil))
        try Self.fill(store)
        store = try store.changeEncryptionKey(to: Self.key, reopeningWith: Self.options(nil))
        try Self.expectGraph(store)
        store = try store.changeEncryptionKey(to: Self.otherKey, reopeningWith: Self.options(nil))
        try Self.expectGraph(store)
        store.close()
        #expect(throws: StrataError.wrongEncryptionKey) { try Store(directoryPath: dir.path, options: Self.options(Self.key)) }
        store = try Store(directoryPath: dir.path, options: Self.options(Self.otherKey))
        store = try store.changeEncryptionKey(to: nil)
        try Self.expectGraph(store)
        store.close()
        try Store(directoryPath: dir.path, options: Self.options(nil)).close()
    }

    @Test func aBackupAnArchiveAndAReplicaOfAnEncryptedStore() throws {
        let dir = TemporaryDirectory(), backup = TemporaryDirectory(), archive = TemporaryDirectory()
        let restored = TemporaryDirectory(), fromArchive = TemporaryDirectory(), replicaDir = TemporaryDirectory()
        var options = Self.options(Self.key)
        var a = ArchiveOptions(target: DirectoryArchiveTarget(path: archive.path))
        a.interval = 0.01
        options.archive = a
        let store = try Store(directoryPath: dir.path, options: options)
        defer { store.close() }
        try Self.fill(store)
        try store.backup(toDirectoryPath: backup.path)
        try store.archiveNow()

        #expect(throws: StrataError.encryptionKeyRequired) { try Store.restoreBackup(at: backup.path, toDirectoryPath: restored.path) }
        try Store.restoreBackup(at: backup.path, toDirectoryPath: restored.path, encryptionKey: Self.key)
        let fromBackup = try Store(directoryPath: restored.path, options: Self.options(Self.key))
        try Self.expectGraph(fromBackup)
        fromBackup.close()

        var restore = ArchiveRestoreOptions()
        restore.encryptionKey = Array(Self.key)
        try Store.restoreArchive(from: DirectoryArchiveTarget(path: archive.path), toDirectoryPath: fromArchive.path, options: restore)
        let rebuilt = try Store(directoryPath: fromArchive.path, options: Self.options(Self.key))
        try Self.expectGraph(rebuilt)
        rebuilt.close()

        // A replica follows the encrypted archive, and is encrypted itself.
        let replica = try Store.openReplica(following: DirectoryArchiveTarget(path: archive.path), directoryPath: replicaDir.path,
                                            options: Self.options(Self.key), pollInterval: 0.02)
        defer { replica.close() }
        try Self.expectGraph(replica)
        try store.box(for: Note.self).put(Note(text: "after the replica opened"))
        try store.archiveNow()
        try replica.replicaCatchUp()
        #expect(Set(try replica.box(for: Note.self).all().map(\.text)) == ["only in the log", "after the replica opened"])
        for name in try FileManager.default.contentsOfDirectory(atPath: replicaDir.path) where name.hasSuffix(".seg") || name.hasSuffix(".wal") {
            let bytes = try Data(contentsOf: URL(fileURLWithPath: replicaDir.path + "/" + name))
            #expect(bytes.range(of: Data("after the replica".utf8)) == nil, "\(name)")
        }
    }
}
