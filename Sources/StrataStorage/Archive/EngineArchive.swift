extension Engine {
    /// How far the archive has come, or nil when the store has none (``EngineOptions/archive``).
    ///
    /// ```swift
    /// if let s = engine.archiveStatus(), s.latestSequence - s.archivedSequence > 10_000 { print("archive lags") }
    /// ```
    public func archiveStatus() -> ArchiveStatus? { archiver?.currentStatus() }

    /// Ships everything committed so far (and the latest manifest state) to the archive now, and
    /// waits until it is there. Throws the target's error when a shipment fails, or
    /// ``StorageError/io(operation:path:errno:)`` after `timeout` seconds. Commits need not
    /// call it: the archive follows on its own; this is for a clean point (before a
    /// migration, say) and for tests.
    ///
    /// ```swift
    /// try engine.archiveNow()
    /// ```
    public func archiveNow(timeout: Double = 60) throws {
        try checkOpen()
        guard let archiver else {
            throw StorageError.invalidOption(name: "archive", reason: "the store was opened without an archive")
        }
        try archiver.waitUntilArchived(sequence: latestSequence, timeout: timeout)
    }

    /// The manifest's current state as an archive state (serial and time are set when shipped).
    /// REQUIRES: `manifestLock` held.
    func archivedState() -> ArchivedState {
        let segments = versions.current.allSegments.map(\.meta)
        return ArchivedState(generation: ArchiveGeneration(store: versions.storeId, ordinal: 0, id: archiver?.generation ?? 0), serial: 0, micros: 0, formatVersion: versions.formatVersion,
                             logNumber: versions.logNumber, nextFileNumber: versions.nextFileNumber,
                             sequence: segmentsSequence, keySpaces: versions.keySpaces, segments: segments,
                             committed: archiver?.lastCommit() ?? .init(sequence: latestSequence, micros: Archiver.nowMicros()))
    }

    /// Starts shipping to the archive: the state recovery left, the logs from the log number on,
    /// and the WALs below it that earlier opens kept for the archive (their owners, SPEC.md §3.3).
    /// Records in the manifest that this open's generation owns the WALs from the log number on.
    func startArchiver(_ archive: ArchiveOptions) throws -> Archiver {
        let (version, logNumber, storeId, owners) = manifestLock.withLock {
            (versions.current, versions.logNumber, versions.storeId, versions.archiveLogOwners)
        }
        let (active, activeSize, retired) = commitLock.withLock {
            (walNumber, wal?.size ?? 0, Dictionary(retiredWals.map { ($0.number, $0.log.size) }, uniquingKeysWith: { a, _ in a }))
        }
        var wals: [(number: UInt64, size: UInt64)] = []
        var inherited: [(number: UInt64, size: UInt64, generation: UInt64)] = []
        for name in try fileSystem.listDirectory(directory) {
            guard case let .wal(n)? = StoreFile.parse(name), n != active else { continue }
            // A replayed log still open (its last writes not synced) ends at its writer's size;
            // a closed one at the file's.
            let size = try retired[n] ?? fileSystem.openReadable(joinPath(directory, name)).closing { $0.size }
            if n >= logNumber {
                wals.append((n, size))
            } else if let owner = owners.last(where: { $0.firstWal <= n }) {
                inherited.append((n, size, owner.generation))
            }
        }
        wals.sort { $0.number < $1.number }
        wals.append((active, activeSize))
        let generation = Archiver.newGeneration()
        let stillOwning = owners.filter { o in inherited.contains { $0.generation == o.generation } }
        try manifestLock.withLock {
            var edit = VersionEdit()
            edit.archiveLogOwners = stillOwning + [ArchiveLogOwner(firstWal: logNumber, generation: generation)]
            try versions.logAndApply(edit)
        }
        var state = manifestLock.withLock { archivedState() }
        state.generation = ArchiveGeneration(store: storeId, ordinal: 0, id: generation)
        // An encrypted store's archive is sealed object by object (SPEC.md §14.5).
        var archive = archive
        archive.target = SealingArchiveTarget.wrapping(archive.target, cipher: cipher)
        return Archiver(options: archive, directory: directory, fileSystem: fileSystem, storeId: storeId, generation: generation,
                        state: (version, state), wals: wals, inherited: inherited, sequence: latestSequence) { [weak self] below in
            self?.removeArchivedWals(below: below)
        }
    }

    /// Removes the WALs the archive has whole and the store no longer replays.
    private func removeArchivedWals(below: UInt64) {
        let logNumber = manifestLock.withLock { versions.logNumber }
        removeObsoleteWals(before: min(below, logNumber))
    }
}
