import Foundation
import Testing
@testable import StrataStorage
import StrataTestSupport

/// Files read whole (`CURRENT`, `STATS`, a manifest under `verify`, an archive object) are
/// bounded by what their format allows before anything is allocated: a sparse file claiming
/// 200 GB is a typed error, not an allocation that kills every open (issue 54).
@Suite struct OversizedFileTests {
    static let claimedBytes: UInt64 = 200 << 30

    /// Makes `path` a sparse file of `claimedBytes` (no disk blocks: only the size is large).
    static func makeSparse(_ path: String) throws {
        if !FileManager.default.fileExists(atPath: path) { _ = FileManager.default.createFile(atPath: path, contents: nil) }
        let handle = try #require(FileHandle(forWritingAtPath: path))
        try handle.truncate(atOffset: claimedBytes)
        try handle.close()
    }

    static func store(_ directory: TemporaryDirectory) throws {
        let e = try Engine.open(directory: directory.path, options: .testing())
        var batch = WriteBatch()
        batch.put(bytes("k"), bytes("v"), in: e.defaultKeySpace)
        try e.write(batch)
        try e.flush()
        e.close()
    }

    @Test func aHugeSparseStatsFileIsReportedAndTheStoreStillOpens() throws {
        let directory = TemporaryDirectory()
        try Self.store(directory)
        try Self.makeSparse(directory.path + "/STATS")
        // STATS is advisory: the open goes on (with zeroed lifetime counters) and reads.
        do {
            let e = try Engine.open(directory: directory.path, options: .testing())
            #expect(try e.get(bytes("k"), in: e.defaultKeySpace) == bytes("v"))
            e.close()
        }
        // The close rewrote it; made huge again, verify names it.
        try Self.makeSparse(directory.path + "/STATS")
        let report = try Engine.verify(directory: directory.path)
        #expect(report.problems.map(\.file) == [directory.path + "/STATS"])
        #expect(report.problems.first?.reason.contains("more than the") == true, "\(report.problems)")
    }

    @Test func aHugeSparseCurrentIsCorruptionAtOpen() throws {
        let directory = TemporaryDirectory()
        try Self.store(directory)
        try Self.makeSparse(directory.path + "/CURRENT")
        #expect(throws: StorageError.corruption(file: directory.path + "/CURRENT", offset: 0,
                                                reason: "\(Self.claimedBytes) bytes, more than the \(FormatConstants.smallFileMaxBytes) its format allows")) {
            try Engine.open(directory: directory.path, options: .testing())
        }
        #expect(try Engine.verify(directory: directory.path).problems.map(\.file) == [directory.path + "/CURRENT"])
    }

    @Test func aHugeSparseArchiveObjectIsATypedError() throws {
        let directory = TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: directory.path, withIntermediateDirectories: true)
        let target = DirectoryArchiveTarget(path: directory.path)
        try target.put("object", [1, 2, 3])
        try Self.makeSparse(directory.path + "/object")
        #expect(throws: StorageError.self) { _ = try target.get("object") }
        // A put of other bytes under its name is refused as such, without reading it.
        #expect(throws: StorageError.io(operation: "archive put (an object object with other bytes exists)",
                                        path: directory.path + "/object", errno: 17)) {
            try target.put("object", [1, 2, 3])
        }
    }
}
