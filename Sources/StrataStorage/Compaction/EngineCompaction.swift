import Dispatch
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What a manual compaction did, from ``Engine/compact(keySpace:)``.
public struct CompactionReport: Sendable, Equatable {
    /// Bytes of live segment files before and after, over the compacted key spaces.
    public var bytesBefore: UInt64
    public var bytesAfter: UInt64
    public var segmentsBefore: Int
    public var segmentsAfter: Int
    public var seconds: Double
}

/// How far a manual compaction has come, reported to ``Engine/compact(keySpace:progress:)``'s
/// callback. Bytes are uncompressed key and value bytes of the input segments.
public struct CompactionProgress: Sendable, Equatable {
    /// Input bytes merged so far.
    public var bytesDone: UInt64
    /// Input bytes of the whole compaction.
    public var bytesTotal: UInt64
    /// Seconds since the compaction started.
    public var seconds: Double
}

extension Engine {
    /// Compacts everything of one key space (or of all) into its deepest level: afterwards each
    /// key has one version (unless a snapshot needs an older one) and no tombstone is left.
    /// Flushes the memtable first. Returns sizes before and after. `progress`, when given, is
    /// called on the calling thread about every MiB of input merged, and once at the end.
    ///
    /// ```swift
    /// let report = try engine.compact { p in print(p.bytesDone, "/", p.bytesTotal) }
    /// print("\(report.bytesBefore) → \(report.bytesAfter) bytes")
    /// ```
    public func compact(keySpace: KeySpace? = nil,
                        progress: ((CompactionProgress) -> Void)? = nil) throws -> CompactionReport {
        try checkWritable()
        try flush()
        let start = monotonicSeconds()
        let ids = keySpace.map { [$0.id] } ?? keySpaces.map(\.id)
        func totals() -> (UInt64, Int) {
            let v = currentView().version
            var bytes: UInt64 = 0, count = 0
            for id in ids { for level in v.keySpaces[id]?.levels ?? [] { count += level.count; bytes += level.reduce(0) { $0 + $1.meta.fileSize } } }
            return (bytes, count)
        }
        let (beforeBytes, beforeCount) = totals()
        var meter = CompactionMeter(start: start, report: progress)
        if progress != nil {
            let v = currentView().version
            for id in ids {
                for s in (v.keySpaces[id]?.levels ?? []).joined() {
                    // Sizes read from a segment's properties: summed without overflow, whatever a
                    // crafted file says (they only scale the progress report).
                    let properties = try s.reader().properties
                    let (bytes, over) = properties.rawKeyBytes.addingReportingOverflow(properties.rawValueBytes)
                    let (sum, over2) = meter.total.addingReportingOverflow(bytes)
                    meter.total = over || over2 ? .max : sum
                }
            }
        }
        var failure: Error?
        compactionQueue.sync {
            for id in ids {
                let version = manifestLock.withLock { versions.current }
                guard let ks = version.keySpaces[id] else { continue }
                let all = ks.levels.flatMap { $0 }
                guard !all.isEmpty else { continue }
                let deepest = ks.levels.lastIndex { !$0.isEmpty } ?? 1
                let outputLevel = max(1, deepest)
                var job = CompactionJob(keySpaceId: id, level: 0, outputLevel: outputLevel,
                                        inputs: all.filter { $0.meta.level != outputLevel },
                                        nextInputs: all.filter { $0.meta.level == outputLevel })
                job.allowsTrivialMove = false
                do { try runCompactionJob(job, version: version, meter: &meter) } catch { failure = error; return }
            }
        }
        if let failure { throw failure }
        meter.finish()
        let (afterBytes, afterCount) = totals()
        return CompactionReport(bytesBefore: beforeBytes, bytesAfter: afterBytes, segmentsBefore: beforeCount,
                                segmentsAfter: afterCount, seconds: monotonicSeconds() - start)
    }

    /// Waits until no flush or compaction is running or due (for tools, tests, benchmarks).
    public func waitForBackgroundWork() throws {
        try checkOpen()
        commitLock.lock()
        defer { commitLock.unlock() }
        // What an open left due counts as due, though its delay has not passed.
        maybeScheduleCompaction()
        while flushRunning || compactionScheduled || immutables != nil {
            if let e = backgroundError ?? compactionError, !flushRunning, !compactionScheduled { throw e }
            commitLock.wait()
        }
    }

    /// Starts what the last session left due once ``EngineOptions/compactionDelayAfterOpen``
    /// has passed. Why wait: profiles of an open right after heavy writes showed the compaction
    /// that close had cancelled start over at once on the other core, and the open and its first
    /// reads lose half their CPU time to it (an encrypted store's twice as long: each block is
    /// opened and sealed again). Anything that needs the compaction sooner schedules it itself
    /// (a flush, a stalled write, `waitForBackgroundWork`); a timer that fires after
    /// that finds it scheduled or done. The timer holds the engine weakly: a store closed and
    /// dropped meanwhile is not kept alive by it.
    func scheduleCompactionAfterOpen() {
        let delay = options.compactionDelayAfterOpen
        guard delay > 0 else {
            commitLock.withLock { maybeScheduleCompaction() }
            return
        }
        DispatchQueue.global(qos: .utility).asyncAfter(deadline: .now() + delay) { [weak self] in
            guard let self else { return }
            commitLock.withLock { maybeScheduleCompaction() }
        }
    }

    /// REQUIRES: `commitLock` held.
    func maybeScheduleCompaction() {
        guard !compactionScheduled, !options.readOnly, !isClosed.load(ordering: .relaxed) else { return }
        compactionScheduled = true
        compactionQueue.async { [self] in
            runBackgroundCompactions()
            commitLock.withLock {
                compactionScheduled = false
                commitLock.broadcast()
            }
        }
    }

    /// Runs jobs while some level is over its target. Stops at the first failure: the error
    /// is kept for stalled writers and the work is retried at the next flush.
    private func runBackgroundCompactions() {
        removeLeftoverSegments()
        while !isClosed.load(ordering: .relaxed) {
            let version = manifestLock.withLock { versions.current }
            let cursors = commitLock.withLock { compactionCursors }
            guard let job = CompactionPicker.pick(version, cursors: cursors) else { break }
            do {
                try runCompactionJob(job, version: version)
                commitLock.withLock { compactionError = nil }
            } catch {
                commitLock.withLock {
                    compactionError = (error as? StorageError) ?? .io(operation: "compaction", path: directory, errno: 0)
                    commitLock.broadcast()
                }
                break
            }
        }
    }

    /// Removes the segment files the open found that no manifest record names: the outputs of a
    /// compaction the last close stopped, a crash's orphans (``Recovery/removeObsoleteFiles(directory:fs:versions:keepWal:keepsArchivedWals:)``).
    /// Runs with the first background work after the open (`compactionScheduled` is set, so a
    /// close waits for it), or in ``close()`` when none came.
    func removeLeftoverSegments() {
        let paths = commitLock.withLock {
            defer { leftoverSegments = [] }
            return leftoverSegments
        }
        for path in paths { try? fileSystem.removeFile(path) }
    }

    /// Merges a job's inputs, records the result in the manifest and installs it. Runs on the
    /// compaction queue only, so jobs never overlap.
    func runCompactionJob(_ job: CompactionJob, version: Version) throws {
        var meter = CompactionMeter(start: 0, report: nil)
        try runCompactionJob(job, version: version, meter: &meter)
    }

    func runCompactionJob(_ job: CompactionJob, version: Version, meter: inout CompactionMeter) throws {
        report(.compactionBegan(level: job.level, outputLevel: job.outputLevel))
        do {
            try mergeCompactionJob(job, version: version, meter: &meter)
            report(.compactionEnded(succeeded: true))
        } catch {
            report(.compactionEnded(succeeded: false))
            throw error
        }
    }

    private func mergeCompactionJob(_ job: CompactionJob, version: Version, meter: inout CompactionMeter) throws {
        let start = monotonicSeconds()
        if job.isTrivialMove {
            // Nothing to merge: the segments change level in the manifest, bytes stay put.
            var edit = VersionEdit()
            for s in job.inputs {
                edit.deletedSegments.append(.init(keySpaceId: job.keySpaceId, level: s.meta.level, fileNumber: s.meta.fileNumber))
                var moved = s.meta
                moved.level = job.outputLevel
                edit.addedSegments.append(moved)
            }
            try logManifest(edit)
            stats.compactions.add(1, ordering: .relaxed)
            commitLock.withLock {
                publishView()
                commitLock.broadcast()
            }
            return
        }
        var compactor = Compactor(job: job, version: version, oldestReadable: oldestReadableSequence(), layout: layout(forKeySpace: job.keySpaceId),
                                  targetSegmentBytes: UInt64(max(64 << 10, options.targetSegmentBytes)),
                                  fileSystem: fileSystem, directory: directory, stats: stats, cipher: cipher,
                                  isCancelled: { [self] in isClosed.load(ordering: .relaxed) }) { [self] in
            manifestLock.withLock { versions.newFileNumber() }
        }
        let outputs: [SegmentMeta]
        do {
            outputs = try compactor.run(meter: &meter)
            if !outputs.isEmpty { try fileSystem.syncDirectory(directory) }
            var edit = VersionEdit()
            edit.deletedSegments = job.allInputs.map { .init(keySpaceId: job.keySpaceId, level: $0.meta.level, fileNumber: $0.meta.fileNumber) }
            edit.addedSegments = outputs
            try logManifest(edit)
        } catch {
            // Outputs never became live; remove them now, unless a manifest record naming them
            // may be durable, or the engine is closing: the close that stopped this job need not
            // wait for the unlinks (tens of files of fresh pages), and the next session removes
            // segments no record names (``removeLeftoverSegments()``).
            if !stoppedByManifest.load(ordering: .acquiring) && !isClosed.load(ordering: .acquiring) {
                for path in compactor.written { try? fileSystem.removeFile(path) }
            }
            throw error
        }
        for s in job.allInputs { s.markObsolete() }
        stats.compactions.add(1, ordering: .relaxed)
        stats.compactionBytesRead.add(job.inputBytes, ordering: .relaxed)
        stats.compactionMicros.add(UInt64((monotonicSeconds() - start) * 1e6), ordering: .relaxed)
        commitLock.withLock {
            if job.level > 0, let last = job.inputs.last {
                compactionCursors[job.keySpaceId, default: [:]][job.level] = last.meta.largest
            }
            publishView()
            commitLock.broadcast()
        }
    }

    /// Largest number of level-0 segments of any key space.
    func level0Count(_ view: ReadView) -> Int {
        view.version.keySpaces.values.reduce(0) { max($0, $1.levels[0].count) }
    }
}

/// Counts a manual compaction's merged input and reports it every MiB.
struct CompactionMeter {
    let start: Double
    let report: ((CompactionProgress) -> Void)?
    var total: UInt64 = 0
    var done: UInt64 = 0
    private var reported: UInt64 = 0
    static let step: UInt64 = 1 << 20

    init(start: Double, report: ((CompactionProgress) -> Void)?) {
        self.start = start
        self.report = report
    }

    @inline(__always) mutating func add(_ bytes: Int) {
        guard report != nil else { return }
        done += UInt64(bytes)
        if done - reported >= Self.step {
            reported = done
            call(CompactionProgress(bytesDone: done, bytesTotal: max(total, done), seconds: monotonicSeconds() - start))
        }
    }

    mutating func finish() {
        call(CompactionProgress(bytesDone: max(total, done), bytesTotal: max(total, done), seconds: monotonicSeconds() - start))
    }

    /// Runs the app's callback marked as one (``CallbackScope``): it runs inside the compaction
    /// queue, where a call back into the engine (another compaction, a flush that waits for
    /// this one) would wait for itself; such a call is refused instead.
    private func call(_ progress: CompactionProgress) {
        guard let report else { return }
        CallbackScope.run("the compaction progress callback") { report(progress) }
    }
}

func monotonicSeconds() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

extension Engine {
    /// Space amplification: bytes of live segment files divided by the bytes (keys + values,
    /// uncompressed) of the latest version of every live key. Reads every key, so it costs a
    /// full scan; 1.0 means no obsolete data and no compression gain, below 1 compression
    /// outweighs what is obsolete. Data still in the memtable is not on disk yet and counts on
    /// neither side. Returns 0 for an empty store.
    public func spaceAmplification(keySpace: KeySpace? = nil) throws -> Double {
        try checkOpen()
        let spaces = keySpace.map { [$0] } ?? keySpaces
        let view = currentView()
        var diskBytes: UInt64 = 0
        var logicalBytes: UInt64 = 0
        for ks in spaces {
            guard let levels = view.version.keySpaces[ks.id]?.levels else { continue }
            diskBytes += levels.joined().reduce(0) { $0 + $1.meta.fileSize }
            // The latest data held in segments: a merge of the segments only.
            var children: [any InternalIterator] = try levels[0].map { try $0.reader().makeIterator() }
            for level in levels.dropFirst() where !level.isEmpty { children.append(LevelIterator(level)) }
            let it = EngineIterator(merged: MergingIterator(children), sequence: StorageLimits.maxSequence,
                                    lowerBound: nil, upperBound: nil, pinned: view)
            try it.seekToFirst()
            while it.isValid {
                logicalBytes += UInt64(it.key.count + it.value.count)
                try it.next()
            }
        }
        return logicalBytes == 0 ? 0 : Double(diskBytes) / Double(logicalBytes)
    }
}
