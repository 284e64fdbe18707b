import Foundation
import StrataTestSupport
import Testing
@testable import StrataStorage

/// The WAL on a real file system is appended through a mapping of space reserved ahead
/// (PosixMappedLogFile): until it is closed it ends in zero bytes, which recovery and verify
/// must read as the log's end, and a record torn inside that space as a torn tail.
@Suite struct MappedLogTests {
    #if os(Linux)
    static let reserve = Int(PosixMappedLogFile.reserveBytes)
    #endif

    /// What a process crash leaves: the files of a store that is still open, copied as they are.
    static func crashImage(of source: String, to target: String) throws {
        try FileManager.default.createDirectory(atPath: target, withIntermediateDirectories: true)
        for name in try FileManager.default.contentsOfDirectory(atPath: source) {
            let data = try Data(contentsOf: URL(fileURLWithPath: source + "/" + name))
            try data.write(to: URL(fileURLWithPath: target + "/" + name))
        }
    }

    static func walFiles(in dir: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: dir).filter { $0.hasSuffix(".wal") }.sorted().map { dir + "/" + $0 }
    }

    static func key(_ i: Int) -> [UInt8] { Array(String(format: "key-%08d", i).utf8) }
    static func value(_ i: Int) -> [UInt8] { Array("value-\(i)".utf8) }

    /// Opens a store, writes `count` keys without syncing, and returns it still open.
    static func openAndFill(_ dir: String, count: Int) throws -> Engine {
        let e = try Engine.open(directory: dir)
        for i in 0..<count {
            var batch = WriteBatch()
            batch.put(key(i), value(i), in: e.defaultKeySpace)
            try e.write(batch, durability: Durability.none)
        }
        return e
    }

    /// Writes `count` keys to a store in `source`, copies its files to `copy` while it is open,
    /// closes it; returns the path and bytes of the copy's live WAL.
    static func crashImageWithLiveWal(_ source: TemporaryDirectory, _ copy: TemporaryDirectory,
                                      count: Int) throws -> (path: String, bytes: [UInt8]) {
        let e = try openAndFill(source.path, count: count)
        try crashImage(of: source.path, to: copy.path)
        e.close()
        let wal = try #require(try walFiles(in: copy.path).last)
        return (wal, try Array(Data(contentsOf: URL(fileURLWithPath: wal))))
    }

    // The WAL is appended through a mapping on Linux only (PosixFileSystem.openLog).
    #if os(Linux)
    @Test func aCrashImageKeepsEveryWriteAndReadsTheReservedTailAsTheEnd() throws {
        let source = TemporaryDirectory(), copy = TemporaryDirectory()
        let (_, image) = try Self.crashImageWithLiveWal(source, copy, count: 20_000)
        // The live WAL of the image still has its reserved zero bytes.
        #expect(image.count % Self.reserve == 0 && image.last == 0)

        let check = try Engine.verify(directory: copy.path)
        #expect(check.problems.isEmpty, "\(check.problems)")
        #expect(!check.notes.contains { $0.contains("torn") }, "\(check.notes)")

        let reopened = try Engine.open(directory: copy.path)
        for i in 0..<20_000 {
            #expect(try reopened.get(Self.key(i), in: reopened.defaultKeySpace) == Self.value(i), "key \(i)")
        }
        reopened.close()

        // A closed store's WALs end at their last record, the end-of-log record (8 bytes: a
        // checksum, then a zero length): the reserved space is cut off.
        for path in try Self.walFiles(in: source.path) {
            let bytes = try Array(Data(contentsOf: URL(fileURLWithPath: path)))
            #expect(bytes.isEmpty || (bytes.count % Self.reserve != 0 && bytes.suffix(4) == [0, 0, 0, 0]
                                      && bytes[(bytes.count - 8)..<(bytes.count - 4)] != [0, 0, 0, 0]), "\(path) keeps \(bytes.count) bytes")
        }
    }

    @Test func aRecordTornInsideTheReservedSpaceIsATornTail() throws {
        let source = TemporaryDirectory(), copy = TemporaryDirectory()
        let (wal, image) = try Self.crashImageWithLiveWal(source, copy, count: 1_000)
        var bytes = image
        // Half a record after the last one, then the reserved zeros: an append the crash cut.
        let end = try #require(bytes.lastIndex { $0 != 0 }) + 1
        for i in 0..<30 { bytes[end + i] = UInt8(truncatingIfNeeded: 0x9E &* (i + 1)) }
        try Data(bytes).write(to: URL(fileURLWithPath: wal))

        let check = try Engine.verify(directory: copy.path)
        #expect(check.problems.isEmpty, "\(check.problems)")
        #expect(check.notes.contains { $0.contains("torn") }, "\(check.notes)")
        let reopened = try Engine.open(directory: copy.path)
        defer { reopened.close() }
        #expect(try reopened.scan(reopened.defaultKeySpace).count == 1_000)
    }

    @Test func appendsAcrossReservedStepsTakenBackAndClosedLeaveExactlyTheKeptBytes() throws {
        let dir = TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: dir.path, withIntermediateDirectories: true)
        let path = dir.path + "/log"
        let file = try PosixMappedLogFile(path: path)
        var expected: [UInt8] = []
        var rng = SplitMix64(state: 11)
        // Small records, records that straddle a step's end, and one larger than a step.
        var sizes = (0..<3_000).map { _ in Int(rng.next() % 700) + 1 }
        sizes.insert(Self.reserve * 2 + 333, at: 1_500)
        for (n, size) in sizes.enumerated() {
            let record = (0..<size).map { UInt8(truncatingIfNeeded: $0 &+ n) | 1 }
            try record.withUnsafeBytes { try file.append($0) }
            expected += record
            #expect(file.size == UInt64(expected.count))
        }
        // Take back the last records, across a step boundary, then append again.
        let keep = expected.count - Self.reserve / 2 - 17
        try file.truncate(to: UInt64(keep))
        expected.removeSubrange(keep...)
        let tail = [UInt8](repeating: 0xAB, count: 5_000)
        try tail.withUnsafeBytes { try file.append($0) }
        try [UInt8]().withUnsafeBytes { try file.append($0) }   // nothing to add, nothing breaks
        expected += tail
        try file.sync()

        let open = try Array(Data(contentsOf: URL(fileURLWithPath: path)))
        #expect(open.count % Self.reserve == 0)
        #expect(Array(open.prefix(expected.count)) == expected)
        #expect(open[expected.count...].allSatisfy { $0 == 0 })

        try file.close()
        #expect(try Array(Data(contentsOf: URL(fileURLWithPath: path))) == expected)
    }
    #endif

    /// Segments on a real file system are mapped and their blocks verified and decompressed in
    /// place (no copy first): damage there must still be a typed corruption error, and blocks
    /// elsewhere in the file must still read.
    @Test func aDamagedBlockOfAMappedSegmentIsACorruptionErrorAndTheOthersStillRead() throws {
        let dir = TemporaryDirectory()
        let e = try Self.openAndFill(dir.path, count: 5_000)
        try e.flush()
        e.close()
        let segment = try #require(try FileManager.default.contentsOfDirectory(atPath: dir.path).first { $0.hasSuffix(".seg") })
        let path = dir.path + "/" + segment
        var bytes = try Array(Data(contentsOf: URL(fileURLWithPath: path)))
        bytes[3] ^= 0xFF   // inside the first data block
        try Data(bytes).write(to: URL(fileURLWithPath: path))

        let r = try Engine.open(directory: dir.path)
        defer { r.close() }
        #expect(throws: StorageError.corruption(file: path, offset: 0, reason: "block checksum mismatch")) {
            _ = try r.get(Self.key(0), in: r.defaultKeySpace)
        }
        #expect(try r.get(Self.key(4_999), in: r.defaultKeySpace) == Self.value(4_999))
    }
}
