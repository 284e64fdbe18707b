import Foundation
import Testing
@testable import StrataStorage

/// RELIABILITY.md §5, a real full disk: a process with a file-size limit (RLIMIT_FSIZE) writes
/// until writes, flushes and compactions fail. Every failure is a typed "disk full" error, the
/// process never crashes, and after the limit is gone the store reopens with every
/// acknowledged batch and takes writes and a full compaction again.
@Suite struct FullDiskTests {
    @Test(arguments: ["wal", "compaction"])
    func writesPastAFileSizeLimitFailTypedAndLoseNothingAcknowledged(mode: String) throws {
        let binary = try #require(LockTests.tortureBinary, "strata-torture was not built next to the tests")
        let dir = TemporaryDirectory()
        let child = Process()
        child.executableURL = URL(fileURLWithPath: binary)
        child.arguments = ["fill", dir.path, String(1 << 20), mode]
        let output = Pipe()
        child.standardOutput = output
        try child.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        child.waitUntilExit()
        #expect(child.terminationStatus == 0, "the child crashed: \(text.suffix(500))")
        let lines = text.split(separator: "\n")
        let acked = lines.compactMap { $0.hasPrefix("ack ") ? Int($0.dropFirst(4)) : nil }
        let errors = lines.filter { $0.hasPrefix("error ") }
        #expect(acked.count > 1_000)
        #expect(!errors.isEmpty, "the limit was never reached")
        #expect(errors.allSatisfy { $0.contains("disk full") }, "\(errors.prefix(3))")

        let e = try Engine.open(directory: dir.path)
        var lost = 0
        for i in acked where try e.get(bytes(String(format: "key-%08d", i)), in: e.defaultKeySpace) == nil { lost += 1 }
        #expect(lost == 0, "\(lost) acknowledged batches lost")
        try e.put("after", "the disk has room again", in: e.defaultKeySpace)
        _ = try e.compact()
        #expect(try e.getString("after", in: e.defaultKeySpace) == "the disk has room again")
        e.close()
        #expect(try Engine.verify(directory: dir.path).problems.isEmpty)
    }
}
