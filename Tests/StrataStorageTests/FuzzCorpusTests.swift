import Foundation
import Testing
import StrataStorage
import StrataTesting

/// RELIABILITY.md §6: the committed seed corpus of each storage fuzzer (Tests/FuzzCorpus, grown
/// by scripts/fuzz.sh) replayed through the same entry points: every input ends in a value or a
/// typed error. Crash reproducers found by the fuzzers are kept here as regression inputs.
@Suite struct FuzzCorpusTests {
    static func corpus(_ target: String) throws -> [URL] {
        let dir = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("FuzzCorpus").appendingPathComponent(target)
        return try FileManager.default.contentsOfDirectory(at: dir, includingPropertiesForKeys: nil)
    }

    @Test(arguments: _FuzzTarget.allCases)
    func theSeedCorpusReplaysWithoutACrash(target: _FuzzTarget) throws {
        let files = try Self.corpus(target.rawValue)
        #expect(!files.isEmpty, "no seed corpus for \(target)")
        for file in files {
            let bytes = try [UInt8](Data(contentsOf: file))
            bytes.withUnsafeBytes { target.run($0) }
        }
    }

    /// Real stores through the `store` target (which fixes checksums, opens, reads, writes).
    /// `STRATA_WRITE_STORE_SEEDS=1` also writes them to the seed corpus.
    @Test func realStoresRunThroughTheStoreTarget() throws {
        for (n, memtable) in [2 << 10, 8 << 10].enumerated() {
            let fs = InMemoryFileSystem()
            let e = try Engine.open(directory: "/db", options: .testing(fs, memtableBytes: memtable, blockBytes: 256, targetSegmentBytes: 8 << 10))
            let other = try e.keySpace(named: "edges")
            for i in 0..<150 {
                var batch = WriteBatch()
                batch.put(key(i), bytes("value-\(i)"), in: e.defaultKeySpace)
                if i % 3 == 0 { batch.put(key(i), bytes("edge"), in: other) }
                if i % 7 == 0 { batch.delete(key(i / 2), in: e.defaultKeySpace) }
                try e.write(batch, durability: i % 10 == 0 ? .sync : Durability.none)
            }
            try e.flush()
            for i in 150..<170 { try e.put(String(i), "tail", in: e.defaultKeySpace, durability: i % 2 == 0 ? .sync : Durability.none) }
            try e.waitForBackgroundWork()
            e.close()
            let archive = try _FuzzTarget.storeArchive(of: fs, directory: "/db")
            #expect(archive.count > 1000 && archive.count <= 65536)
            archive.withUnsafeBytes { _FuzzTarget.store.run($0) }
            if ProcessInfo.processInfo.environment["STRATA_WRITE_STORE_SEEDS"] == "1" {
                let dir = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                    .appendingPathComponent("FuzzCorpus/store")
                try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
                try Data(archive).write(to: dir.appendingPathComponent("real-store-\(n)"))
            }
        }
    }
}
