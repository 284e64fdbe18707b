import Foundation
import Testing
@testable import StrataStorage
import StrataTesting

/// A log whose damaged region is crafted so that every 8th offset looks like a plausible record
/// claiming a megabyte (an 8-byte pattern, repeated): the search past the damage is bounded by
/// a budget, so that judging it costs a few times the log's size, not a megabyte per 8 bytes
/// (issue 54). In a WAL it is corruption at open; in an archive, damage a restore names.
@Suite struct CraftedLogTests {
    /// 8 bytes that read, at every offset that is a multiple of 8, as an unmarked record header
    /// (CRC 1, length 0x100001) whose payload starts with a plausible batch: sequence
    /// 0x0010000100000001, operation count 1, first operation of kind `value` (1).
    static func pattern(bytes count: Int) -> [UInt8] {
        let unit: [UInt8] = [0x01, 0x00, 0x00, 0x00, 0x01, 0x00, 0x10, 0x00]
        return (0..<count).map { unit[$0 % 8] }
    }

    @Test(.timeLimit(.minutes(2))) func aCraftedWalIsCorruptionAtOpenInBoundedTime() throws {
        let dir = TemporaryDirectory()
        let e = try Engine.open(directory: dir.path, options: .testing())
        var b = WriteBatch()
        b.put(bytes("k"), bytes("v"), in: e.defaultKeySpace)
        try e.write(b)
        e.close()
        let wal = try #require(try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasSuffix(".wal") }.max())
        let path = dir.path + "/" + wal
        // The record written, then 8 MiB of the pattern (a crash leaves nothing like it).
        var contents = try Array(Data(contentsOf: URL(fileURLWithPath: path)))
        contents += Self.pattern(bytes: 8 << 20)
        try Data(contents).write(to: URL(fileURLWithPath: path))
        #expect {
            try Engine.open(directory: dir.path, options: .testing())
        } throws: { error in
            guard case let StorageError.corruption(file, _, reason)? = error as? StorageError else { return false }
            return file.hasSuffix(wal) && reason.contains("crafted")
        }
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
                                     offset: last.offset + UInt64(last.bytes.count), times: [], bytes: Self.pattern(bytes: 8 << 20))
        try target.put(piece.objectName, piece.encode())
        #expect(throws: StorageError.self) { try Engine.restoreArchive(from: target, toDirectoryPath: root.path + "/a") }
        var lenient = ArchiveRestoreOptions()
        lenient.stopsAtDamage = true
        let report = try Engine.restoreArchive(from: target, toDirectoryPath: root.path + "/b", options: lenient)
        #expect(report.stoppedAt == piece.objectName)
        #expect(try ArchiveTests.contents(ofStoreAt: root.path + "/b") == model)
    }
}
