import Foundation
import Testing
@testable import StrataStorage
import StrataTesting

/// The crash model itself (`InMemoryFileSystem` under a `FaultInjectingFileSystem`): what a
/// failed sync, a file rewritten after its last sync and a mapped log become at a power cut.
/// The campaigns (`PowerCutTests`, `FsyncGateTests`, `IOErrorTests`) are only as good as this.
@Suite struct CrashModelTests {
    private static func append(_ file: any WritableFile, _ text: String) throws {
        try Array(text.utf8).withUnsafeBytes { try file.append($0) }
    }

    @Test func aFailedSyncLosesItsPagesEvenAfterALaterSyncSucceeds() throws {
        let memory = InMemoryFileSystem()
        let fs = FaultInjectingFileSystem(wrapping: memory)
        try fs.createDirectory("/d")
        let file = try fs.openWritable("/d/f", truncate: true)
        try fs.syncDirectory("/d")
        try Self.append(file, "AAAA")
        try file.sync()
        try Self.append(file, "BBBB")
        fs.injectFault(.init(afterOperations: 0, operations: [.sync], error: .io(operation: "fsync", path: "/d/f", errno: 5)))
        #expect(throws: StorageError.self) { try file.sync() }
        try Self.append(file, "CCCC")
        try file.sync()                                   // succeeds, without the Bs
        #expect(memory.contents(of: "/d/f") == Array("AAAABBBBCCCC".utf8))   // the page cache still has them
        memory.simulateCrash(.dropUnsynced)
        #expect(memory.contents(of: "/d/f") == Array("AAAA".utf8) + [0, 0, 0, 0] + Array("CCCC".utf8))
    }

    @Test func aPowerCutThatHaltsTheMachineLosesNothingASyncWouldHaveWritten() throws {
        // A sync that fails because the machine stopped is not a failed writeback: the power
        // cut's policy alone decides (here: everything the kernel held survives).
        let memory = InMemoryFileSystem()
        let fs = FaultInjectingFileSystem(wrapping: memory)
        try fs.createDirectory("/d")
        let file = try fs.openWritable("/d/f", truncate: true)
        try Self.append(file, "AAAA")
        fs.injectFault(.init(afterOperations: 0, operations: [.sync], error: .io(operation: "power cut", path: "", errno: 5), haltsEverything: true))
        #expect(throws: StorageError.self) { try file.sync() }
        memory.simulateCrash(.keepEverything)
        #expect(memory.contents(of: "/d/f") == Array("AAAA".utf8))
    }

    @Test func aMappedLogReservesZerosFillsThemInPlaceAndCutsThemOffAtClose() throws {
        let memory = InMemoryFileSystem(logReserveBytes: 16)
        try memory.createDirectory("/d")
        let log = try memory.openLog("/d/000001.wal")
        try Self.append(log, "0123456789")
        #expect(log.size == 10)
        #expect(memory.contents(of: "/d/000001.wal") == Array("0123456789".utf8) + [UInt8](repeating: 0, count: 6))
        try Self.append(log, "abcdefghij")
        #expect(memory.contents(of: "/d/000001.wal")?.count == 32)
        try log.truncate(to: 15)                          // taken back: zeroed, not cut
        #expect(memory.contents(of: "/d/000001.wal") == Array("0123456789abcde".utf8) + [UInt8](repeating: 0, count: 17))
        try log.close()
        #expect(memory.contents(of: "/d/000001.wal") == Array("0123456789abcde".utf8))
    }

    @Test func aFileRewrittenSinceItsLastSyncComesBackAsAMixOfOldAndNewPages() throws {
        var seen = Set<[UInt8]>()
        for seed in 1...64 {
            // 16 bytes synced, with 48 reserved zeros; then 48 more filled in place, unsynced.
            let m = InMemoryFileSystem(logReserveBytes: 64)
            try m.createDirectory("/d")
            let l = try m.openLog("/d/l")
            try m.syncDirectory("/d")
            try Self.append(l, String(repeating: "a", count: 16))
            try l.sync()
            try Self.append(l, String(repeating: "b", count: 48))
            m.simulateCrash(.keepRandomUnsyncedPages(seed: UInt64(seed), pageBytes: 16, garbage: false))
            let bytes = try #require(m.contents(of: "/d/l"))
            #expect(bytes.count == 64)
            #expect(bytes.prefix(16) == ArraySlice(repeating: UInt8(ascii: "a"), count: 16))
            for page in stride(from: 16, to: 64, by: 16) {
                let p = Array(bytes[page..<(page + 16)])
                #expect(p == [UInt8](repeating: UInt8(ascii: "b"), count: 16) || p == [UInt8](repeating: 0, count: 16))
            }
            seen.insert(bytes)
        }
        // Some pages made it and some did not, in more than one combination.
        #expect(seen.count > 2)
    }
}
