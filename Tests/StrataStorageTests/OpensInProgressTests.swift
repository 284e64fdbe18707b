import Dispatch
import Foundation
import Testing
@testable import StrataStorage
import StrataTestSupport

/// The gate that lets a closed engine's block cache be freed after an open in progress, not
/// beside it.
@Suite struct OpensInProgressTests {
    static func seconds(since start: UInt64) -> Double { Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9 }

    @Test func waitingWithNoOpenReturnsAtOnce() {
        let start = DispatchTime.now().uptimeNanoseconds
        OpensInProgress.waitUntilNone(atMostSeconds: 30)
        #expect(Self.seconds(since: start) < 5)
    }

    @Test func aWaitEndsWhenTheOpenEnds() {
        let started = DispatchSemaphore(value: 0), done = DispatchSemaphore(value: 0)
        let finished = Locked(false)
        Thread.detachNewThread {
            OpensInProgress.during {
                started.signal()
                usleep(200_000)
                finished.withLock { $0 = true }
            }
            done.signal()
        }
        started.wait()
        OpensInProgress.waitUntilNone(atMostSeconds: 30)
        #expect(finished.withLock { $0 }, "the wait returned while the open was still in progress")
        done.wait()
    }

    @Test func aWaitIsBoundedWhateverTheOpensDo() {
        let started = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0), done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            OpensInProgress.during {
                started.signal()
                release.wait()
            }
            done.signal()
        }
        started.wait()
        let start = DispatchTime.now().uptimeNanoseconds
        OpensInProgress.waitUntilNone(atMostSeconds: 0.1)
        let waited = Self.seconds(since: start)
        release.signal()
        done.wait()
        #expect(waited >= 0.09 && waited < 10, "waited \(waited) s")
    }

    @Test func aStoreClosedWithAFullCacheOpensAgainAndReadsTheSame() throws {
        let dir = TemporaryDirectory()
        var options = EngineOptions()
        options.blockCacheBytes = 1 << 20
        let e = try Engine.open(directory: dir.path, options: options)
        var batch = WriteBatch()
        for i in 0..<20_000 { batch.put(Array("k\(i)".utf8), Array(repeating: UInt8(i & 0xFF), count: 100), in: e.defaultKeySpace) }
        try e.write(batch)
        try e.flush()
        for i in stride(from: 0, to: 20_000, by: 7) { _ = try e.get(Array("k\(i)".utf8), in: e.defaultKeySpace) }
        for _ in 0..<3 {
            e.close()
            let again = try Engine.open(directory: dir.path, options: options)
            for i in stride(from: 0, to: 20_000, by: 97) {
                #expect(try again.get(Array("k\(i)".utf8), in: again.defaultKeySpace) == Array(repeating: UInt8(i & 0xFF), count: 100))
            }
            again.close()
        }
    }
}
