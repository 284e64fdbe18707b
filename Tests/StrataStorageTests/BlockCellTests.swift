import Foundation
import Synchronization
import Testing
@testable import StrataStorage
import StrataTesting

/// A segment's bloom filter and index are read by the first read that needs them, not by the
/// open (`BlockCell`): a damaged one no longer stops an open, so the first read through it must
/// fail with a typed error naming the file, `verify` must report it, and readers racing to load
/// them on a fresh open must all answer right.
@Suite struct BlockCellTests {
    @Test(arguments: ["filter", "index"])
    func aDamagedBlockFailsTheFirstReadAndVerifyNotTheOpen(block: String) throws {
        let fs = InMemoryFileSystem()
        let seg = try SegmentTests.storeWithOneSegment(fs, count: 500)
        var file = try #require(fs.contents(of: seg))
        let footer = try file[(file.count - FormatConstants.segmentFooterBytes)...].withUnsafeBytes {
            try SegmentFooter.decode($0, file: seg, fileSize: UInt64(file.count))
        }
        file[Int((block == "filter" ? footer.filter : footer.index).offset) + 3] ^= 0x40
        fs.setContents(of: seg, to: file)

        let e = try Engine.open(directory: SegmentTests.dir, options: SegmentTests.options(fs))
        // The block is read by the first read that needs it: this read and the next both fail (a
        // damaged block is not kept), naming the file.
        for _ in 0..<2 {
            #expect {
                try e.get(key(7), in: e.defaultKeySpace)
            } throws: { error in
                if case let StorageError.corruption(path, _, reason) = error { return path == seg && reason.contains("checksum") }
                return false
            }
        }
        e.close()
        let report = try Engine.verify(directory: SegmentTests.dir, fileSystem: fs)
        #expect(report.problems.contains { $0.file == seg })
    }

    @Test func readersRacingOnAFreshOpenLoadOneCopyAndAllAnswer() throws {
        let fs = InMemoryFileSystem()
        let count = 2000
        _ = try SegmentTests.storeWithOneSegment(fs, count: count)
        for round in 0..<20 {
            let e = try Engine.open(directory: SegmentTests.dir, options: SegmentTests.options(fs))
            let wrong = Atomic<Int>(0)
            DispatchQueue.concurrentPerform(iterations: 8) { t in
                for i in stride(from: (t * 37 + round) % count, to: count, by: 97) {
                    let v = try? e.get(key(i), in: e.defaultKeySpace)
                    if v != bytes("value-\(i)-" + String(repeating: "ab", count: i % 20)) { wrong.add(1, ordering: .relaxed) }
                    // An absent key: the filter (or the index, or the block) must rule it out.
                    if (try? e.get(key(i) + [0], in: e.defaultKeySpace)) != .some(nil) { wrong.add(1, ordering: .relaxed) }
                }
            }
            #expect(wrong.load(ordering: .relaxed) == 0)
            e.close()
        }
    }
}
