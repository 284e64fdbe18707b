import Foundation
import Testing
@testable import StrataStorage
import StrataTesting

/// Encryption at rest (SPEC.md §14): every file the engine writes is sealed, a key that does not
/// open the store is a typed error that writes nothing, no stored byte shows in any file, and no
/// (key, nonce) pair ever seals two different plaintexts.
@Suite struct EncryptionTests {
    static let key = [UInt8](repeating: 0x5A, count: 32)
    static let otherKey = (0..<32).map { UInt8($0) }

    static func options(_ key: [UInt8]?, fs: (any FileSystem)? = nil) -> EngineOptions {
        var o = EngineOptions.testing(fs, memtableBytes: 32 << 10, blockBytes: 1024, targetSegmentBytes: 64 << 10)
        o.encryptionKey = key
        o.idKeySpaces = ["objects"]
        return o
    }

    /// Writes `count` keys into "objects" (id keys) and "names" (string keys), some flushed and
    /// compacted, the last ones only in the WAL. Returns what each key space holds.
    @discardableResult
    static func fill(_ e: Engine, count: Int, tag: String = "") throws -> [String: [UInt8: [UInt8]]] {
        let objects = try e.keySpace(named: "objects"), names = try e.keySpace(named: "names")
        for chunk in stride(from: 0, to: count, by: 100) {
            var b = WriteBatch()
            for i in chunk..<min(count, chunk + 100) {
                b.put(objectKey(i), bytes("object \(tag)\(i): name=person-\(i) email=person\(i)@example.com"), in: objects)
                b.put(bytes("person\(i)@example.com"), bytes("\(tag)\(i)"), in: names)
            }
            try e.write(b)
            if chunk == count / 2 { try e.flush(); _ = try e.compact() }
        }
        return [:]
    }

    static func objectKey(_ i: Int) -> [UInt8] { [0x6F] + withUnsafeBytes(of: UInt64(i + 1).bigEndian, Array.init) }

    static func expectContents(_ e: Engine, count: Int, tag: String = "") throws {
        let objects = try e.keySpace(named: "objects"), names = try e.keySpace(named: "names")
        for i in stride(from: 0, to: count, by: 7) {
            #expect(try e.get(objectKey(i), in: objects).map(string) == "object \(tag)\(i): name=person-\(i) email=person\(i)@example.com")
            #expect(try e.get(bytes("person\(i)@example.com"), in: names).map(string) == "\(tag)\(i)")
        }
        #expect(try e.scan(objects).count == count)
    }

    /// Every file under `directory` (recursively), by path.
    static func files(under directory: String) -> [String: [UInt8]] {
        var out: [String: [UInt8]] = [:]
        guard let walker = FileManager.default.enumerator(atPath: directory) else { return out }
        for case let relative as String in walker {
            let path = directory + "/" + relative
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue,
               let data = FileManager.default.contents(atPath: path) {
                out[path] = Array(data)
            }
        }
        return out
    }

    @Test func anEncryptedStoreReadsBackThroughEveryKindOfFile() throws {
        let dir = TemporaryDirectory()
        do {
            let e = try Engine.open(directory: dir.path, options: Self.options(Self.key))
            try Self.fill(e, count: 3_000)
            try Self.expectContents(e, count: 3_000)
            e.close()
        }
        // Segments (flushed and compacted), the manifest, the WAL and STATS, read back.
        let e = try Engine.open(directory: dir.path, options: Self.options(Self.key))
        try Self.expectContents(e, count: 3_000)
        #expect(e.statistics().lifetime.flushes > 0, "STATS read back under the key")
        try e.put("after", "reopen", in: e.defaultKeySpace)
        e.close()
        let report = try Engine.verify(directory: dir.path, encryptionKey: Self.key)
        #expect(report.problems.isEmpty, "\(report.problems)")
        #expect(report.segments > 0 && report.walRecords > 0)
        // Every file but CURRENT and LOCK starts with the encryption header.
        for (path, bytes) in Self.files(under: dir.path) where !path.hasSuffix("/CURRENT") && !path.hasSuffix("/LOCK") && !bytes.isEmpty {
            #expect(bytes.withUnsafeBytes { EncryptionHeader.startsWithMagic($0) }, "\(path) is not sealed")
        }
    }

    @Test func aMissingWrongOrUnexpectedKeyIsATypedErrorThatWritesNothing() throws {
        let dir = TemporaryDirectory(), plain = TemporaryDirectory()
        let e = try Engine.open(directory: dir.path, options: Self.options(Self.key))
        try Self.fill(e, count: 500)
        e.close()
        let p = try Engine.open(directory: plain.path, options: Self.options(nil))
        try Self.fill(p, count: 100)
        p.close()
        let before = Self.files(under: dir.path), plainBefore = Self.files(under: plain.path)

        #expect(throws: StorageError.encryptionKeyRequired(file: "")) {
            do { _ = try Engine.open(directory: dir.path, options: Self.options(nil)) } catch StorageError.encryptionKeyRequired { throw StorageError.encryptionKeyRequired(file: "") }
        }
        #expect(throws: StorageError.wrongEncryptionKey(file: "")) {
            do { _ = try Engine.open(directory: dir.path, options: Self.options(Self.otherKey)) } catch StorageError.wrongEncryptionKey { throw StorageError.wrongEncryptionKey(file: "") }
        }
        var readOnly = Self.options(Self.otherKey)
        readOnly.readOnly = true
        #expect(throws: StorageError.wrongEncryptionKey(file: "")) {
            do { _ = try Engine.open(directory: dir.path, options: readOnly) } catch StorageError.wrongEncryptionKey { throw StorageError.wrongEncryptionKey(file: "") }
        }
        #expect(throws: StorageError.notEncrypted(file: "")) {
            do { _ = try Engine.open(directory: plain.path, options: Self.options(Self.key)) } catch StorageError.notEncrypted { throw StorageError.notEncrypted(file: "") }
        }
        #expect(throws: StorageError.self) { _ = try Engine.open(directory: dir.path, options: Self.options(Array(Self.key.prefix(16)))) }
        for (path, bytes) in before where !path.hasSuffix("/LOCK") { #expect(Self.files(under: dir.path)[path] == bytes, "\(path) changed") }
        #expect(Self.files(under: dir.path).count == before.count)
        for (path, bytes) in plainBefore where !path.hasSuffix("/LOCK") { #expect(Self.files(under: plain.path)[path] == bytes, "\(path) changed") }
        // Verification needs the key too.
        #expect(throws: StorageError.self) { _ = try Engine.verify(directory: dir.path) }
        #expect(throws: StorageError.self) { _ = try Engine.verify(directory: dir.path, encryptionKey: Self.otherKey) }
        // The right key still opens it, unchanged.
        let again = try Engine.open(directory: dir.path, options: Self.options(Self.key))
        try Self.expectContents(again, count: 500)
        again.close()
    }

    /// A changed byte in the manifest's salt or key check value reads like a wrong key; with
    /// another file of the store opening under the key, it is reported as the damage it is.
    @Test func aDamagedManifestHeaderIsCorruptionNotAWrongKey() throws {
        let dir = TemporaryDirectory()
        let e = try Engine.open(directory: dir.path, options: Self.options(Self.key))
        try Self.fill(e, count: 500)
        e.close()
        let manifest = try #require(Self.files(under: dir.path).keys.first { $0.contains("MANIFEST-") })
        var bytes = Self.files(under: dir.path)[manifest]!
        bytes[20] ^= 0x01   // the salt
        try Data(bytes).write(to: URL(fileURLWithPath: manifest))
        do {
            _ = try Engine.open(directory: dir.path, options: Self.options(Self.key))
            Issue.record("a damaged manifest opened")
        } catch let StorageError.corruption(file, _, reason) {
            #expect(file == manifest && reason.contains("encryption header damaged"), "\(reason)")
        }
        #expect(throws: StorageError.wrongEncryptionKey(file: manifest)) { _ = try Engine.open(directory: dir.path, options: Self.options(Self.otherKey)) }
        let report = try Engine.verify(directory: dir.path, encryptionKey: Self.key)
        #expect(report.problems.contains { $0.file == manifest }, "\(report.problems)")
    }

    /// No stored string, and no 8-byte run of any stored value or key, in any file of the
    /// store, of its backup or of its archive.
    @Test func noPlaintextInTheStoreItsBackupOrItsArchive() throws {
        let dir = TemporaryDirectory(), backup = TemporaryDirectory(), archive = TemporaryDirectory()
        var o = Self.options(Self.key)
        o.archive = ArchiveOptions(target: DirectoryArchiveTarget(path: archive.path))
        let e = try Engine.open(directory: dir.path, options: o)
        try Self.fill(e, count: 1_500)
        // A value like the object layer's Codable property: JSON.
        let codable = Array(#"{"street":"Rue de Rivoli 99","city":"Paris","zip":"75001"}"#.utf8)
        try e.put("address-of-alice", String(decoding: codable, as: UTF8.self), in: e.defaultKeySpace)
        try e.archiveNow()
        _ = try e.backup(toDirectoryPath: backup.path)
        try e.put("only-in-the-wal", "Zebulon Wallace-Whitaker zebulon@example.org", in: e.defaultKeySpace, durability: .sync)
        try e.archiveNow()
        e.close()

        var needles: [[UInt8]] = [bytes("person-"), bytes("@example.com"), bytes("Zebulon"), bytes("zebulon@example.org"),
                                  bytes("Rue de Rivoli"), bytes("address-of-alice"), bytes("only-in-the-wal")]
        for i in stride(from: 0, to: 1_500, by: 37) {
            let value = bytes("object \(i): name=person-\(i) email=person\(i)@example.com")
            for start in stride(from: 0, to: value.count - 8, by: 3) { needles.append(Array(value[start..<(start + 8)])) }
            // Not the object's key: the segments' blocks of objects keep their ids in the clear,
            // so that a read finds one object without its block (SPEC.md §14.3).
        }
        needles.append(Array(codable.prefix(8)))
        let everything = Self.files(under: dir.path).merging(Self.files(under: backup.path)) { a, _ in a }
            .merging(Self.files(under: archive.path)) { a, _ in a }
        #expect(everything.keys.contains { $0.hasSuffix(".seg") } && everything.keys.contains { $0.contains("-log-") }
                && everything.keys.contains { $0.contains("-state-") })
        var found: [String] = []
        for (path, haystack) in everything {
            for needle in needles where Self.contains(haystack, needle) {
                found.append("\(path): \(String(decoding: needle, as: UTF8.self))")
            }
        }
        #expect(found.isEmpty, "\(found.prefix(10))")
        // And the backup and the archive restore, with the key.
        let restored = TemporaryDirectory(), fromArchive = TemporaryDirectory()
        try Engine.restoreBackup(at: backup.path, toDirectoryPath: restored.path, encryptionKey: Self.key)
        var restore = ArchiveRestoreOptions()
        restore.encryptionKey = Self.key
        try Engine.restoreArchive(from: DirectoryArchiveTarget(path: archive.path), toDirectoryPath: fromArchive.path, options: restore)
        let r = try Engine.open(directory: fromArchive.path, options: Self.options(Self.key))
        try Self.expectContents(r, count: 1_500)
        #expect(try r.getString("only-in-the-wal", in: r.defaultKeySpace) == "Zebulon Wallace-Whitaker zebulon@example.org")
        r.close()
        let b = try Engine.open(directory: restored.path, options: Self.options(Self.key))
        try Self.expectContents(b, count: 1_500)
        b.close()
        // Without the key, neither restores.
        let noKey = TemporaryDirectory(), noKeyArchive = TemporaryDirectory()
        #expect(throws: StorageError.self) { try Engine.restoreBackup(at: backup.path, toDirectoryPath: noKey.path) }
        #expect(throws: StorageError.self) {
            try Engine.restoreArchive(from: DirectoryArchiveTarget(path: archive.path), toDirectoryPath: noKeyArchive.path)
        }
        #expect(throws: StorageError.self) { _ = try Engine.archiveInventory(of: DirectoryArchiveTarget(path: archive.path)) }
        #expect(try Engine.archiveInventory(of: DirectoryArchiveTarget(path: archive.path), encryptionKey: Self.key).stores.count == 1)
    }

    static func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard needle.count <= haystack.count, let first = needle.first else { return false }
        var i = 0
        let last = haystack.count - needle.count
        while i <= last {
            if haystack[i] == first && haystack[i..<(i + needle.count)].elementsEqual(needle) { return true }
            i += 1
        }
        return false
    }

    // MARK: - Nonces

    /// One sealed unit of a file: the file's salt, the unit's nonce, and the rest (ciphertext
    /// and tag).
    struct Unit: Hashable {
        var salt: [UInt8]
        var nonce: [UInt8]
        var sealed: [UInt8]
    }

    /// Every sealed unit of every file in `directory`: log records (WAL, manifest) walked from
    /// the header on, every block of a segment (from its footer and its index, opened with the
    /// key), a sealed whole file (STATS). A partial last log record counts with what it has.
    static func units(in directory: String, key: [UInt8]) throws -> [Unit] {
        var out: [Unit] = []
        let cipher = try StoreCipher(key: key)
        for (path, b) in files(under: directory) where b.count >= EncryptionHeader.bytes && b.withUnsafeBytes({ EncryptionHeader.startsWithMagic($0) }) {
            let salt = Array(b[16..<48])
            let name = String(path.split(separator: "/").last!)
            switch StoreFile.parse(name) {
            case .wal?, .manifest?:
                var at = EncryptionHeader.bytes
                while at + 4 + 12 <= b.count {
                    let field = b[at..<(at + 4)].reversed().reduce(0) { $0 << 8 | Int($1) }
                    let length = field & 0x7FFF_FFFF, marked = field & 0x8000_0000 != 0
                    let nonceAt = at + 4 + (marked ? 8 : 0)
                    let end = min(b.count, at + 4 + length + FileSealer.overhead)
                    guard nonceAt + 12 <= b.count, length < 1 << 28 else { break }
                    out.append(Unit(salt: salt, nonce: Array(b[nonceAt..<(nonceAt + 12)]), sealed: Array(b[(nonceAt + 12)..<max(nonceAt + 12, end)])))
                    at += 4 + length + FileSealer.overhead
                }
            case let .segment(n)?:
                let reader = try SegmentReader.open(fileSystem: PosixFileSystem(), path: path, fileNumber: n, cache: BlockCache(capacityBytes: 1 << 20),
                                                    stats: StatisticsCounters(), cipher: cipher)
                var handles: [BlockHandle] = []
                let footer = try b.suffix(64).withUnsafeBytes {
                    try SegmentFooter.decode($0, file: path, fileSize: UInt64(b.count), trailerBytes: SegmentReader.sealedTrailerBytes)
                }
                handles += [footer.index, footer.filter, footer.properties]
                let index = try reader.withIndex { $0.makeIterator() }
                index.seekToFirst()
                while index.isValid {
                    handles.append(try reader.handle(fromIndexValue: index.value))
                    index.next()
                }
                for h in handles {
                    let o = Int(h.offset)
                    out.append(Unit(salt: salt, nonce: Array(b[o..<(o + 12)]), sealed: Array(b[(o + 12)..<(o + 12 + Int(h.size) + 16)])))
                    // A block of sealed values: each value is a unit too, its nonce from where its
                    // entry lies (SPEC.md §14.3).
                    guard b[o + Int(h.size) + FileSealer.overhead] == SegmentReader.sealedValuesBlockType else { continue }
                    let payload = o + FileSealer.nonceBytes
                    try b.withUnsafeBytes { raw in
                        let stored = UnsafeRawBufferPointer(rebasing: raw[payload..<(payload + Int(h.size))])
                        let layout = try IdBlockLayout.decode(stored, checked: true, sealedValues: true).get()
                        for i in 0..<layout.count {
                            let v = layout.storedValue(i)
                            let entryAt = UInt64(payload + layout.entriesOffset + i * layout.entryStride)
                            let nonce = withUnsafeBytes(of: SealedIdValues.nonceHigh.littleEndian, Array.init)
                                + withUnsafeBytes(of: entryAt.littleEndian, Array.init)
                            out.append(Unit(salt: salt, nonce: nonce, sealed: Array(stored[v.offset..<(v.offset + v.count)])))
                        }
                    }
                }
            default:
                // A file sealed whole (STATS, an archive object): one unit after the header.
                out.append(Unit(salt: salt, nonce: Array(b[64..<76]), sealed: Array(b[76...])))
            }
        }
        return out
    }

    /// No (salt, nonce) pair, which with the master key names one key and nonce, seals two
    /// different units (a unit copied whole, as a backup or a copy of the store holds it, is the
    /// same unit). A prefix of a unit (a torn record) agrees with the whole one.
    static func expectNoNonceReuse(_ units: [Unit], _ label: String) {
        var seen: [[UInt8]: [UInt8]] = [:]
        var reused: [String] = []
        for u in units {
            let id = u.salt + u.nonce
            if let other = seen[id] {
                let n = min(other.count, u.sealed.count)
                if other.prefix(n) != u.sealed.prefix(n) { reused.append("\(label): nonce \(u.nonce) of salt \(u.salt.prefix(4)) seals two units") }
                if u.sealed.count > other.count { seen[id] = u.sealed }
            } else {
                seen[id] = u.sealed
            }
        }
        #expect(reused.isEmpty, "\(reused.prefix(5))")
        #expect(units.count > 10, "\(label): units were found")
    }

    @Test func noNonceSealsTwoPlaintextsAfterATornTailTwoCopiesOrARestoredBackup() throws {
        // A log tail rewritten after a torn write: a copy taken mid-write (a crash), its newest
        // WAL torn in the middle of its last record; the reopened copy cuts it back and appends
        // new records where the torn one was.
        let dir = TemporaryDirectory(), crashed = TemporaryDirectory()
        let e = try Engine.open(directory: dir.path, options: Self.options(Self.key))
        try Self.fill(e, count: 400)
        for i in 0..<20 { try e.put("logged-\(i)", String(repeating: "v", count: 100 + i), in: e.defaultKeySpace) }
        try FileManager.default.copyItem(atPath: dir.path, toPath: crashed.path)
        e.close()
        let wal = try #require(Self.files(under: crashed.path).keys.filter { $0.hasSuffix(".wal") }.max())
        var walBytes = Self.files(under: crashed.path)[wal]!
        walBytes.removeLast(60)
        try Data(walBytes).write(to: URL(fileURLWithPath: wal))
        let before = try Self.units(in: crashed.path, key: Self.key)
        let reopened = try Engine.open(directory: crashed.path, options: Self.options(Self.key))
        for i in 0..<20 { try reopened.put("after-\(i)", String(repeating: "w", count: 100 + i), in: reopened.defaultKeySpace) }
        reopened.close()
        Self.expectNoNonceReuse(before + (try Self.units(in: crashed.path, key: Self.key)), "torn tail")

        // The same store opened on two copies, both going on: the same file numbers, other
        // contents.
        let copy = TemporaryDirectory()
        try FileManager.default.copyItem(atPath: dir.path, toPath: copy.path)
        for (path, tag) in [(dir.path, "a"), (copy.path, "b")] {
            let c = try Engine.open(directory: path, options: Self.options(Self.key))
            try Self.fill(c, count: 600, tag: tag)
            c.close()
        }
        let a = try Self.units(in: dir.path, key: Self.key), b = try Self.units(in: copy.path, key: Self.key)
        Self.expectNoNonceReuse(a + b, "two copies")
        let sameNames = Set(Self.files(under: dir.path).keys.map { String($0.split(separator: "/").last!) })
            .intersection(Self.files(under: copy.path).keys.map { String($0.split(separator: "/").last!) })
            .filter { $0.hasSuffix(".seg") || $0.hasSuffix(".wal") }
        for name in sameNames {
            let x = Self.files(under: dir.path)[dir.path + "/" + name]!, y = Self.files(under: copy.path)[copy.path + "/" + name]!
            if x != y && x.count >= 64 && y.count >= 64 && x[16..<48] == y[16..<48] {
                // A WAL both copies inherited goes on under its own salt; its records' random
                // nonces differ (checked above). Any other file of the same number is the copy's own.
                #expect(name.hasSuffix(".wal"), "\(name): two different files under one salt")
            }
        }

        // A restored backup that goes on writing, beside the store it came from.
        let backup = TemporaryDirectory(), restored = TemporaryDirectory()
        let s = try Engine.open(directory: dir.path, options: Self.options(Self.key))
        _ = try s.backup(toDirectoryPath: backup.path)
        try Engine.restoreBackup(at: backup.path, toDirectoryPath: restored.path, encryptionKey: Self.key)
        try Self.fill(s, count: 300, tag: "s")
        s.close()
        let r = try Engine.open(directory: restored.path, options: Self.options(Self.key))
        try Self.fill(r, count: 300, tag: "r")
        r.close()
        Self.expectNoNonceReuse(try Self.units(in: dir.path, key: Self.key) + Self.units(in: backup.path, key: Self.key)
                                + Self.units(in: restored.path, key: Self.key), "restored backup")
    }

    // MARK: - Key changes

    @Test func aKeyChangeEncryptsRekeysAndDecryptsAStore() throws {
        let dir = TemporaryDirectory()
        let e = try Engine.open(directory: dir.path, options: Self.options(nil))
        try Self.fill(e, count: 2_000)
        e.close()
        let plainFiles = Self.files(under: dir.path)
        #expect(plainFiles.values.contains { Self.contains($0, bytes("@example.com")) })

        try Engine.changeEncryptionKey(directory: dir.path, from: nil, to: Self.key, options: Self.options(nil))
        #expect(!Self.files(under: dir.path).values.contains { Self.contains($0, bytes("@example.com")) })
        #expect(throws: StorageError.self) { _ = try Engine.open(directory: dir.path, options: Self.options(nil)) }
        var opened = try Engine.open(directory: dir.path, options: Self.options(Self.key))
        try Self.expectContents(opened, count: 2_000)
        opened.close()
        #expect(try Engine.verify(directory: dir.path, encryptionKey: Self.key).problems.isEmpty)

        try Engine.changeEncryptionKey(directory: dir.path, from: Self.key, to: Self.otherKey, options: Self.options(nil))
        #expect(throws: StorageError.self) { _ = try Engine.open(directory: dir.path, options: Self.options(Self.key)) }
        opened = try Engine.open(directory: dir.path, options: Self.options(Self.otherKey))
        try Self.expectContents(opened, count: 2_000)
        opened.close()

        // The wrong old key changes nothing.
        #expect(throws: StorageError.self) {
            try Engine.changeEncryptionKey(directory: dir.path, from: Self.key, to: nil, options: Self.options(nil))
        }
        try Engine.changeEncryptionKey(directory: dir.path, from: Self.otherKey, to: nil, options: Self.options(nil))
        opened = try Engine.open(directory: dir.path, options: Self.options(nil))
        try Self.expectContents(opened, count: 2_000)
        opened.close()
        #expect(try Engine.verify(directory: dir.path).problems.isEmpty)
    }

    /// A power cut at every step of a key change: the store opens with the old key or the new
    /// one, whole, never with neither.
    @Test(arguments: [false, true])
    func aPowerCutAnywhereInAKeyChangeLeavesTheOldKeyOrTheNew(encrypting: Bool) throws {
        let base = InMemoryFileSystem()
        let oldKey: [UInt8]? = encrypting ? nil : Self.key
        do {
            // Durable writes: the power cuts below may only take what the key change writes.
            var o = Self.options(oldKey, fs: base)
            o.durability = .sync
            let e = try Engine.open(directory: "/db", options: o)
            try Self.fill(e, count: 800)
            e.close()
        }
        let image = base.image()
        // How many file system operations a whole key change takes.
        let counting = FaultInjectingFileSystem(wrapping: base)
        try Engine.changeEncryptionKey(directory: "/db", from: oldKey, to: Self.otherKey, options: Self.options(nil, fs: counting))
        let total = counting.operationCount
        var outcomes: [String: Int] = [:]
        for cut in 0..<total {
            base.restore(image)
            let fs = FaultInjectingFileSystem(wrapping: base)
            fs.injectFault(.init(afterOperations: cut, error: .io(operation: "power cut", path: "", errno: 5), haltsEverything: true))
            _ = try? Engine.changeEncryptionKey(directory: "/db", from: oldKey, to: Self.otherKey, options: Self.options(nil, fs: fs))
            base.simulateCrash(.dropUnsynced)
            var opened: Engine?
            var which = ""
            for (label, key) in [("old", oldKey), ("new", Self.otherKey)] {
                if let e = try? Engine.open(directory: "/db", options: Self.options(key, fs: base)) {
                    opened = e
                    which = label
                    break
                }
            }
            let e = try #require(opened, "cut after \(cut) of \(total) operations: opens with neither key")
            try Self.expectContents(e, count: 800)
            e.close()
            outcomes[which, default: 0] += 1
        }
        #expect(outcomes["old", default: 0] > 0 && outcomes["new", default: 0] > 0, "\(outcomes)")
    }
}
