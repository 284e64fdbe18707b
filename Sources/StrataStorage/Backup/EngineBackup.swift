extension Engine {
    /// Writes a backup of the store into `path`: a complete store of one committed state, which
    /// opens like any other (copy it back, or open it where it is). Other threads keep reading
    /// and writing meanwhile; the backup holds every write that returned before it was called
    /// and none that started after it returned.
    ///
    /// Segments never change once written, so they are hard-linked when `path` is on the same
    /// file system (unless ``BackupOptions/linksFiles`` is false) and copied otherwise. A writable
    /// store first flushes its memtables (without holding up writers), so the backup holds no
    /// log; a read-only one copies its logs whole.
    ///
    /// `path` must be empty, missing, or hold an earlier backup that nobody opened and changed
    /// since: the backup then copies only the segments the earlier one lacks, and replaces it
    /// only once it is complete. Anything else is refused with
    /// ``StorageError/destinationInUse(path:reason:)``. A crash or kill during a backup never
    /// leaves something that opens as half a store (a first backup without its `CURRENT` file is
    /// refused by ``Engine/open(directory:options:)`` as ``StorageError/notAStore(path:)``), and
    /// never changes the store itself.
    ///
    /// ```swift
    /// let report = try engine.backup(toDirectoryPath: "/backups/shop")
    /// print("sequence \(report.sequence): \(report.bytesCopied) bytes copied")
    /// ```
    public func backup(toDirectoryPath path: String, options backupOptions: BackupOptions = BackupOptions()) throws -> BackupReport {
        try checkOpen()
        let (source, version) = try captureBackupSource()
        // The version keeps the segments it lists (and so their files) alive until the copy is
        // done: a compaction may replace them meanwhile, and deletes a replaced file only when
        // the last version listing it goes.
        return try withExtendedLifetime(version) {
            try BackupWriter(source: source, destination: path, fileSystem: fileSystem, options: backupOptions).run()
        }
    }

    /// The state a backup copies. A writable engine freezes its memtables at a commit boundary
    /// and waits for them to be in segments, then takes the manifest's state: the segments alone
    /// are then one committed state. A read-only engine cannot flush: its WALs come along.
    private func captureBackupSource() throws -> (BackupSource, Version) {
        if options.readOnly {
            return try manifestLock.withLock {
                let wals = try fileSystem.listDirectory(directory).compactMap { name -> UInt64? in
                    if case let .wal(n)? = StoreFile.parse(name), n >= versions.logNumber { return n }
                    return nil
                }.sorted()
                return (BackupSource(directory: directory, formatVersion: versions.formatVersion, keySpaces: versions.keySpaces,
                                     segments: versions.current.allSegments.map(\.meta), wals: wals,
                                     nextFileNumber: versions.nextFileNumber,
                                     lastSequence: max(versions.lastSequence, visibleSequence.load(ordering: .acquiring)),
                                     storeId: versions.storeId, cipher: cipher),
                        versions.current)
            }
        }
        try flushWithoutHoldingWriters()
        return manifestLock.withLock {
            (BackupSource(directory: directory, formatVersion: versions.formatVersion, keySpaces: versions.keySpaces,
                          segments: versions.current.allSegments.map(\.meta), wals: [],
                          nextFileNumber: versions.nextFileNumber, lastSequence: versions.lastSequence, storeId: versions.storeId,
                          cipher: cipher),
             versions.current)
        }
    }

    /// Freezes the memtables at a commit boundary (through the commit queue, like ``flush()``),
    /// then lets writers go on into fresh memtables while it waits until the frozen ones are in
    /// segments: the manifest's log number then covers every write that returned before the
    /// call.
    private func flushWithoutHoldingWriters() throws {
        try checkWritable()
        let w = PendingWrite(batch: WriteBatch(), durability: .none, isBarrier: true)
        commitLock.lock()
        defer { commitLock.unlock() }
        writers.append(w)
        while writers.first !== w { commitLock.wait() }
        let target: UInt64?
        do {
            try makeRoomForWrite(force: true)
            target = immutables != nil ? immutableLogNumber : nil
        } catch {
            writers.removeFirst()
            commitLock.broadcast()
            throw error
        }
        writers.removeFirst()
        commitLock.broadcast()
        guard let target else { return }
        while manifestLock.withLock({ versions.logNumber }) < target {
            if isClosed.load(ordering: .relaxed) { throw StorageError.closed }
            try awaitFlush()
        }
    }
}

extension Engine {
    /// Restores the backup at `backupPath` into `path` (missing or empty): checks every checksum
    /// of the backup first (a damaged one throws ``StorageError/corruption(file:offset:reason:)``
    /// naming the file, and nothing is written), then writes a store of the backup's state and
    /// leaves the backup as it was. The restored store is a plain store (no `BACKUP` file): a
    /// later backup into `path` is refused. An interrupted restore can be run again into the
    /// same directory. Files are copied unless `options` asks for links
    /// (``BackupOptions/restoring``): a linked file shares its disk blocks, mode and owner with
    /// the backup.
    ///
    /// A backup of an encrypted store needs its key (`encryptionKey`), and the restored store is
    /// encrypted with it.
    ///
    /// ```swift
    /// try Engine.restoreBackup(at: "/backups/shop", toDirectoryPath: "/data/shop")
    /// ```
    @discardableResult
    public static func restoreBackup(at backupPath: String, toDirectoryPath path: String, options: BackupOptions = .restoring,
                                     fileSystem: any FileSystem = PosixFileSystem(), encryptionKey: [UInt8]? = nil) throws -> BackupReport {
        try checkRestoreDestination(path, fileSystem: fileSystem)
        let verification = try verify(directory: backupPath, fileSystem: fileSystem, encryptionKey: encryptionKey)
        if let p = verification.problems.first {
            throw StorageError.corruption(file: p.file, offset: p.offset, reason: p.reason)
        }
        var o = EngineOptions()
        o.fileSystem = fileSystem
        o.readOnly = true
        o.createIfMissing = false
        o.encryptionKey = encryptionKey
        let backup = try Engine.open(directory: backupPath, options: o)
        defer { backup.close() }
        let report = try backup.backup(toDirectoryPath: path, options: options)
        try fileSystem.removeFile(joinPath(path, BackupMarker.fileName))
        try fileSystem.syncDirectory(path)
        return report
    }
}
