import Foundation
import Testing
@testable import StrataStorage
import StrataTesting

/// A log whose damaged region is crafted so that candidate records repeat every few bytes, each
/// claiming a megabyte (issue 54). Only a record carrying a durable mark can prove damage
/// (SPEC.md §5.2), so only marked candidates are checksummed, within a budget: a marked pattern
/// is corruption at open (in an archive, damage a restore names) after a few times the log's
/// size in checksums; an unmarked one costs one look per byte and is a torn tail.
@Suite struct CraftedLogTests {
    /// 16 bytes that read, at every offset that is a multiple of 16 from 4096 on, as a record
    /// header with a durable mark (CRC 1, length 0x100001 with the mark flag, mark 4096) whose
    /// payload starts with a plausible batch: the next 16 bytes give a large sequence, 4096
    /// operations and a first operation of kind `deletion` (0).
    static func markedPattern(bytes count: Int) -> [UInt8] {
        let unit: [UInt8] = [0x01, 0x00, 0x00, 0x00, 0x01, 0x00, 0x10, 0x80, 0x00, 0x10, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00]
        return (0..<count).map { unit[$0 % 16] }
    }

    /// 8 bytes that read, at every offset that is a multiple of 8, as an unmarked record header
    /// (CRC 1, length 0x100001) whose payload starts with a plausible batch: sequence
    /// 0x0010000100000001, operation count 1, first operation of kind `value` (1).
    static func unmarkedPattern(bytes count: Int) -> [UInt8] {
        let unit: [UInt8] = [0x01, 0x00, 0x00, 0x00, 0x01, 0x00, 0x10, 0x00]
        return (0..<count).map { unit[$0 % 8] }
    }

    /// A store with one committed record, then `pattern` appended to its WAL (a crash leaves
    /// nothing like it); the WAL's name.
    static func storeWithCraftedWal(_ dir: String, _ pattern: [UInt8]) throws -> String {
        let e = try Engine.open(directory: dir, options: .testing())
        var b = WriteBatch()
        b.put(bytes("k"), bytes("v"), in: e.defaultKeySpace)
        try e.write(b)
        e.close()
        let wal = try #require(try FileManager.default.contentsOfDirectory(atPath: dir).filter { $0.hasSuffix(".wal") }.max())
        let path = dir + "/" + wal
        var contents = try Array(Data(contentsOf: URL(fileURLWithPath: path)))
        contents += pattern
        try Data(contents).write(to: URL(fileURLWithPath: path))
        return wal
    }

    @Test(.timeLimit(.minutes(2))) func aCraftedWalIsCorruptionAtOpenInBoundedTime() throws {
        let dir = TemporaryDirectory()
        let wal = try Self.storeWithCraftedWal(dir.path, Self.markedPattern(bytes: 8 << 20))
        #expect {
            try Engine.open(directory: dir.path, options: .testing())
        } throws: { error in
            guard case let StorageError.corruption(file, _, reason)? = error as? StorageError else { return false }
            return file.hasSuffix(wal) && reason.contains("crafted")
        }
    }

    /// Unmarked candidates cannot prove damage, however many: the region is a torn tail, judged
    /// by one look per byte. The same mechanism as a power cut that tore a batch of 100,000
    /// similar objects, whose payload held that many plausible candidates (issue 55's migration
    /// test found it: the store did not open).
    @Test(.timeLimit(.minutes(2))) func unmarkedCandidatesAreATornTailInBoundedTime() throws {
        let dir = TemporaryDirectory()
        _ = try Self.storeWithCraftedWal(dir.path, Self.unmarkedPattern(bytes: 8 << 20))
        let e = try Engine.open(directory: dir.path, options: .testing())
        defer { e.close() }
        #expect(try e.get(bytes("k"), in: e.defaultKeySpace) == bytes("v"))
    }

    @Test(.timeLimit(.minutes(2))) func aCraftedArchivedLogIsDamageARestoreNames() throws {
        let dir = TemporaryDirectory(), archive = TemporaryDirectory(), root = TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: root.path, withIntermediateDirectories: true)
        let target = DirectoryArchiveTarget(path: archive.path)
        let e = try Engine.open(directory: dir.path, options: ArchiveTests.archived(target))
        var model: [String: String] = [:], history: [UInt64: [String: String]] = [:]
        try ArchiveTests.workload(e, commits: 20, seed: 9, model: &model, history: &history, flushEvery: 1000)
        try e.archiveNow()
        e.close()
        let last = try ArchiveTests.lastLogPiece(in: target)
        let piece = ArchivedLogPiece(generation: last.generation, wal: last.wal, previous: last.previous,
                                     offset: last.offset + UInt64(last.bytes.count), times: [], bytes: Self.markedPattern(bytes: 8 << 20))
        try target.put(piece.objectName, piece.encode())
        #expect(throws: StorageError.self) { try Engine.restoreArchive(from: target, toDirectoryPath: root.path + "/a") }
        var lenient = ArchiveRestoreOptions()
        lenient.stopsAtDamage = true
        let report = try Engine.restoreArchive(from: target, toDirectoryPath: root.path + "/b", options: lenient)
        #expect(report.stoppedAt == piece.objectName)
        #expect(try ArchiveTests.contents(ofStoreAt: root.path + "/b") == model)
    }
}
