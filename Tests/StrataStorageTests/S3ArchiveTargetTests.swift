import Foundation
import Synchronization
import Testing
@testable import StrataS3
@testable import StrataStorage
import StrataTesting

/// The S3 server the tests use: `scripts/s3-server.sh` starts one (`./scripts/test.sh` does, and
/// CI), or `STRATA_S3_ENDPOINT` with `STRATA_S3_BUCKET` and the `AWS_*` keys points at any other.
enum S3TestServer {
    static let environment = ProcessInfo.processInfo.environment
    static var endpoint: String? { environment["STRATA_S3_ENDPOINT"].flatMap { $0.isEmpty ? nil : $0 } }
    /// Outside CI, without a server, the S3 tests are skipped (and say so once); in CI they run
    /// and fail.
    static let isAvailable: Bool = {
        if endpoint == nil && environment["CI"] == nil {
            print("S3 tests skipped: no STRATA_S3_ENDPOINT (./scripts/test.sh starts a local S3 server)")
        }
        return endpoint != nil || environment["CI"] != nil
    }()

    /// A configuration under a prefix of its own (a fresh, empty archive).
    static func configuration(prefix: String = "t-" + UUID().uuidString.lowercased() + "/") throws -> S3Configuration {
        let endpoint = try #require(endpoint, "STRATA_S3_ENDPOINT is not set: start scripts/s3-server.sh")
        let bucket = environment["STRATA_S3_BUCKET"] ?? "strata-test"
        var c = try S3Configuration(url: "s3://\(bucket)/\(prefix)", endpoint: endpoint)
        c.requestTimeout = 10
        return c
    }
}

/// Serialized: one of them stops the gateway for a few seconds.
@Suite(.enabled(if: S3TestServer.isAvailable), .serialized) struct S3ArchiveTargetTests {
    @Test func objectsArePutOnceListedByPageAndDeleted() throws {
        let target = S3ArchiveTarget(try S3TestServer.configuration(), pageSize: 7)
        #expect(try target.list().isEmpty)
        var expected: Set<String> = []
        for i in 0..<20 {
            let name = "obj-\(i)"
            try target.put(name, Array("bytes \(i)".utf8))
            expected.insert(name)
        }
        #expect(Set(try target.list()) == expected)
        #expect(try target.get("obj-3") == Array("bytes 3".utf8))
        // Create-once: the same bytes again are a retried put; other bytes an error.
        try target.put("obj-3", Array("bytes 3".utf8))
        #expect(throws: S3Error.objectExists(target.configuration.prefix + "obj-3")) { try target.put("obj-3", Array("other".utf8)) }
        #expect(try target.get("obj-3") == Array("bytes 3".utf8))
        #expect(throws: S3Error.noSuchKey(target.configuration.prefix + "missing")) { try target.get("missing") }
        try target.delete("missing")
        try target.delete("obj-3")
        #expect(Set(try target.list()) == expected.subtracting(["obj-3"]))
        // An empty object and one of a few megabytes.
        try target.put("empty", [])
        #expect(try target.get("empty") == [])
        let big = (0..<(3 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        try target.put("big", big)
        #expect(try target.get("big") == big)
    }

    /// A wrong secret is `accessDenied` at once: a 4xx is never retried.
    @Test func aWrongSecretIsAccessDeniedWithoutRetries() throws {
        var c = try S3TestServer.configuration()
        c.credentials.secretAccessKey += "x"
        let target = S3ArchiveTarget(c)
        #expect {
            try target.put("x", [1])
        } throws: { error in
            if case .accessDenied? = error as? S3Error { return true }
            return false
        }
        #expect(target.client.attemptsMade.load(ordering: .relaxed) == 1)
        var missing = try S3TestServer.configuration()
        missing.bucket = "no-such-bucket-strata"
        #expect(throws: S3Error.noSuchBucket("no-such-bucket-strata")) { try S3ArchiveTarget(missing).list() }
    }

    /// The archive's test set with an S3 target: a restore at every third commit equals the
    /// model, across two generations with flushes and compactions; retention deletes what no
    /// kept state needs; a damaged object is named.
    @Test func restoreAtEveryThirdCommitEqualsTheModel() throws {
        let dir = TemporaryDirectory(), root = TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: root.path, withIntermediateDirectories: true)
        let target = S3ArchiveTarget(try S3TestServer.configuration())
        var model: [String: String] = [:], history: [UInt64: [String: String]] = [0: [:]]
        for round in 0..<2 {
            let e = try Engine.open(directory: dir.path, options: ArchiveTests.archived(target))
            try ArchiveTests.workload(e, commits: 90, seed: UInt64(70 + round), model: &model, history: &history, flushEvery: 20)
            _ = try e.compact()
            try e.archiveNow()
            e.close()
        }
        for (i, s) in history.keys.sorted().enumerated() where i % 3 == 0 {
            let path = root.path + "/\(s)"
            let report = try Engine.restoreArchive(from: target, toDirectoryPath: path, at: .sequence(s))
            #expect(report.sequence == s)
            #expect(try ArchiveTests.contents(ofStoreAt: path) == history[s], "sequence \(s)")
        }
        // Damage: a log piece replaced by other bytes is named.
        let piece = try #require(try target.list().sorted().last { $0.contains("-log-") })
        var bytes = try target.get(piece)
        bytes[bytes.count / 2] ^= 0x20
        try target.delete(piece)
        try target.put(piece, bytes)
        #expect {
            try Engine.restoreArchive(from: target, toDirectoryPath: root.path + "/damaged")
        } throws: { error in
            guard case let StorageError.corruption(file, _, _)? = error as? StorageError else { return false }
            return file == piece
        }
    }

    /// An encrypted store's archive on S3 (issue 57): every object in the bucket is sealed (its
    /// header first, no stored value in it), and restores with the key, only with it.
    @Test func anEncryptedStoresArchiveOnS3IsSealedAndRestoresWithItsKey() throws {
        let dir = TemporaryDirectory(), root = TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: root.path, withIntermediateDirectories: true)
        let target = S3ArchiveTarget(try S3TestServer.configuration())
        let key = [UInt8](repeating: 0x3C, count: 32)
        var model: [String: String] = [:], history: [UInt64: [String: String]] = [0: [:]]
        var options = ArchiveTests.archived(target)
        options.encryptionKey = key
        let e = try Engine.open(directory: dir.path, options: options)
        try ArchiveTests.workload(e, commits: 60, seed: 91, model: &model, history: &history, flushEvery: 20)
        try e.archiveNow()
        e.close()
        let names = try target.list()
        #expect(names.contains { $0.contains("-log-") } && names.contains { $0.contains("-state-") } && names.contains { $0.contains("-seg-") })
        for name in names {
            let bytes = try target.get(name)
            #expect(bytes.withUnsafeBytes { EncryptionHeader.startsWithMagic($0) }, "\(name) is not sealed")
            for v in model.values.filter({ $0.utf8.count >= 16 }).prefix(20) { #expect(!EncryptionTests.contains(bytes, Array(v.utf8)), "\(name) holds \(v)") }
        }
        for (i, s) in history.keys.sorted().enumerated() where i % 10 == 0 {
            var restore = ArchiveRestoreOptions()
            restore.encryptionKey = key
            let path = root.path + "/\(s)"
            #expect(try Engine.restoreArchive(from: target, toDirectoryPath: path, at: .sequence(s), options: restore).sequence == s)
            #expect(try ArchiveTests.contents(ofStoreAt: path, encryptionKey: key) == history[s], "sequence \(s)")
        }
        #expect(throws: StorageError.self) { try Engine.restoreArchive(from: target, toDirectoryPath: root.path + "/nokey") }
    }

    @Test func retentionDeletesWhatNoKeptStateNeeds() throws {
        try ArchiveTests.retentionDeletesWhatNoKeptStateNeeds(S3ArchiveTarget(try S3TestServer.configuration()))
    }

    /// A replica following an archive on S3 shows only the primary's states, whole
    /// transactions in order, and follows the primary's next generation after a reopen.
    @Test func aReplicaFollowsAnArchiveOnS3() throws {
        try ReplicaTests.everyStateAReplicaShowsIsThePrimarysAtThatSequence(S3ArchiveTarget(try S3TestServer.configuration()), pollInterval: 0.02)
        try ReplicaTests.aReplicaReopensWhereItStoppedAndFollowsTheNextGeneration(S3ArchiveTarget(try S3TestServer.configuration()))
    }

    /// Two stores under two prefixes of one bucket never touch each other's objects; a second
    /// store pointed at the first's prefix is refused.
    @Test func twoPrefixesKeepTwoStoresApartAndOnePrefixRefusesASecond() throws {
        let a = TemporaryDirectory(), b = TemporaryDirectory(), c = TemporaryDirectory(), root = TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: root.path, withIntermediateDirectories: true)
        let base = "t-" + UUID().uuidString.lowercased()
        let targetA = S3ArchiveTarget(try S3TestServer.configuration(prefix: base + "/a/"))
        let targetB = S3ArchiveTarget(try S3TestServer.configuration(prefix: base + "/b/"))
        var models: [[String: String]] = [[:], [:]], history: [UInt64: [String: String]] = [:]
        for (i, (dir, target)) in [(a, targetA), (b, targetB)].enumerated() {
            let e = try Engine.open(directory: dir.path, options: ArchiveTests.archived(target, retention: .states(2)))
            for round in 0..<3 {
                try ArchiveTests.workload(e, commits: 30, seed: UInt64(90 + 10 * i + round), model: &models[i], history: &history, flushEvery: 1000)
                try e.flush()
                try e.archiveNow()
            }
            e.close()
        }
        for (i, target) in [targetA, targetB].enumerated() {
            #expect(Set(try target.list().compactMap { ArchiveObject(name: $0)?.store }).count == 1)
            try Engine.restoreArchive(from: target, toDirectoryPath: root.path + "/\(i)")
            #expect(try ArchiveTests.contents(ofStoreAt: root.path + "/\(i)") == models[i])
        }
        // A third store at A's prefix ships nothing and says why.
        let e = try Engine.open(directory: c.path, options: ArchiveTests.archived(targetA))
        #expect {
            try e.archiveNow(timeout: 20)
        } throws: { error in
            if case .archiveOfAnotherStore? = error as? StorageError { return true }
            return false
        }
        e.close()
    }

    /// The gateway stops and starts again in the middle of a workload: commits never wait, the
    /// archive reports the failures, catches up, and loses nothing.
    @Test(.enabled(if: S3TestServer.environment["STRATA_S3_SERVER_DIR"] != nil || S3TestServer.environment["CI"] != nil,
                   "needs the local server of scripts/s3-server.sh"))
    func aGatewayRestartMidWorkloadHoldsUpNoCommitAndLosesNothing() throws {
        let serverDir = try #require(S3TestServer.environment["STRATA_S3_SERVER_DIR"], "needs the local server of scripts/s3-server.sh")
        let dir = TemporaryDirectory(), root = TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: root.path, withIntermediateDirectories: true)
        var c = try S3TestServer.configuration()
        c.requestTimeout = 2
        c.attempts = 2
        let target = S3ArchiveTarget(c)
        let e = try Engine.open(directory: dir.path, options: ArchiveTests.archived(target, interval: 0.05))
        var model: [String: String] = [:], history: [UInt64: [String: String]] = [:]
        try ArchiveTests.workload(e, commits: 50, seed: 100, model: &model, history: &history)
        try e.archiveNow()
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("scripts/s3-server.sh").path
        let restart = try Self.spawn(["/bin/bash", script, "restart-gateway", serverDir])
        // Commits go on while the gateway is down and coming back.
        try ArchiveTests.workload(e, commits: 300, seed: 101, model: &model, history: &history)
        var status: Int32 = 0
        #expect(waitpid(restart, &status, 0) == restart && status == 0)
        try ArchiveTests.workload(e, commits: 50, seed: 102, model: &model, history: &history)
        try e.archiveNow(timeout: 120)
        e.close()
        try Engine.restoreArchive(from: target, toDirectoryPath: root.path + "/latest")
        #expect(try ArchiveTests.contents(ofStoreAt: root.path + "/latest") == model)
        let s = history.keys.sorted()[history.count / 2]
        try Engine.restoreArchive(from: target, toDirectoryPath: root.path + "/middle", at: .sequence(s))
        #expect(try ArchiveTests.contents(ofStoreAt: root.path + "/middle") == history[s])
    }

    /// Starts a process (posix_spawn: Foundation's `Process` did not see this script's exit
    /// from a test's thread) and returns its pid, for `waitpid`.
    static func spawn(_ arguments: [String]) throws -> pid_t {
        var pid: pid_t = 0
        let argv = arguments.map { strdup($0) } + [nil]
        defer { for a in argv { free(a) } }
        let rc = posix_spawn(&pid, arguments[0], nil, nil, argv, environ)
        guard rc == 0 else { throw StorageError.io(operation: "posix_spawn", path: arguments[0], errno: rc) }
        return pid
    }

    /// A power cut or a kill of the store while it archives to S3: the store reopens whole, a
    /// new generation starts, and every commit the archive held before the cut restores.
    @Test(arguments: [InMemoryFileSystem.CrashPolicy.dropUnsynced, .keepEverything])
    func crashWhileArchiving(_ policy: InMemoryFileSystem.CrashPolicy) throws {
        try ArchiveTests.crashWhileArchiving(policy, cuts: [5, 30], every: 5) { _, _ in
            let target = S3ArchiveTarget(try S3TestServer.configuration())
            return (target, target)
        }
    }
}

/// An endpoint that accepts connections and never answers: every request ends at its timeout,
/// never later. Needs no S3 server.
@Suite struct S3TimeoutTests {
    @Test func aHungEndpointTimesOutEveryAttempt() throws {
        let listener = try SilentListener()
        defer { listener.close() }
        var c = S3Configuration(endpoint: URL(string: "http://127.0.0.1:\(listener.port)")!, bucket: "hung",
                                credentials: S3Credentials(accessKeyId: "k", secretAccessKey: "s"))
        c.requestTimeout = 1
        c.attempts = 2
        let target = S3ArchiveTarget(c)
        let start = Date()
        #expect {
            try target.put("x", [1, 2, 3])
        } throws: { error in
            (error as? S3Error) == .timedOut(seconds: 1)
        }
        // Two attempts of a second each (and the backoff), not forever.
        let elapsed = Date().timeIntervalSince(start)
        #expect(elapsed >= 1.9 && elapsed < 10, "\(elapsed) s")
        #expect(target.client.attemptsMade.load(ordering: .relaxed) == 2)
    }

    /// A store archiving to an endpoint that never answers: every commit goes through, and the
    /// close is bounded, naming what the archive lacks.
    @Test func aHungEndpointHoldsUpNoCommitAndNoClose() throws {
        let listener = try SilentListener()
        defer { listener.close() }
        var c = S3Configuration(endpoint: URL(string: "http://127.0.0.1:\(listener.port)")!, bucket: "hung",
                                credentials: S3Credentials(accessKeyId: "k", secretAccessKey: "s"))
        c.requestTimeout = 60
        let dir = TemporaryDirectory()
        let events = Mutex<[EngineEvent]>([])
        var options = ArchiveTests.archived(S3ArchiveTarget(c))
        options.eventListener = { event in events.withLock { $0.append(event) } }
        let e = try Engine.open(directory: dir.path, options: options)
        e.archiver?.closeTimeout = 1
        var model: [String: String] = [:], history: [UInt64: [String: String]] = [:]
        try ArchiveTests.workload(e, commits: 100, seed: 5, model: &model, history: &history)
        #expect(e.archiveStatus()?.archivedSequence == 0)
        let start = Date()
        e.close()
        #expect(Date().timeIntervalSince(start) < 20)
        #expect(events.withLock { $0 }.contains { if case .archiveUnfinished = $0 { return true } else { return false } })
    }
}

/// A TCP listener on 127.0.0.1 that takes connections into its backlog and never reads them.
final class SilentListener {
    let fd: Int32
    let port: UInt16

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw StorageError.io(operation: "socket", path: "", errno: errno) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
        guard bound == 0, listen(fd, 16) == 0 else { throw StorageError.io(operation: "bind", path: "", errno: errno) }
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        port = UInt16(bigEndian: address.sin_port)
        self.fd = fd
    }

    func close() { _ = Glibc.close(fd) }
}
