import Foundation
import Testing
import StrataStorage

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
}
