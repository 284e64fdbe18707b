/// One consistent state of a store, as a backup copies it: the manifest's counters and key
/// spaces, the live segments and (from a read-only open, which cannot flush) the WALs recovery
/// replays on top of them.
struct BackupSource {
    var directory: String
    var formatVersion: UInt32
    var keySpaces: [KeySpace]
    var segments: [SegmentMeta]
    /// WAL file numbers in the source directory, oldest first, each copied whole.
    var wals: [UInt64]
    var nextFileNumber: UInt64
    var lastSequence: UInt64
    /// The store's id (0 for an older store opened read-only, which has none yet).
    var storeId: UInt64 = 0
    /// The store's cipher when it is encrypted: the backup's manifest is sealed with it (its
    /// other files are copies of sealed files).
    var cipher: StoreCipher?
}

/// Writes a backup directory from a ``BackupSource`` (SPEC.md §3.2): a complete store that opens
/// like any other, built so that no crash leaves something that opens as half a store, and an
/// earlier backup in the same directory stays whole until the new one replaces it.
///
/// Order: take the destination's `LOCK`; check what it holds; mark a fresh directory as a
/// backup in progress; link or copy the files the earlier backup lacks; sync the directory;
/// write the manifest; rewrite the marker; point `CURRENT` at the manifest; sync; remove what
/// the new manifest does not name.
struct BackupWriter {
    let source: BackupSource
    let destination: String
    let fileSystem: any FileSystem
    let options: BackupOptions
    let start = monotonicSeconds()

    /// What the destination holds before the backup.
    private struct Prior {
        /// The unchanged earlier backup, if there is one: its marker entry and its segments.
        var manifest: BackupMarker.Manifest?
        var segments: [UInt64: SegmentMeta] = [:]
        /// The store the earlier backup is of (0: unknown, an older build's).
        var storeId: UInt64 = 0
        /// Highest file number of any of the store's files there, or counter the manifest holds.
        var highestNumber: UInt64 = 0
    }

    /// One file to put in the backup.
    private struct Transfer {
        var sourcePath: String
        var destinationPath: String
        var bytes: UInt64
        /// Segments may be linked; a WAL copy never is (the source's WAL may still be appended
        /// to by a later open, and its copy must not change with it).
        var linkable: Bool
    }

    func run() throws -> BackupReport {
        try fileSystem.createDirectory(destination)
        let lock = try fileSystem.lockFile(joinPath(destination, FormatConstants.lockFileName), shared: false)
        defer { lock.release() }
        let prior = try inspectDestination()

        // Numbers: the manifest first, then the WAL copies (so the log number is above every
        // WAL an earlier backup left), then renumbered segments.
        var next = max(source.nextFileNumber, prior.highestNumber + 1)
        let manifestNumber = next
        next += 1
        let logNumber = next
        var report = BackupReport(sequence: source.lastSequence, segments: source.segments.count, filesLinked: 0, filesCopied: 0,
                                  filesReused: 0, bytesLinked: 0, bytesCopied: 0, bytesReused: 0, seconds: 0)
        var transfers: [Transfer] = []
        var metas: [SegmentMeta] = []
        for n in source.wals {
            let path = joinPath(source.directory, StoreFile.walName(n))
            let size = try fileSystem.openReadable(path).closing { $0.size }
            transfers.append(Transfer(sourcePath: path, destinationPath: joinPath(destination, StoreFile.walName(next)),
                                      bytes: size, linkable: false))
            next += 1
        }
        for meta in source.segments.sorted(by: { $0.fileNumber < $1.fileNumber }) {
            let sourcePath = joinPath(source.directory, StoreFile.segmentName(meta.fileNumber))
            var out = meta
            if let old = prior.segments[meta.fileNumber] {
                // Only a backup of this same store can hold one of its segments.
                if prior.storeId != 0, prior.storeId == source.storeId, try isSameSegment(meta, old, sourcePath: sourcePath) {
                    report.filesReused += 1
                    report.bytesReused += meta.fileSize
                    metas.append(old.withLevel(meta.level))
                    continue
                }
                // The earlier backup's file of that number is another segment: it must stay
                // until the new backup is complete, so this one takes a new number.
                out.fileNumber = next
                next += 1
            }
            metas.append(out)
            transfers.append(Transfer(sourcePath: sourcePath, destinationPath: joinPath(destination, StoreFile.segmentName(out.fileNumber)),
                                      bytes: meta.fileSize, linkable: true))
        }
        guard next <= FormatConstants.maxFileNumber else {
            throw StorageError.corruption(file: destination, offset: 0, reason: "file numbers past the limit")
        }

        var written: [String] = []
        var manifestWritten = false
        do {
            if prior.manifest == nil && !fileSystem.fileExists(joinPath(destination, BackupMarker.fileName)) {
                // Before any file: an interrupted first backup is then known as one.
                try BackupMarker(current: nil, previous: nil, sequence: 0).write(in: destination, fileSystem: fileSystem)
                try fileSystem.syncDirectory(destination)
            }
            try transferAll(transfers, report: &report, written: &written)
            if source.wals.isEmpty {
                // Recovery wants the WAL the log number names to exist (a missing one means
                // lost manifest records, §8): an empty one.
                let path = joinPath(destination, StoreFile.walName(logNumber))
                written.append(path)
                let wal = try fileSystem.openWritable(path, truncate: true)
                do { try wal.sync() } catch { try? wal.close(); throw error }
                try wal.close()
            }
            try fileSystem.syncDirectory(destination)

            var edit = VersionEdit()
            edit.formatVersion = source.formatVersion
            edit.logNumber = logNumber
            edit.nextFileNumber = next
            edit.lastSequence = source.lastSequence
            edit.addedKeySpaces = source.keySpaces
            edit.addedSegments = metas
            // A backup is the same store (its archive and later backups know it as such).
            if source.storeId != 0 { edit.storeId = source.storeId }
            let manifest = try VersionSet.writeManifest(edit, number: manifestNumber, fileSystem: fileSystem, directory: destination,
                                                        cipher: source.cipher)
            try manifest.close()
            manifestWritten = true
            let manifestPath = joinPath(destination, StoreFile.manifestName(manifestNumber))
            let checksum = try BackupMarker.checksum(ofFile: manifestPath, fileSystem: fileSystem)
            // The marker names both manifests before CURRENT moves: a crash in between leaves
            // CURRENT on the previous one, which the marker still vouches for.
            try BackupMarker(current: .init(number: manifestNumber, checksum: checksum), previous: prior.manifest,
                             sequence: source.lastSequence).write(in: destination, fileSystem: fileSystem)
            try VersionSet.replaceCurrent(manifestNumber: manifestNumber, fileSystem: fileSystem, directory: destination)
        } catch {
            for path in written { try? fileSystem.removeFile(path) }
            if manifestWritten { try? fileSystem.removeFile(joinPath(destination, StoreFile.manifestName(manifestNumber))) }
            throw error
        }
        // The backup is complete from here (CURRENT names it): what follows only tidies up.
        try fileSystem.syncDirectory(destination)
        removeUnreferenced(manifestNumber: manifestNumber, logNumber: logNumber, segments: Set(metas.map(\.fileNumber)))
        try? fileSystem.syncDirectory(destination)
        report.seconds = monotonicSeconds() - start
        return report
    }

    /// Refuses a destination that holds anything but nothing, an interrupted backup, or an
    /// unchanged backup (SPEC.md §3.2); reads the segments of the last.
    private func inspectDestination() throws -> Prior {
        let names = try fileSystem.listDirectory(destination)
        var prior = Prior()
        for name in names {
            switch StoreFile.parse(name) {
            case let .wal(n)?, let .segment(n)?, let .manifest(n)?: prior.highestNumber = max(prior.highestNumber, n)
            default: break
            }
        }
        guard names.contains(BackupMarker.fileName) else {
            // `LOCK`, and a marker that was being written when a first backup was interrupted,
            // are all an empty destination may hold.
            if let other = names.sorted().first(where: { !BackupMarker.isLeftOfAnEmptyDestination($0) }) {
                throw StorageError.destinationInUse(path: destination, reason: "it is not empty and holds no Strata backup (it holds \(other))")
            }
            return prior
        }
        guard let marker = BackupMarker.decode(try fileSystem.readWholeFile(joinPath(destination, BackupMarker.fileName), limit: FormatConstants.smallFileMaxBytes)) else {
            throw StorageError.destinationInUse(path: destination, reason: "its \(BackupMarker.fileName) file is damaged")
        }
        // No CURRENT: a first backup into it was interrupted; its files are replaced.
        guard names.contains(FormatConstants.currentFileName) else { return prior }
        let currentPath = joinPath(destination, FormatConstants.currentFileName)
        let number = try VersionSet.parseCurrent(try fileSystem.readWholeFile(currentPath, limit: FormatConstants.smallFileMaxBytes), path: currentPath)
        let manifestPath = joinPath(destination, StoreFile.manifestName(number))
        guard fileSystem.fileExists(manifestPath) else {
            throw StorageError.destinationInUse(path: destination, reason: "CURRENT names \(StoreFile.manifestName(number)), which is missing")
        }
        let found = BackupMarker.Manifest(number: number, checksum: try BackupMarker.checksum(ofFile: manifestPath, fileSystem: fileSystem))
        guard found == marker.current || found == marker.previous else {
            throw StorageError.destinationInUse(path: destination,
                                                reason: "the backup in it was opened as a store and changed since it was written")
        }
        let versions = try VersionSet.recover(fileSystem: fileSystem, directory: destination, stats: StatisticsCounters(),
                                              opener: SegmentOpener(open: { _ in throw StorageError.closed }, remove: { _ in }),
                                              cipher: source.cipher)
        prior.manifest = found
        prior.storeId = versions.storeId
        prior.highestNumber = max(prior.highestNumber, versions.nextFileNumber)
        for segment in versions.current.allSegments { prior.segments[segment.meta.fileNumber] = segment.meta }
        return prior
    }

    /// Whether the earlier backup's segment `old` (of the same store) is the source's segment
    /// `meta`: the same manifest record (but for the level, which a move changes; the uid
    /// included, random per segment since store format 3) and the same last bytes (the footer
    /// and the blocks before it, checksums included), and whole on disk.
    private func isSameSegment(_ meta: SegmentMeta, _ old: SegmentMeta, sourcePath: String) throws -> Bool {
        guard meta.withLevel(0) == old.withLevel(0) else { return false }
        let destinationPath = joinPath(destination, StoreFile.segmentName(old.fileNumber))
        guard fileSystem.fileExists(destinationPath) else { return false }
        let tail = Int(min(meta.fileSize, 4096))
        func lastBytes(_ path: String) throws -> [UInt8]? {
            try fileSystem.openReadable(path).closing { file -> [UInt8]? in
                guard file.size == meta.fileSize else { return nil }
                var bytes = [UInt8](repeating: 0, count: tail)
                try bytes.withUnsafeMutableBytes { try file.readExactly(at: meta.fileSize - UInt64(tail), into: $0, path: path) }
                return bytes
            }
        }
        guard let mine = try lastBytes(destinationPath) else { return false }
        return try lastBytes(sourcePath) == mine
    }

    private func transferAll(_ transfers: [Transfer], report: inout BackupReport, written: inout [String]) throws {
        var progress = BackupProgress(filesDone: 0, filesTotal: transfers.count, bytesDone: 0,
                                      bytesTotal: transfers.reduce(0) { $0 + $1.bytes }, seconds: 0)
        try reportProgress(&progress)
        var linking = options.linksFiles
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        for t in transfers {
            // A leftover of an interrupted backup may sit under the name (never a file the
            // earlier backup names: those were kept or given a new number).
            try fileSystem.removeFile(t.destinationPath)
            if linking && t.linkable {
                do {
                    try fileSystem.linkFile(t.sourcePath, to: t.destinationPath)
                    written.append(t.destinationPath)
                    report.filesLinked += 1
                    report.bytesLinked += t.bytes
                    progress.filesDone += 1
                    progress.bytesDone += t.bytes
                    try reportProgress(&progress)
                    continue
                } catch {
                    // Another file system, or one without hard links: copy this and the rest.
                    linking = false
                }
            }
            written.append(t.destinationPath)
            try copy(t, buffer: &buffer, progress: &progress)
            report.filesCopied += 1
            report.bytesCopied += t.bytes
            progress.filesDone += 1
            try reportProgress(&progress)
        }
    }

    /// Copies `t.bytes` bytes and syncs the copy. A source shorter than the manifest says is
    /// damage.
    private func copy(_ t: Transfer, buffer: inout [UInt8], progress: inout BackupProgress) throws {
        let input = try fileSystem.openReadable(t.sourcePath)
        defer { input.close() }
        let output = try fileSystem.openWritable(t.destinationPath, truncate: true)
        do {
            var offset: UInt64 = 0
            var sinceReport: UInt64 = 0
            while offset < t.bytes {
                let want = Int(min(UInt64(buffer.count), t.bytes - offset))
                try buffer.withUnsafeMutableBytes { raw in
                    try input.readExactly(at: offset, into: UnsafeMutableRawBufferPointer(rebasing: raw[..<want]), path: t.sourcePath, once: true)
                }
                try buffer.withUnsafeBytes { try output.append(UnsafeRawBufferPointer(rebasing: $0[..<want])) }
                offset += UInt64(want)
                progress.bytesDone += UInt64(want)
                sinceReport += UInt64(want)
                if sinceReport >= 1 << 20 {
                    sinceReport = 0
                    try reportProgress(&progress)
                }
            }
            try output.sync()
        } catch {
            try? output.close()
            throw error
        }
        try output.close()
    }

    private func reportProgress(_ progress: inout BackupProgress) throws {
        guard let callback = options.progress else { return }
        progress.seconds = monotonicSeconds() - start
        if !callback(progress) { throw StorageError.cancelled }
    }

    /// Removes the store's files the new manifest does not name: the earlier backup's segments,
    /// manifest and WAL copies, leftovers of interrupted backups, temp files. Failures are left
    /// for the next backup or open (both remove the same files).
    private func removeUnreferenced(manifestNumber: UInt64, logNumber: UInt64, segments: Set<UInt64>) {
        guard let names = try? fileSystem.listDirectory(destination) else { return }
        for name in names {
            let obsolete: Bool
            switch StoreFile.parse(name) {
            case let .wal(n)?: obsolete = n < logNumber
            case let .segment(n)?: obsolete = !segments.contains(n)
            case let .manifest(n)?: obsolete = n != manifestNumber
            case .temp?: obsolete = true
            default: obsolete = name == BackupMarker.fileName + FormatConstants.tempSuffix
            }
            if obsolete { try? fileSystem.removeFile(joinPath(destination, name)) }
        }
    }
}

extension SegmentMeta {
    func withLevel(_ level: Int) -> SegmentMeta {
        var m = self
        m.level = level
        return m
    }
}

extension ReadableFile {
    /// Runs `body` on the file, then closes it.
    func closing<R>(_ body: (any ReadableFile) throws -> R) rethrows -> R {
        defer { close() }
        return try body(self)
    }
}
