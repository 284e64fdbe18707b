import Testing
@testable import StrataStorage
import StrataTesting

/// The manifest is rewritten as a snapshot of the live state once its history outgrows that
/// state (SPEC.md §8), so that an open replays in proportion to the store, not to its age.
/// Faults during the roll are in `IOErrorTests` (whose workload rolls often), crashes in the
/// power-cut campaign.
@Suite struct ManifestRollTests {
    static func manifests(_ fs: InMemoryFileSystem) throws -> [String] {
        try fs.listDirectory("/db").filter { $0.hasPrefix(FormatConstants.manifestPrefix) }
    }

    @Test func aRunningEngineRollsAnOutgrownManifestAndLosesNothing() throws {
        let fs = InMemoryFileSystem()
        let e = try Engine.open(directory: "/db", options: .testing(fs, blockBytes: 256))
        var largest = 0
        var names = Set<String>()
        // Each flush logs an edit, and so do the compactions they start: hundreds of edits
        // over a store of a few segments.
        for i in 0..<2_000 {
            var batch = WriteBatch()
            batch.put(key(i % 50), bytes("value-\(i)"), in: e.defaultKeySpace)
            try e.write(batch)
            try e.flush()
            try e.waitForBackgroundWork()
            let current = try Self.manifests(fs)
            #expect(current.count == 1, "the old manifest is removed once the new one is current: \(current)")
            names.formUnion(current)
            largest = max(largest, current.compactMap { fs.contents(of: "/db/" + $0)?.count }.max() ?? 0)
        }
        e.close()
        #expect(names.count > 2, "the manifest rolled")
        #expect(largest <= Int(ManifestRollRule().minimumBytes) + 4096, "the manifest stays near the roll size: \(largest) bytes")
        let reopened = try Engine.open(directory: "/db", options: .testing(fs, blockBytes: 256))
        for k in 0..<50 {
            #expect(try reopened.get(key(k), in: reopened.defaultKeySpace) == bytes("value-\(1_950 + k)"))
        }
        reopened.close()
        #expect(try Engine.verify(directory: "/db", fileSystem: fs).problems.isEmpty)
    }
}
