extension Engine {
    /// Opens a read replica of the store whose continuous archive `target` holds (SPEC.md §3.4):
    /// the first time, restores the archive's latest state into `directoryPath` (missing or
    /// empty); then, on a thread of its own, applies the commits the primary ships, every
    /// `pollInterval` seconds, with the primary's sequence numbers, as whole transactions in
    /// order. It follows the primary into its next generation when that one goes on from what
    /// the replica applied, and stops following, with the reason in ``replicaStatus()``, at
    /// damage or a gap in the archive. Writes are refused (``StorageError/readOnly(path:)``);
    /// reads, snapshots and iterators work as on any store. Reopened, a replica goes on where it
    /// stopped.
    ///
    /// ```swift
    /// let replica = try Engine.openReplica(following: DirectoryArchiveTarget(path: "/archive/shop"),
    ///                                      directoryPath: "/replicas/shop")
    /// print(replica.replicaStatus()!.appliedSequence)
    /// ```
    public static func openReplica(following target: any ArchiveTarget, directoryPath: String,
                                   options: EngineOptions = EngineOptions(), pollInterval: Double = 1,
                                   storeId: UInt64? = nil) throws -> Engine {
        guard options.archive == nil, !options.readOnly else {
            throw StorageError.invalidOption(name: "options", reason: "a replica is opened writable (for its follower) and without an archive of its own")
        }
        guard pollInterval.isFinite, pollInterval > 0, pollInterval <= 3600 else {
            throw StorageError.invalidOption(name: "pollInterval", reason: "\(pollInterval) is outside (0, 3600] seconds")
        }
        let fs = options.fileSystem
        let sealed = SealingArchiveTarget.wrapping(target, cipher: try options.encryptionKey.map { try StoreCipher(key: $0) })
        var position: ReplicaPosition
        if !fs.fileExists(joinPath(directoryPath, FormatConstants.currentFileName)) {
            var restore = ArchiveRestoreOptions()
            restore.storeId = storeId
            restore.encryptionKey = options.encryptionKey
            let report = try restoreArchive(from: target, toDirectoryPath: directoryPath, options: restore, fileSystem: fs)
            let generation = try target.list().lazy.compactMap { name -> ArchiveGeneration? in
                switch ArchiveObject(name: name) {
                case let .state(g, _, _)?, let .log(g, _, _)?: g.id == report.generation ? g : nil
                default: nil
                }
            }.first
            guard let generation else { throw StorageError.notAStore(path: "archive (its generation \(report.generation) is gone)") }
            // WAL 0: read the generation's logs from the first, skipping what the state holds.
            position = ReplicaPosition(generation: generation, wal: 0, offset: 0, walEnded: true, applied: report.sequence)
            try position.write(in: directoryPath, fileSystem: fs)
        } else {
            guard let saved = ReplicaPosition.read(in: directoryPath, fileSystem: fs) else {
                throw StorageError.notAStore(path: "\(directoryPath) (a store, but not a replica: no valid \(ReplicaPosition.fileName) file)")
            }
            if let storeId, storeId != saved.generation.store {
                throw StorageError.archiveOfAnotherStore(storeIds: [saved.generation.store], reason: "this replica follows another store")
            }
            position = saved
        }
        let engine = try Engine.open(directory: directoryPath, options: options)
        engine.isReplica = true
        if engine.latestSequence != position.applied {
            // The engine lost or kept other commits than the position says (a crash between
            // the two): read the generation's logs again from the first.
            position = ReplicaPosition(generation: position.generation, wal: 0, offset: 0, walEnded: true, applied: engine.latestSequence)
        }
        let follower = ArchiveFollower(engine: engine, target: sealed, position: position, pollInterval: pollInterval)
        engine.follower = follower
        follower.start()
        return engine
    }

    /// Calls `body` after each batch the replica applies, with its operations (the object
    /// layer turns them into change notifications), on the follower's thread; whether each key
    /// held a value before is looked up in `keySpaces` only.
    package func setReplicaObserver(priorValuesIn keySpaces: Set<UInt32>, _ body: @escaping @Sendable ([ReplicatedOperation]) -> Void) {
        follower?.setObserver(priorValuesIn: keySpaces, body)
    }

    /// How far a replica has come (nil for a store that is not one).
    ///
    /// ```swift
    /// if let s = replica.replicaStatus(), let lag = s.lastApplyLag { print("\(lag) s behind") }
    /// ```
    public func replicaStatus() -> ReplicaStatus? { follower?.currentStatus() }

    /// Makes a replica look at the archive now and waits until it has applied what it found:
    /// for a clean point, and for tests. Throws when it does not within `timeout` seconds, or
    /// when it has stopped following.
    public func replicaCatchUp(timeout: Double = 60) throws {
        try checkOpen()
        guard let follower else { throw StorageError.invalidOption(name: "replica", reason: "the store was not opened as a replica") }
        try follower.catchUp(timeout: timeout)
    }
}
