extension Engine {
    /// Freezes the memtables now (if they hold anything) and waits until they are in segments.
    /// Normally flushes happen on their own when the memtable is full; this is for tools and
    /// tests.
    public func flush() throws {
        try checkWritable()
        // Go through the commit queue so no leader is writing to the memtables meanwhile.
        let w = PendingWrite(batch: WriteBatch(), durability: .none, isBarrier: true)
        commitLock.lock()
        defer { commitLock.unlock() }
        writers.append(w)
        while writers.first !== w { commitLock.wait() }
        defer {
            writers.removeFirst()
            commitLock.broadcast()
        }
        try makeRoomForWrite(force: true)
        while immutables != nil {
            try awaitFlush()
        }
    }

    /// One wait on the commit lock for the flush that frees the memtable: starts one
    /// when none runs, and throws a failed flush's error once (the next flush or write retries).
    /// REQUIRES: `commitLock` held.
    func awaitFlush() throws {
        if !flushRunning {
            if let e = backgroundError {
                backgroundError = nil
                throw e
            }
            scheduleFlush()
        }
        commitLock.wait()
    }

    /// REQUIRES: `commitLock` held.
    func scheduleFlush() {
        guard !flushRunning, immutables != nil else { return }
        flushRunning = true
        flushQueue.async { [self] in runFlush() }
    }

    /// Writes the frozen memtables to level-0 segments and records them in the manifest, in that
    /// order: a segment is live only once the manifest says so (SPEC.md §Recovery).
    private func runFlush() {
        commitLock.lock()
        guard let frozen = immutables else {
            flushRunning = false
            commitLock.broadcast()
            commitLock.unlock()
            return
        }
        let logNumber = immutableLogNumber
        commitLock.unlock()
        report(.flushBegan)

        var written: [String] = []
        var result: StorageError?
        do {
            var edit = VersionEdit()
            edit.logNumber = logNumber
            var maxSeq: UInt64 = 0
            for (id, mem) in frozen.sorted(by: { $0.key < $1.key }) where !mem.isEmpty {
                let number = manifestLock.withLock { versions.newFileNumber() }
                let path = joinPath(directory, StoreFile.segmentName(number))
                written.append(path)
                let meta = try writeSegment(from: mem, keySpaceId: id, fileNumber: number, path: path)
                edit.addedSegments.append(meta)
                maxSeq = max(maxSeq, mem.maxSequence)
            }
            edit.lastSequence = maxSeq
            if !edit.addedSegments.isEmpty { try fileSystem.syncDirectory(directory) }
            try logManifest(edit, segmentsSequence: maxSeq)
            stats.flushes.add(1, ordering: .relaxed)
        } catch {
            // Unless a manifest record naming them may be durable (then the next open decides).
            if !stoppedByManifest.load(ordering: .acquiring) {
                for p in written { try? fileSystem.removeFile(p) }
            }
            result = (error as? StorageError) ?? .io(operation: "flush", path: directory, errno: 0)
        }

        // Before `flushRunning` drops: `close()` waits for it, so no file operation of this
        // engine runs after close returns (another process may own the directory by then).
        // An archived store keeps the logs its archive still lacks (the archiver removes them).
        if result == nil { removeObsoleteWals(before: min(logNumber, archiver?.firstUnshippedWal ?? .max)) }
        report(.flushEnded(succeeded: result == nil))
        commitLock.lock()
        var obsolete: [LogWriter] = []
        if let result {
            backgroundError = result
        } else {
            // Their writes are in synced segments now: no durable write needs them synced.
            obsolete = retiredWals.filter { $0.number < logNumber }.map(\.log)
            retiredWals.removeAll { $0.number < logNumber }
            immutables = nil
            publishView()
            maybeScheduleCompaction()
        }
        if !obsolete.isEmpty {
            // Closing a removed file frees its pages, which takes a while: writers waiting for
            // room go on meanwhile. `flushRunning` stays set, so `close()` still waits for it.
            commitLock.broadcast()
            commitLock.unlock()
            for log in obsolete { try? log.close() }
            commitLock.lock()
        }
        flushRunning = false
        // Memtables frozen while the logs were closing. (After a failure, the next write or
        // flush() retries, not this thread in a loop.)
        if result == nil { scheduleFlush() }
        commitLock.broadcast()
        commitLock.unlock()
    }

    private func writeSegment(from mem: Memtable, keySpaceId: UInt32, fileNumber: UInt64, path: String) throws -> SegmentMeta {
        let file = try fileSystem.openWritable(path, truncate: true)
        let writer = SegmentWriter(file: file, path: path, keySpaceId: keySpaceId, layout: layout(forKeySpace: keySpaceId),
                                   cacheFill: fillsCacheOnFlush(keySpaceId) ? (cache, fileNumber) : nil, cipher: cipher)
        do {
            let it = MemtableIterator(mem)
            it.seekToFirst()
            while it.isValid {
                try writer.add(internalKey: it.key, value: it.value)
                it.next()
            }
            let props = try writer.finish()
            stats.segmentBytesWritten.add(writer.fileSize, ordering: .relaxed)
            return SegmentMeta(keySpaceId: keySpaceId, level: 0, fileNumber: fileNumber, fileSize: writer.fileSize,
                               smallest: props.smallestKey, largest: props.largestKey,
                               minSequence: props.minSequence, maxSequence: props.maxSequence, entryCount: props.entryCount,
                               uid: SegmentMeta.newUid())
        } catch {
            writer.abandon()
            throw error
        }
    }

    func removeObsoleteWals(before logNumber: UInt64) {
        guard let names = try? fileSystem.listDirectory(directory) else { return }
        for name in names {
            if case let .wal(n)? = StoreFile.parse(name), n < logNumber {
                try? fileSystem.removeFile(joinPath(directory, name))
            }
        }
    }
}
