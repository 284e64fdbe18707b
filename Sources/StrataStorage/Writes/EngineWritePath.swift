#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One writer waiting in the commit queue.
final class PendingWrite {
    let batch: WriteBatch
    let durability: Durability
    /// A place in the queue taken by `flush()` rather than a write: a leader never carries it
    /// in its group (it would finish it and drop it from the queue while `flush()` still waits
    /// to reach the front: a hang the soak test found).
    let isBarrier: Bool
    /// A replica's write (``Engine/applyReplicated(_:firstSequence:)``): the primary's batch with
    /// the primary's first sequence number, committed alone.
    let replicatedSequence: UInt64?
    var done = false
    var error: Error?

    init(batch: WriteBatch, durability: Durability, isBarrier: Bool = false, replicatedSequence: UInt64? = nil) {
        self.batch = batch
        self.durability = durability
        self.isBarrier = isBarrier
        self.replicatedSequence = replicatedSequence
    }
}

extension Engine {
    /// Largest group a commit leader assembles from waiting writers.
    static let maxGroupBytes = 1 << 20
    /// Longest a group-commit leader waits for the writers of the previous group to queue again
    /// (a fraction of one fdatasync here, which takes 150–200 µs).
    static let groupGatherMicros: UInt64 = 100

    /// Applies `batch` atomically: all of its puts and deletes, across key spaces, become visible
    /// together, and after a crash either all or none of them are there.
    ///
    /// ```swift
    /// var batch = WriteBatch()
    /// batch.put(Array("k".utf8), Array("v".utf8), in: engine.defaultKeySpace)
    /// try engine.write(batch, durability: .sync)
    /// ```
    /// - Parameter durability: overrides ``EngineOptions/durability`` for this write.
    /// - Throws: a limit error for oversized keys, values or batches; ``StorageError/diskFull(path:)``
    ///   and other I/O errors, in which case the batch was not applied and the engine stays usable,
    ///   except after a failed sync of the log: that write throws the sync's error and every later
    ///   one ``StorageError/writesStopped(reason:)`` until the store is reopened.
    public func write(_ batch: WriteBatch, durability: Durability? = nil) throws {
        try checkWritable()
        if isReplica { throw StorageError.readOnly(path: directory) }
        if let e = batch.limitError { throw e }
        guard !batch.isEmpty else { return }
        guard batch.byteCount <= StorageLimits.maxBatchBytes else {
            throw StorageError.batchTooLarge(size: batch.byteCount, limit: StorageLimits.maxBatchBytes)
        }
        try commit(PendingWrite(batch: batch, durability: durability ?? options.durability))
    }

    /// Commits a batch of the primary a replica follows (SPEC.md §3.4) with the primary's
    /// sequence numbers, which must come after every one this store holds: sequence numbers a
    /// primary's failed group commit skipped stay skipped here too.
    func applyReplicated(_ batch: WriteBatch, firstSequence: UInt64) throws {
        try checkWritable()
        guard !batch.isEmpty else { return }
        try commit(PendingWrite(batch: batch, durability: options.durability, replicatedSequence: firstSequence))
    }

    private func commit(_ w: PendingWrite) throws {
        let batch = w.batch
        commitLock.lock()
        if isClosed.load(ordering: .relaxed) {
            commitLock.unlock()
            throw StorageError.closed
        }
        if let stopped = writesStopped {
            commitLock.unlock()
            throw stopped
        }
        if stoppedByManifest.load(ordering: .acquiring) {
            let stopped = manifestLock.withLock { versions.unknownState } ?? .writesStopped(reason: "a manifest write failed")
            commitLock.unlock()
            throw stopped
        }
        guard batch.maxKeySpaceId < UInt32(keySpacesByName.count) else {
            commitLock.unlock()
            throw StorageError.unknownKeySpace("#\(batch.maxKeySpaceId)")
        }
        writers.append(w)
        while !w.done && writers.first !== w { commitLock.wait() }
        if w.done {
            commitLock.unlock()
            if let e = w.error { throw e }
            return
        }
        // This writer leads: it commits itself and, when allowed, the writers queued behind it.
        do {
            try makeRoomForWrite()
        } catch {
            finishGroup([w], error: error)
            commitLock.unlock()
            throw error
        }
        if w.durability == .groupCommit, writers.count < recentSyncWriters {
            gatherGroup(expecting: recentSyncWriters)
        }
        var group = [w]
        var groupBytes = w.batch.byteCount
        if w.durability != .sync && w.replicatedSequence == nil {
            for other in writers.dropFirst() {
                if other.isBarrier || other.replicatedSequence != nil { break }
                // A non-durable leader must not carry a durable follower (it would not sync).
                if other.durability == .sync || (other.durability == .groupCommit && w.durability == .none) { break }
                if groupBytes + other.batch.byteCount > Self.maxGroupBytes { break }
                group.append(other)
                groupBytes += other.batch.byteCount
            }
        }
        let needsSync = w.durability != .none
        var totalOps = 0
        for g in group { totalOps += g.batch.count }
        // Sequence numbers have 56 bits (SPEC.md §4), and the largest is the reads' "everything"
        // (recovery refuses an entry that carries it): past it, an entry's number would wrap
        // into the trailer and read as older than everything. Unreachable by writing (2^56
        // operations), reachable by a manifest that claims a last sequence near it.
        guard UInt64(totalOps) < StorageLimits.maxSequence - lastSequence else {
            let error = StorageError.writesStopped(reason: "the store's sequence numbers are used up (last \(lastSequence))")
            finishGroup(group, error: error)
            commitLock.unlock()
            throw error
        }
        if let first = w.replicatedSequence {
            guard first > lastSequence, first <= StorageLimits.maxSequence - UInt64(totalOps) else {
                let error = StorageError.corruption(file: directory, offset: 0,
                                                    reason: "replicated batch at sequence \(first) does not follow this store's \(lastSequence)")
                finishGroup(group, error: error)
                commitLock.unlock()
                throw error
            }
            lastSequence = first - 1
        }
        let firstSequence = lastSequence + 1
        lastSequence += UInt64(totalOps)
        let log = wal!   // present: read-only engines stop at checkWritable()
        let tables = memtablesById
        let retired = needsSync ? retiredWals : []
        if needsSync { retiredWals = [] }
        let syncEntry = needsSync && walEntryNeedsSync
        if syncEntry { walEntryNeedsSync = false }
        commitLock.unlock()

        var failure: Error?
        // Whether the failure leaves the log's state on disk unknown: a failed sync, or an
        // append that could not be taken back. Writing on would build on that unknown.
        var stopsWrites = false
        let sizeBefore = log.size
        do {
            if syncEntry {
                // The WAL's directory entry first: a synced WAL whose name a power cut takes
                // loses the durable write all the same.
                stopsWrites = true
                try fileSystem.syncDirectory(directory)
                stopsWrites = false
            }
            for r in retired {
                stopsWrites = true
                try r.log.sync()
                stopsWrites = false
                stats.walSyncs.add(1, ordering: .relaxed)
            }
            // The next record says that every earlier log is durable now (SPEC.md §5.1).
            if !retired.isEmpty { log.noteEarlierLogsDurable() }
            var seq = firstSequence
            var appended = 0
            if group.count == 1, group[0].batch.rep.count >= LogWriter.directAppendBytes {
                // A large batch goes out from its own buffer, never copied into the scratch one.
                try log.appendBatch(sequence: seq, batch: group[0].batch.rep)
                appended = Int(log.size - sizeBefore)
            } else {
                // Only the leader touches the scratch buffer, so it is reused without a lock.
                walScratch.removeAll()
                for g in group {
                    log.frameBatch(sequence: seq, batch: g.batch.rep, into: &walScratch)
                    seq += UInt64(g.batch.count)
                }
                let framed = walScratch
                try log.appendFramed(framed.bytes)
                appended = framed.count
            }
            if needsSync {
                stopsWrites = true
                try log.sync()
                stopsWrites = false
                stats.walSyncs.add(1, ordering: .relaxed)
            }
            stats.walBytesWritten.add(UInt64(appended), ordering: .relaxed)
            seq = firstSequence
            for g in group {
                g.batch.rep.withUnsafeBytes { rep in
                    _ = BatchDecoder.forEachUnchecked(rep) { op in
                        tables[Int(op.keySpaceId)]!.insert(key: op.key, value: op.value, sequence: seq, kind: op.kind)
                        seq += 1
                    }
                }
                stats.userBytesWritten.add(UInt64(g.batch.userBytes), ordering: .relaxed)
            }
            stats.writeBatches.add(UInt64(group.count), ordering: .relaxed)
        } catch {
            // Take the record back so it cannot resurface at recovery; if that is not certain,
            // start a new WAL before the next write.
            do { try log.file.truncate(to: sizeBefore) } catch { stopsWrites = true }
            failure = error
        }

        commitLock.lock()
        if needsSync { recentSyncWriters = writers.count }
        if failure == nil {
            visibleSequence.store(lastSequence, ordering: .releasing)
            archiver?.noteCommit(wal: walNumber, end: log.size, sequence: lastSequence)
            for r in retired { try? r.log.close() }
        } else {
            // Sequence numbers of a failed group are skipped, never reused.
            walNeedsRotation = true
            retiredWals.insert(contentsOf: retired, at: 0)
            if syncEntry { walEntryNeedsSync = true }
            if stopsWrites, writesStopped == nil {
                writesStopped = .writesStopped(reason: "the write-ahead log could not be made durable: \(failure!)")
            }
        }
        finishGroup(group, error: failure)
        commitLock.unlock()
        if let failure { throw failure }
    }

    /// Lets the writers the previous durable group just released queue again before this leader
    /// takes its group: otherwise they miss it by microseconds, and with N writers every sync
    /// carries about N/2 of them instead of N. Waits at most ``groupGatherMicros``, yielding
    /// the processor with the lock released.
    /// REQUIRES: `commitLock` held by the commit leader.
    private func gatherGroup(expecting count: Int) {
        let deadline = monotonicSeconds() + Double(Self.groupGatherMicros) / 1e6
        while writers.count < count {
            commitLock.unlock()
            sched_yield()
            commitLock.lock()
            if monotonicSeconds() >= deadline { break }
        }
    }

    /// REQUIRES: `commitLock` held; the group is at the front of the queue.
    private func finishGroup(_ group: [PendingWrite], error: Error?) {
        for g in group {
            g.done = true
            g.error = error
        }
        writers.removeFirst(group.count)
        commitLock.broadcast()
    }

    /// Makes sure the memtable has room, freezing it and starting a flush when full. Waits while
    /// the previous frozen memtable is still being flushed (a write stall).
    /// REQUIRES: `commitLock` held by the commit leader.
    func makeRoomForWrite(force: Bool = false) throws {
        var forced = force
        var delayed = false
        while true {
            // A writer stalled behind compaction must not hold up close().
            if isClosed.load(ordering: .relaxed) { throw StorageError.closed }
            let level0 = level0Segments
            if level0 >= CompactionPolicy.level0StopWrites {
                if let e = compactionError, !compactionScheduled {
                    compactionError = nil
                    maybeScheduleCompaction()
                    throw e
                }
                stats.writeStalls.add(1, ordering: .relaxed)
                maybeScheduleCompaction()
                commitLock.wait()
                continue
            }
            if level0 >= CompactionPolicy.level0SlowdownWrites && !delayed && !forced {
                // Give compaction a little of the writer's time rather than stop it later.
                delayed = true
                stats.writeSlowdowns.add(1, ordering: .relaxed)
                commitLock.unlock()
                usleep(CompactionPolicy.slowdownDelayMicros)
                commitLock.lock()
                continue
            }
            if walNeedsRotation {
                try startNewWal()
                walNeedsRotation = false
            }
            var used = 0
            for m in memtableList { used += m.approximateBytes }
            if used < options.memtableBytes && !(forced && memtableList.contains { !$0.isEmpty }) { return }
            if immutables != nil {
                if let e = backgroundError, !flushRunning {
                    backgroundError = nil
                    scheduleFlush()
                    throw e
                }
                // A flush that failed, and whose error `flush()` already reported, is retried
                // here: nothing else would run it, and this writer would wait forever (found
                // by the manifest-fault test: the second `flush()` hung).
                if !flushRunning { scheduleFlush() }
                stats.writeStalls.add(1, ordering: .relaxed)
                commitLock.wait()
                continue
            }
            try startNewWal()
            immutables = memtables
            immutableLogNumber = walNumber
            var fresh: [UInt32: Memtable] = [:]
            for id in memtables.keys { fresh[id] = Memtable(keySpaceId: id, expectedBytes: options.memtableBytes) }
            memtables = fresh
            publishView()
            scheduleFlush()
            forced = false
        }
    }

    /// Switches to a new, empty WAL file (its directory entry synced, so later syncs of it are
    /// durable). The old WAL joins `retiredWals`: its unsynced writes must reach the disk before
    /// any durable write to the new WAL, or a power cut could keep the durable write and take
    /// non-durable writes logged before it, a hole in the history (found by the power-cut test,
    /// RELIABILITY.md §2). REQUIRES: `commitLock` held.
    private func startNewWal() throws {
        let number = manifestLock.withLock { versions.newFileNumber() }
        let path = joinPath(directory, StoreFile.walName(number))
        let file = try fileSystem.openLog(path)
        let next: LogWriter
        do { next = try LogWriter.create(file: file, path: path, cipher: cipher) } catch {
            try? fileSystem.removeFile(path)
            throw error
        }
        // What the old log would have said in its next record holds for the new one's first:
        // no data record was logged since every earlier one became durable.
        var carryMark = wal?.markPending == true
        do {
            try fileSystem.syncDirectory(directory)
            // That sync made the new WAL's entry durable (the old one's too).
            walEntryNeedsSync = false
            // The old log says it ends here, so that recovery knows nothing of it is missing
            // before it replays the new one (SPEC.md §5.2).
            try wal?.appendEndOfLog()
            if let wal { archiver?.noteSealed(wal: walNumber, end: wal.size) }
        } catch {
            try? next.close()
            try? fileSystem.removeFile(path)
            throw error
        }
        if carryMark {
            // The mark vouches for whole logs, end-of-log record included: that one is not
            // synced yet. One sync per rotation, and only after a durable write; if it fails,
            // the new log makes no claim (the old one is synced before its next durable write,
            // where a failure stops writes).
            do { try wal?.sync() } catch { carryMark = false }
        }
        if carryMark { next.noteEarlierLogsDurable() }
        if let wal { retiredWals.append((walNumber, wal)) }
        wal = next
        walNumber = number
    }
}

extension BatchDecoder {
    /// Walks a batch the engine built itself (already validated at construction).
    static func forEachUnchecked(_ rep: UnsafeRawBufferPointer, _ body: (BatchOperation) -> Void) -> Bool {
        (try? forEach(rep, body)) ?? false
    }
}
