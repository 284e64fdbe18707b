import Foundation
import StrataTestSupport
import Testing

/// RELIABILITY.md §11: a large write batch and the replay of a large WAL cost bounded memory. A
/// child process (`strata-torture memory`) does the work on a real store and reports its peak
/// resident memory (VmHWM) and its resident memory before (VmRSS); the bound is on the growth:
/// - one batch of B bytes: ≤ 2.25 B + 24 MiB (the batch and its copy in the memtable; the WAL
///   record is written from the batch's own buffer);
/// - B bytes in 1 MiB batches: ≤ 1.25 B + 24 MiB;
/// - replaying them: the same bounds (the memtable, plus a 4 MiB window or the one large record).
/// The suite uses B = 64 MiB; `STRATA_MEMORY_FULL=1` uses 512 MiB, the batch limit.
@Suite(.serialized) struct MemoryBoundTests {
    static func run(_ arguments: [String]) throws -> (growthMiB: Double, output: String) {
        let torture = try #require(builtExecutable(named: "strata-torture"))
        let p = Process()
        p.executableURL = URL(fileURLWithPath: torture)
        p.arguments = ["memory"] + arguments
        let out = Pipe()
        p.standardOutput = out
        try p.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        let text = String(decoding: data, as: UTF8.self)
        #expect(p.terminationStatus == 0, "\(text)")
        let fields = text.split(whereSeparator: { $0 == " " || $0 == "\n" })
        let baseline = try #require(fields.firstIndex(of: "baseline").flatMap { Double(fields[$0 + 1]) })
        let peak = try #require(fields.firstIndex(of: "peak").flatMap { Double(fields[$0 + 1]) })
        return ((peak - baseline) / 1024, text)
    }

    #if os(Linux)
    @Test(arguments: ["batch", "batches"])
    func peakMemoryOfALargeWriteAndOfItsReplayIsBounded(shape: String) throws {
        let mib = ProcessInfo.processInfo.environment["STRATA_MEMORY_FULL"] == "1" ? 512 : 64
        let factor = shape == "batch" ? 2.25 : 1.25
        let bound = factor * Double(mib) + 24
        let dir = TemporaryDirectory()
        let write = try Self.run([dir.path, String(mib), shape])
        let replay = try Self.run([dir.path, String(mib), "replay"])
        print("memory: \(shape) of \(mib) MiB: write +\(Int(write.growthMiB)) MiB, replay +\(Int(replay.growthMiB)) MiB (bound \(Int(bound)) MiB)")
        #expect(write.growthMiB <= bound, "\(write.output)")
        #expect(replay.growthMiB <= bound, "\(replay.output)")
        // The replay really read the data back (a replay of nothing would pass any bound).
        #expect(replay.growthMiB >= Double(mib) * 0.9)
    }
    #endif
}
