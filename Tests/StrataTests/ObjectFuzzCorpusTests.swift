import Foundation
import Strata
import Testing
import StrataTesting

/// RELIABILITY.md §6: the object layer's fuzz corpus (Tests/FuzzCorpus/object, …/entityRecord)
/// replayed: every input decodes or fails with a typed error, and every entity record that
/// parses encodes back to an equal record.
@Suite struct ObjectFuzzCorpusTests {
    @Test(arguments: _ObjectFuzzTarget.allCases)
    func theSeedCorpusReplaysWithoutACrash(target: _ObjectFuzzTarget) throws {
        let dir = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("FuzzCorpus").appendingPathComponent(target.rawValue)
        let files = try FileManager.default.contentsOfDirectory(at: dir, includingPropertiesForKeys: nil)
        #expect(!files.isEmpty, "no seed corpus for \(target)")
        for file in files {
            let bytes = try [UInt8](Data(contentsOf: file))
            #expect(bytes.withUnsafeBytes { target.run($0) }, "\(file.lastPathComponent)")
        }
    }
}
