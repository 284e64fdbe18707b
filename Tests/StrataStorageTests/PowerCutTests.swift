import Foundation
import Testing
@testable import StrataStorage
import StrataTesting

/// RELIABILITY.md §2: a scripted workload (durable and non-durable batches across two key spaces,
/// flushes, compactions, a reopen) is cut at its k-th sync, rename or directory sync, for every
/// k, and the power cut is simulated in several variants. Every recovered store must open and
/// equal a prefix of the committed batches that holds every durable one: no loss, no hole.
@Suite struct PowerCutTests {
    static let batches = 120

    /// One shape of the scripted workload.
    struct Variant: CustomStringConvertible {
        /// Every n-th batch is durable (`.sync`).
        var durableEvery: Int
        var memtableBytes: Int
        /// The store is encrypted with this key (SPEC.md §14): every file sealed.
        var encryptionKey: [UInt8]? = nil
        /// The small-memtable variants roll their manifest after almost every edit (SPEC.md §8),
        /// so that cuts meet the roll's writes, rename and removal too.
        var rollsManifest: Bool { memtableBytes < 4 << 10 }
        var description: String {
            "durable every \(durableEvery), memtable \(memtableBytes)\(rollsManifest ? ", manifest rolls" : "")\(encryptionKey == nil ? "" : ", encrypted")"
        }
        var encrypted: Variant {
            var v = self
            v.encryptionKey = (0..<32).map { UInt8($0 * 7 + 1) }
            return v
        }
    }

    static let variants: [Variant] = [1, 2, 3, 4, 5, 7, 9].flatMap { d in
        [2 << 10, 6 << 10].map { Variant(durableEvery: d, memtableBytes: $0) }
    }

    struct Progress {
        var committed = 0
        var durable = 0
    }

    static func options(_ fs: any FileSystem, _ v: Variant) -> EngineOptions {
        var o = EngineOptions.testing(fs, memtableBytes: v.memtableBytes, blockBytes: 256, targetSegmentBytes: 64 << 10)
        o.encryptionKey = v.encryptionKey
        if v.rollsManifest {
            o.manifestRollMinimumBytes = 0
            o.manifestRollLiveMultiple = 1
        }
        return o
    }

    /// Batch i writes "b-i" in both key spaces and the shared "counter" key; every n-th is
    /// durable. Stops at the first failure (the point where the machine stopped).
    static func workload(_ fs: FaultInjectingFileSystem, _ v: Variant, progress: inout Progress) {
        var engine: Engine?
        defer { engine?.close() }
        do {
            engine = try Engine.open(directory: "/db", options: options(fs, v))
            for i in 0..<batches {
                if i == batches / 2 {
                    // A clean reopen in the middle: recovery's own writes are crash points too.
                    engine?.close()
                    engine = try Engine.open(directory: "/db", options: options(fs, v))
                }
                guard let e = engine else { return }
                let a = e.defaultKeySpace, b = try e.keySpace(named: "mirror")
                var batch = WriteBatch()
                let k = bytes(String(format: "b-%04d", i))
                batch.put(k, bytes("value-\(i)"), in: a)
                batch.put(k, bytes("mirror-\(i)"), in: b)
                batch.put(bytes("counter"), bytes(String(i)), in: a)
                let durable = i % v.durableEvery == v.durableEvery - 1
                try e.write(batch, durability: durable ? .sync : Durability.none)
                progress.committed = i + 1
                if durable { progress.durable = i + 1 }
                if i % 30 == 29 {
                    try e.flush()
                    try e.waitForBackgroundWork()
                    progress.durable = i + 1   // flushed to synced segments and manifest
                }
                if i == 100 {
                    _ = try e.compact()
                    progress.durable = i + 1
                }
            }
        } catch {
            return
        }
    }

    /// The recovered store is batches 0..<p for one p with durable ≤ p ≤ committed + 1 (the
    /// batch whose sync failed may survive), the same p in both key spaces.
    static func check(_ fs: any FileSystem, _ v: Variant, _ progress: Progress) -> String? {
        do {
            let e = try Engine.open(directory: "/db", options: options(fs, v))
            defer { e.close() }
            let a = e.defaultKeySpace
            let keys = try e.scan(a).map { string($0.key) }.filter { $0.hasPrefix("b-") }
            let p = keys.count
            guard keys == (0..<p).map({ String(format: "b-%04d", $0) }) else { return "not a prefix: \(keys.prefix(5))…" }
            for i in 0..<p {
                guard try e.getString(String(format: "b-%04d", i), in: a) == "value-\(i)" else { return "wrong value of batch \(i)" }
            }
            let mirror = try e.existingKeySpace(named: "mirror").map { try e.scan($0).map { string($0.key) } } ?? []
            guard mirror == keys else { return "half a batch: \(p) batches in default, \(mirror.count) in mirror" }
            guard try e.getString("counter", in: a) == (p == 0 ? nil : String(p - 1)) else { return "counter disagrees with \(p) batches" }
            guard p >= progress.durable else { return "lost durable batches: \(p) left, \(progress.durable) durable" }
            guard p <= progress.committed + 1 else { return "\(p) batches, only \(progress.committed) committed" }
            return nil
        } catch {
            return "does not open: \(error)"
        }
    }

    static let policies: [InMemoryFileSystem.CrashPolicy] = [
        .dropUnsynced, .dropUnsyncedDirectoryEntries, .keepEverything,
        .keepRandomPrefixOfUnsynced(seed: 1), .keepRandomPrefixOfUnsynced(seed: 2),
        .garbageUnsyncedTail(seed: 3), .garbageUnsyncedTail(seed: 4),
        .keepRandomUnsyncedPages(seed: 5, pageBytes: 128, garbage: false),
        .keepRandomUnsyncedPages(seed: 6, pageBytes: 128, garbage: true),
    ]

    /// More subsets of pages for the full run: with the two above, seven per crash point. The
    /// workload's records are about 60 bytes and its unsynced tails a few hundred: pages of
    /// 128–256 bytes give such a tail several pages, as a real log's tail of 4 KiB pages has.
    static let fullOnlyPolicies: [InMemoryFileSystem.CrashPolicy] = [
        .keepRandomUnsyncedPages(seed: 7, pageBytes: 4096, garbage: false),
        .keepRandomUnsyncedPages(seed: 8, pageBytes: 256, garbage: false),
        .keepRandomUnsyncedPages(seed: 9, pageBytes: 128, garbage: true),
        .keepRandomUnsyncedPages(seed: 10, pageBytes: 512, garbage: true),
        .keepRandomUnsyncedPages(seed: 11, pageBytes: 256, garbage: true),
    ]

    /// Crash points (syncs, renames, directory syncs) of one whole run.
    static func crashPoints(_ v: Variant, _ memory: InMemoryFileSystem = InMemoryFileSystem()) -> Int {
        let fs = FaultInjectingFileSystem(wrapping: memory)
        fs.injectFault(.init(afterOperations: Int.max, operations: [.sync, .rename, .syncDirectory], error: .closed))
        var progress = Progress()
        workload(fs, v, progress: &progress)
        #expect(progress.committed == batches)
        return fs.matchedOperationCount
    }

    /// The suite tries every second crash point of three variants; `STRATA_POWER_CUT_FULL=1`
    /// tries every crash point of every variant (the figure in RELIABILITY.md).
    @Test func everyCrashPointInEveryVariantRecoversAPrefixWithEveryDurableBatch() throws {
        let full = ProcessInfo.processInfo.environment["STRATA_POWER_CUT_FULL"] == "1"
        let variants = full ? Self.variants : [Self.variants[0], Self.variants[7], Self.variants[13]]
        let policies = full ? Self.policies + Self.fullOnlyPolicies : Self.policies
        let r = Self.run(variants, policies, every: full ? 1 : 2) { InMemoryFileSystem() }
        print("power cut: \(variants.count) workload variants, \(r.points) crash points, \(policies.count) crash variants, \(r.states) crash states (\(r.pageStates) with random subsets of unsynced pages), \(r.failures.count) failures")
        #expect(r.failures.isEmpty, "\(r.failures.prefix(10))")
        #expect(r.states > 500)
    }

    /// The same with the WAL written as the mapped log writes it on Linux: space reserved
    /// ahead in zero-filled steps and filled in place, so that every power cut meets a log
    /// rewritten since its last sync, whose pages (zeros or records, old or new) reach the disk
    /// in any order. `STRATA_POWER_CUT_FULL=1` runs every crash point of every variant.
    @Test func aMappedLogCutAtEveryCrashPointRecoversAPrefixWithEveryDurableBatch() throws {
        let full = ProcessInfo.processInfo.environment["STRATA_POWER_CUT_FULL"] == "1"
        let variants = full ? Self.variants : [Self.variants[1], Self.variants[8]]
        let policies: [InMemoryFileSystem.CrashPolicy] = [.dropUnsynced, .keepEverything] +
            (full ? Self.policies.filter { if case .keepRandomUnsyncedPages = $0 { true } else { false } } + Self.fullOnlyPolicies
                  : [.keepRandomUnsyncedPages(seed: 12, pageBytes: 128, garbage: false),
                     .keepRandomUnsyncedPages(seed: 13, pageBytes: 256, garbage: true)])
        let r = Self.run(variants, policies, every: full ? 1 : 3) { InMemoryFileSystem(logReserveBytes: 1024) }
        print("power cut, mapped log: \(variants.count) workload variants, \(r.points) crash points, \(policies.count) crash variants, \(r.states) crash states (\(r.pageStates) with random subsets of pages), \(r.failures.count) failures")
        #expect(r.failures.isEmpty, "\(r.failures.prefix(10))")
        #expect(r.states > 200)
    }

    /// The same on an encrypted store (issue 57): sealed log records and blocks, torn and cut
    /// back like plaintext ones, with the mapped log's reserved zeros too. Every crash state
    /// opens with a prefix holding every durable batch. `STRATA_POWER_CUT_FULL=1` runs every
    /// crash point of every variant.
    @Test func anEncryptedStoreCutAtEveryCrashPointRecoversAPrefixWithEveryDurableBatch() throws {
        let full = ProcessInfo.processInfo.environment["STRATA_POWER_CUT_FULL"] == "1"
        let variants = (full ? Self.variants : [Self.variants[0], Self.variants[9]]).map(\.encrypted)
        let policies = full ? Self.policies + Self.fullOnlyPolicies : Self.policies
        let r = Self.run(variants, policies, every: full ? 1 : 3) { InMemoryFileSystem() }
        let mapped = Self.run(full ? variants : [variants[1]], [.dropUnsynced, .keepRandomUnsyncedPages(seed: 14, pageBytes: 128, garbage: true)],
                              every: full ? 1 : 3) { InMemoryFileSystem(logReserveBytes: 1024) }
        print("power cut, encrypted: \(variants.count) workload variants, \(r.points) crash points, \(policies.count) crash variants, \(r.states) crash states (\(r.pageStates) with random subsets of unsynced pages), mapped log \(mapped.states) states, \(r.failures.count + mapped.failures.count) failures")
        #expect(r.failures.isEmpty, "\(r.failures.prefix(10))")
        #expect(mapped.failures.isEmpty, "\(mapped.failures.prefix(10))")
        #expect(r.states > 200)
    }

    /// Cuts the workload of each variant at every `every`-th crash point and checks each crash
    /// state `policies` make of it.
    static func run(_ variants: [Variant], _ policies: [InMemoryFileSystem.CrashPolicy], every: Int,
                    memory makeMemory: () -> InMemoryFileSystem) -> (points: Int, states: Int, pageStates: Int, failures: [String]) {
        var states = 0, points = 0, pageStates = 0
        var failures: [String] = []
        for v in variants {
            let n = Self.crashPoints(v, makeMemory())
            points += n
            for k in Swift.stride(from: 0, through: n, by: every) {
                for policy in policies {
                    let memory = makeMemory()
                    let fs = FaultInjectingFileSystem(wrapping: memory)
                    fs.injectFault(.init(afterOperations: k, operations: [.sync, .rename, .syncDirectory],
                                         error: .io(operation: "power cut", path: "", errno: 5), haltsEverything: true))
                    var progress = Progress()
                    Self.workload(fs, v, progress: &progress)
                    memory.simulateCrash(policy)
                    fs.injectFault(nil)   // power back: the new process's I/O works
                    states += 1
                    if case .keepRandomUnsyncedPages = policy { pageStates += 1 }
                    if let problem = Self.check(memory, v, progress) { failures.append("\(v), crash point \(k), \(policy): \(problem)") }
                }
            }
        }
        return (points, states, pageStates, failures)
    }
}
