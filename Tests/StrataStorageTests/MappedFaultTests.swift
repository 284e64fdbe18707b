import Foundation
import StrataTestSupport
import Testing
@testable import StrataStorage

/// Segments are read through a shared mapping and the WAL is written through one. A mapped page
/// the kernel cannot back any more raises SIGBUS; these tests make that happen, with another
/// process truncating the files under a running store, and require typed errors instead of the
/// end of the test process (SPEC.md §5.2, §6.6).
@Suite struct MappedFaultTests {
    /// Truncates `path` to `size` bytes from another process, as a careless tool would.
    static func truncateFromAnotherProcess(_ path: String, to size: Int) throws {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["truncate", "-s", String(size), path]
        try p.run()
        p.waitUntilExit()
        #expect(p.terminationStatus == 0)
    }

    static func key(_ i: Int) -> [UInt8] { Array(String(format: "key-%08d", i).utf8) }
    static func value(_ i: Int) -> [UInt8] { Array("value-\(i)-".utf8) + [UInt8](repeating: UInt8(i & 0x7F), count: 100) }

    #if os(Linux)
    /// How many mappings of segment files under `directory` the process has.
    static func mappedSegments(under directory: String) throws -> Int {
        // Read to the end: a /proc file reports a size of 0, which size-based readers trust.
        let maps = try FileHandle(forReadingFrom: URL(fileURLWithPath: "/proc/self/maps")).readToEnd() ?? Data()
        return String(decoding: maps, as: UTF8.self)
            .split(separator: "\n").filter { $0.contains(directory) && $0.hasSuffix(".seg") }.count
    }

    /// `PosixFileSystem(mapsSegments: false)` reads segments with `pread`: nothing of the store
    /// is mapped, and reads, scans and a compaction give what a mapped store gives.
    @Test func segmentsReadWithoutMappings() throws {
        let dir = TemporaryDirectory()
        var options = EngineOptions()
        options.fileSystem = PosixFileSystem(mapsSegments: false)
        options.blockCacheBytes = 1 << 20
        let e = try Engine.open(directory: dir.path, options: options)
        defer { e.close() }
        for round in 0..<3 {
            var batch = WriteBatch()
            for i in stride(from: round, to: 6_000, by: 3) { batch.put(Self.key(i), Self.value(i), in: e.defaultKeySpace) }
            try e.write(batch)
            try e.flush()
        }
        _ = try e.compact()
        for i in stride(from: 0, to: 6_000, by: 7) { #expect(try e.get(Self.key(i), in: e.defaultKeySpace) == Self.value(i)) }
        #expect(try e.scan(e.defaultKeySpace).count == 6_000)
        #expect(e.statistics().blockCacheMisses > 0)
        #expect(try Self.mappedSegments(under: dir.path) == 0)
    }

    /// A closed store's segment mappings are unmapped on a background thread, not leaked: soon
    /// after the engine goes, no mapping of its directory is left in the process.
    @Test func segmentMappingsGoAwayAfterClose() throws {
        let dir = TemporaryDirectory()
        func mappedSegments() throws -> Int { try Self.mappedSegments(under: dir.path) }
        do {
            let e = try Engine.open(directory: dir.path)
            var batch = WriteBatch()
            for i in 0..<2_000 { batch.put(Self.key(i), Self.value(i), in: e.defaultKeySpace) }
            try e.write(batch)
            try e.flush()
            #expect(try e.get(Self.key(7), in: e.defaultKeySpace) == Self.value(7))
            #expect(try mappedSegments() > 0)
            e.close()
        }
        var left = try mappedSegments()
        for _ in 0..<500 where left > 0 {
            usleep(10_000)
            left = try mappedSegments()
        }
        #expect(left == 0)
    }
    #endif

    /// Raw and lz4-compressed blocks alike are copied out of the mapping before they are
    /// checked (and decompressed), and so are the id block entries of format 5 that a read
    /// copies alone: reads of every kind must survive the truncation.
    @Test(arguments: ["raw", "lz4", "id entries"])
    func readsOfSegmentsTruncatedByAnotherProcessThrowAndNeverCrash(layout: String) throws {
        let dir = TemporaryDirectory()
        var options = EngineOptions()
        options.blockCacheBytes = 64 * 1024  // a small cache: most reads go to the file
        let compressed = layout == "lz4"
        options.compression = compressed
        if layout == "id entries" {
            options.keySpaces = ["objects"]
            options.idKeySpaces = ["objects"]
        }
        let e = try Engine.open(directory: dir.path, options: options)
        defer { e.close() }
        let space = layout == "id entries" ? try e.keySpace(named: "objects") : e.defaultKeySpace
        // An id key space's keys: a 4-byte head and a big-endian id.
        @Sendable func key(_ i: Int) -> [UInt8] {
            layout == "id entries" ? [0, 0, 0, 9] + withUnsafeBytes(of: UInt64(i + 1).bigEndian) { Array($0) } : Self.key(i)
        }
        let count = 40_000
        for start in stride(from: 0, to: count, by: 1000) {
            var batch = WriteBatch()
            for i in start..<(start + 1000) { batch.put(key(i), Self.value(i), in: space) }
            try e.write(batch)
        }
        try e.flush()
        let segments = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasSuffix(".seg") }
        #expect(!segments.isEmpty)
        // The values (110 bytes, 100 of them one repeated byte) compress to a fraction: a store
        // of compressed blocks is far smaller than the raw values.
        let segmentBytes = try segments.reduce(0) { sum, name in
            sum + ((try FileManager.default.attributesOfItem(atPath: dir.path + "/" + name)[.size] as? Int) ?? 0)
        }
        #expect((segmentBytes < count * 50) == compressed)

        // Readers run from before the truncation to well after it.
        let stop = LockedValue(false)
        let tally = LockedValue((right: 0, typedErrors: 0, wrong: 0, afterCut: 0))
        let cut = LockedValue(false)
        let group = DispatchGroup()
        for t in 0..<2 {
            group.enter()
            Thread.detachNewThread {
                defer { group.leave() }
                var rng = SplitMix64(state: UInt64(t + 1))
                while !stop.withLock({ $0 }) {
                    let i = Int(rng.next() % UInt64(count))
                    let wasCut = cut.withLock { $0 }
                    do {
                        let v = try e.get(key(i), in: space)
                        tally.withLock { if v == Self.value(i) { $0.right += 1 } else { $0.wrong += 1 } }
                    } catch is StorageError {
                        tally.withLock { $0.typedErrors += 1; if wasCut { $0.afterCut += 1 } }
                    } catch {
                        tally.withLock { $0.wrong += 1 }
                    }
                }
            }
        }
        Thread.sleep(forTimeInterval: 0.2)
        for name in segments { try Self.truncateFromAnotherProcess(dir.path + "/" + name, to: 4096) }
        cut.withLock { $0 = true }
        Thread.sleep(forTimeInterval: 0.5)
        stop.withLock { $0 = true }
        group.wait()
        let result = tally.withLock { $0 }
        // Reads of the cut-off blocks fail with a typed error; none returns a wrong value.
        #expect(result.wrong == 0)
        #expect(result.right > 0)
        #expect(result.afterCut > 0)
    }

    #if os(Linux)
    /// A SIGBUS another process sends (`kill -BUS`) is no mapped-page fault: the process that
    /// reads through the guard ends with it, as it would without the guard (issue 54: it was
    /// swallowed, and the guard uninstalled).
    @Test func aSIGBUSSentByAnotherProcessEndsTheProcessAsWithoutTheGuard() throws {
        let binary = try #require(LockTests.tortureBinary, "strata-torture was not built next to the tests")
        let dir = TemporaryDirectory()
        do {
            let e = try Engine.open(directory: dir.path)
            var batch = WriteBatch()
            for i in 0..<100 { batch.put(Self.key(i), Self.value(i), in: e.defaultKeySpace) }
            try e.write(batch)
            try e.flush()
            e.close()
        }
        let child = Process()
        child.executableURL = URL(fileURLWithPath: binary)
        child.arguments = ["hold-after-reading", dir.path]
        // Without Swift's crash handler, whose own SIGBUS handler would otherwise be the one
        // the guard hands the signal to: the disposition under the guard is then the default.
        var environment = ProcessInfo.processInfo.environment
        environment["SWIFT_BACKTRACE"] = "enable=no"
        child.environment = environment
        let input = Pipe(), output = Pipe(), errors = Pipe()
        child.standardInput = input
        child.standardOutput = output
        child.standardError = errors
        try child.run()
        var seen = ""
        while !seen.contains("ready") {
            let data = output.fileHandleForReading.availableData
            if data.isEmpty { break }
            seen += String(decoding: data, as: UTF8.self)
        }
        #expect(seen.contains("keys 100") && seen.contains("ready"), "\(seen)")
        kill(child.processIdentifier, SIGBUS)
        let deadline = Date().addingTimeInterval(10)
        while child.isRunning && Date() < deadline { usleep(10_000) }
        let survived = child.isRunning
        if survived { try input.fileHandleForWriting.close() }   // let it end, the test failed
        child.waitUntilExit()
        #expect(!survived, "the SIGBUS was swallowed")
        // Ended by the signal, not by its own clean exit: a swallowed signal ended the child's
        // wait on its input with EINTR, and it closed the store and exited with 0. Without a
        // sanitizer, by SIGBUS's default action; under one, by its deadly-signal report.
        let report = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        if report.contains("Sanitizer") {
            #expect(child.terminationReason == .exit && child.terminationStatus != 0, "\(report)")
        } else {
            #expect(child.terminationReason == .uncaughtSignal && child.terminationStatus == SIGBUS,
                    "ended with \(child.terminationReason == .exit ? "exit" : "signal") \(child.terminationStatus): \(report)")
        }
    }

    @Test func aLogTruncatedByAnotherProcessStopsWritesWithATypedError() throws {
        let dir = TemporaryDirectory()
        let e = try Engine.open(directory: dir.path)
        defer { e.close() }
        for i in 0..<100 {
            var batch = WriteBatch()
            batch.put(Self.key(i), Self.value(i), in: e.defaultKeySpace)
            try e.write(batch)
        }
        let wal = try #require(try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasSuffix(".wal") }.sorted().last)
        try Self.truncateFromAnotherProcess(dir.path + "/" + wal, to: 0)

        // The next store into the log's mapping faults: a typed error, then writes stop.
        var firstError: StorageError?
        for i in 100..<200 {
            var batch = WriteBatch()
            batch.put(Self.key(i), Self.value(i), in: e.defaultKeySpace)
            do { try e.write(batch) } catch let error as StorageError {
                firstError = error
                break
            }
        }
        let error = try #require(firstError)
        guard case .io = error else {
            Issue.record("expected an I/O error, got \(error)")
            return
        }
        var batch = WriteBatch()
        batch.put(Self.key(1), Self.value(1), in: e.defaultKeySpace)
        #expect {
            try e.write(batch)
        } throws: { error in
            if case .writesStopped = error as? StorageError { return true }
            return false
        }
        // Reads go on.
        #expect(try e.get(Self.key(5), in: e.defaultKeySpace) == Self.value(5))
    }
    #endif
}
