import Foundation
@testable import StrataStorage
import StrataTestSupport
import Testing

/// A store directory is recognised before anything in it is touched; files the store did not
/// name are never read or removed; no symlink is followed where the store writes; numbers read
/// from file names, CURRENT, the manifest and the WAL are range-checked before arithmetic (a
/// crafted file is a typed error, never a trap). Real POSIX files in temporary directories.
@Suite struct ForeignFilesTests {
    private let fm = FileManager.default

    private func write(_ text: String, to path: String) throws {
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
    }

    /// A store opened under directories that do not exist creates them (each synced into its
    /// parent, issue 54: `strace -e fsync` shows one fsync per created level), and a file in
    /// the way is a typed error, not a store.
    @Test func aStoreInMissingDirectoriesCreatesThemAndAFileInTheWayIsAnError() throws {
        let root = TemporaryDirectory()
        let path = root.path + "/a/b/store"
        let e = try Engine.open(directory: path, options: .testing())
        try e.put("k", "v", in: e.defaultKeySpace)
        e.close()
        let again = try Engine.open(directory: path, options: .testing())
        #expect(try again.getString("k", in: again.defaultKeySpace) == "v")
        again.close()
        #expect(FileManager.default.createFile(atPath: root.path + "/file", contents: Data([1])))
        #expect(throws: StorageError.self) { try Engine.open(directory: root.path + "/file/store", options: .testing()) }
        #expect(throws: StorageError.self) { try PosixFileSystem().createDirectory(root.path + "/file/x") }
    }

    @Test func aNonEmptyDirectoryThatIsNotAStoreIsRefusedAndLeftAlone() throws {
        let dir = TemporaryDirectory()
        try fm.createDirectory(atPath: dir.path, withIntermediateDirectories: true)
        try write("mine", to: dir.path + "/notes.txt")
        try write("also mine", to: dir.path + "/000001.seg.bak")
        #expect(throws: StorageError.notAStore(path: dir.path)) { try Engine.open(directory: dir.path, options: .testing()) }
        // Nothing created, nothing removed.
        #expect(try fm.contentsOfDirectory(atPath: dir.path).sorted() == ["000001.seg.bak", "notes.txt"])
        #expect(try String(contentsOfFile: dir.path + "/notes.txt", encoding: .utf8) == "mine")
    }

    @Test func filesTheStoreDidNotNameSurviveOpensFlushesAndCompactions() throws {
        let dir = TemporaryDirectory()
        var e = try Engine.open(directory: dir.path, options: .testing(memtableBytes: 4 << 10))
        let ks = try e.keySpace(named: "k")
        // Look like the store's files but are not in its canonical form, or are out of range.
        let foreign = ["18446744073709551615.wal", "99999999999999999999999.seg", "+00001.seg", "0000042.wal",
                       "MANIFEST-+1", "MANIFEST-99", "notes.tmp", "000007.seg.tmp", "README"]
        for name in foreign { try write(name, to: dir.path + "/" + name) }
        for round in 0..<3 {
            for i in 0..<300 {
                var b = WriteBatch()
                b.put(Array("key-\(round)-\(i)".utf8), Array(repeating: UInt8(i & 0xFF), count: 64), in: ks)
                try e.write(b)
            }
            _ = try e.compact()
            e.close()
            e = try Engine.open(directory: dir.path, options: .testing(memtableBytes: 4 << 10))
        }
        defer { e.close() }
        let names = Set(try fm.contentsOfDirectory(atPath: dir.path))
        for name in foreign {
            #expect(names.contains(name), "\(name) was removed")
            #expect(try String(contentsOfFile: dir.path + "/" + name, encoding: .utf8) == name)
        }
        #expect(try e.get(Array("key-2-299".utf8), in: ks) != nil)
    }

    @Test func theLockFileIsNeverFollowedOutOfTheStore() throws {
        let dir = TemporaryDirectory(), outside = TemporaryDirectory()
        try fm.createDirectory(atPath: dir.path, withIntermediateDirectories: true)
        try fm.createDirectory(atPath: outside.path, withIntermediateDirectories: true)
        let victim = outside.path + "/victim"
        try write("precious", to: victim)
        try fm.createSymbolicLink(atPath: dir.path + "/LOCK", withDestinationPath: victim)
        #expect(throws: StorageError.self) { try Engine.open(directory: dir.path, options: .testing()) }
        #expect(try String(contentsOfFile: victim, encoding: .utf8) == "precious")
    }

    @Test func aSymlinkWhereTheStoreWritesIsNotFollowed() throws {
        let dir = TemporaryDirectory(), outside = TemporaryDirectory()
        try fm.createDirectory(atPath: outside.path, withIntermediateDirectories: true)
        let e = try Engine.open(directory: dir.path, options: .testing())
        e.close()
        // CURRENT.tmp is written (and renamed over CURRENT) at every open that rotates the
        // manifest: planted as a symlink, it must not truncate what it points at.
        let victim = outside.path + "/victim"
        try write("precious", to: victim)
        try fm.createSymbolicLink(atPath: dir.path + "/CURRENT.tmp", withDestinationPath: victim)
        if let reopened = try? Engine.open(directory: dir.path, options: .testing()) { reopened.close() }
        #expect(try String(contentsOfFile: victim, encoding: .utf8) == "precious")
    }

    @Test func craftedNumbersAreTypedErrorsNeverTraps() throws {
        // CURRENT naming the largest manifest number, with a valid checksum.
        let dir = TemporaryDirectory()
        try Engine.open(directory: dir.path, options: .testing()).close()
        let current = VersionSet.currentContents(manifestNumber: UInt64.max)
        try Data(current).write(to: URL(fileURLWithPath: dir.path + "/CURRENT"))
        #expect(throws: StorageError.self) { try Engine.open(directory: dir.path, options: .testing()) }

        // A WAL record whose sequence number is at the top of the range, checksum fixed up.
        let dir2 = TemporaryDirectory()
        let e = try Engine.open(directory: dir2.path, options: .testing())
        var b = WriteBatch()
        b.put(Array("k".utf8), Array("v".utf8), in: try e.keySpace(named: "k"))
        try e.write(b)
        e.close()
        let wal = try #require(try fm.contentsOfDirectory(atPath: dir2.path).filter { $0.hasSuffix(".wal") }.sorted().last)
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: dir2.path + "/" + wal)))
        let field = UInt32(bytes[4]) | UInt32(bytes[5]) << 8 | UInt32(bytes[6]) << 16 | UInt32(bytes[7]) << 24
        let length = Int(field & ~FormatConstants.logRecordMarkFlag)
        let markBytes = field & FormatConstants.logRecordMarkFlag != 0 ? 8 : 0
        try #require(length >= 12 + markBytes && bytes.count >= 8 + length)
        let batch = Array(bytes[(16 + markBytes)..<(8 + length)])
        var payload = ByteWriter()
        payload.appendFixed64(UInt64.max - 1)
        payload.append(batch)
        var framed = ByteWriter()
        payload.bytes.withUnsafeBytes { LogWriter.frame($0, into: &framed) }
        bytes.replaceSubrange(0..<(8 + length), with: framed.bytes)
        try Data(bytes).write(to: URL(fileURLWithPath: dir2.path + "/" + wal))
        #expect(throws: StorageError.self) { try Engine.open(directory: dir2.path, options: .testing()) }
    }

    @Test func blockHandlesFromDiskCannotOverflow() {
        #expect(SegmentReader.handleInRange(BlockHandle(offset: 0, size: 10), fileSize: 15))
        #expect(!SegmentReader.handleInRange(BlockHandle(offset: 0, size: 11), fileSize: 15))
        // offset + size overflowed (and trapped) before: each is now a plain "out of range".
        #expect(!SegmentReader.handleInRange(BlockHandle(offset: UInt64.max, size: 10), fileSize: 15))
        #expect(!SegmentReader.handleInRange(BlockHandle(offset: UInt64.max - 3, size: 2), fileSize: UInt64.max))
        #expect(!SegmentReader.handleInRange(BlockHandle(offset: 10, size: UInt64.max), fileSize: 15))
    }

    @Test func fileNamesParseOnlyInCanonicalForm() {
        #expect(StoreFile.parse("000042.wal") == .wal(42))
        #expect(StoreFile.parse("1234567.seg") == .segment(1_234_567))
        #expect(StoreFile.parse("MANIFEST-000003") == .manifest(3))
        #expect(StoreFile.parse("CURRENT.tmp") == .temp)
        for name in ["42.wal", "0000042.wal", "+00042.wal", "-00042.wal", "18446744073709551615.wal", "00004a.seg",
                     "notes.tmp", "MANIFEST-", "000042.seg.tmp", ".wal"] {
            #expect(StoreFile.parse(name) == nil, "\(name)")
        }
    }
}
