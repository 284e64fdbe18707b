
/// The manifest: the append-only log of ``VersionEdit``s that says which segments are live, plus
/// the counters (next file number, log number, last sequence) and the key spaces. Owns the
/// current ``Version``. REQUIRES for every mutating call: the caller holds the engine's manifest
/// lock (edits are applied one at a time).
package final class VersionSet: @unchecked Sendable {
    // @unchecked Sendable: every mutating call holds the engine's manifest lock (above).
    let fileSystem: any FileSystem
    let directory: String
    private(set) var current: Version
    private(set) var keySpaces: [KeySpace]
    /// WAL files numbered at or above this still hold data not in segments.
    private(set) var logNumber: UInt64
    private(set) var nextFileNumber: UInt64
    private(set) var lastSequence: UInt64
    private(set) var manifestNumber: UInt64 = 0
    /// The store format version the manifest records (this build's for a new store).
    private(set) var formatVersion = FormatConstants.storeFormatVersion
    /// The store's identity (SPEC.md §7.1): random at creation; 0 for a store an older build
    /// made, until its first snapshot manifest (every writable open of one writes a snapshot).
    private(set) var storeId: UInt64 = 0
    /// Which archive generation wrote the WALs from each number on (``ArchiveLogOwner``).
    private(set) var archiveLogOwners: [ArchiveLogOwner] = []
    private var manifest: LogWriter?
    /// Set by ``recover`` to the manifest's size when it ends with a whole record at the file's
    /// end: an append after it is the next record a reader finds. Nil after a torn or zeroed tail.
    private var readManifestBytes: UInt64?
    let opener: SegmentOpener
    private let stats: StatisticsCounters
    /// The store's cipher when it is encrypted: every manifest is written sealed (SPEC.md §14).
    let cipher: StoreCipher?
    /// The sealer of the manifest ``recover`` read, for appends to it.
    private var readManifestSealer: FileSealer?

    private init(fileSystem: any FileSystem, directory: String, stats: StatisticsCounters, opener: SegmentOpener, cipher: StoreCipher?) {
        self.cipher = cipher
        self.fileSystem = fileSystem
        self.directory = directory
        self.stats = stats
        self.opener = opener
        current = Version(keySpaces: [:])
        keySpaces = []
        logNumber = 0
        nextFileNumber = 1
        lastSequence = 0
    }

    /// A store with no files yet.
    static func create(fileSystem: any FileSystem, directory: String, stats: StatisticsCounters,
                       opener: SegmentOpener, cipher: StoreCipher?) -> VersionSet {
        let set = VersionSet(fileSystem: fileSystem, directory: directory, stats: stats, opener: opener, cipher: cipher)
        set.storeId = newStoreId()
        return set
    }

    /// A store id: random, never 0.
    static func newStoreId() -> UInt64 { UInt64.random(in: 1...UInt64.max) }

    /// Reads CURRENT and the manifest it names (SPEC.md §Recovery). A torn last record (a crash
    /// while appending an edit that never took effect) is dropped; any other damage throws.
    /// The segments it names join the current version unopened: each opens on its first read
    /// (``LiveSegment``).
    static func recover(fileSystem: any FileSystem, directory: String, stats: StatisticsCounters,
                        opener: SegmentOpener, cipher: StoreCipher?) throws -> VersionSet {
        let set = VersionSet(fileSystem: fileSystem, directory: directory, stats: stats, opener: opener, cipher: cipher)
        let currentPath = joinPath(directory, FormatConstants.currentFileName)
        let number = try parseCurrent(try fileSystem.readWholeFile(currentPath, limit: FormatConstants.smallFileMaxBytes), path: currentPath)
        let name = StoreFile.manifestName(number)
        let path = joinPath(directory, name)
        guard fileSystem.fileExists(path) else {
            throw StorageError.corruption(file: currentPath, offset: 0, reason: "CURRENT names \(name), which does not exist")
        }
        let file = try fileSystem.openReadable(path)
        defer { file.close() }
        let replay: ManifestReplay, outcome: LogReader.Outcome, sealer: FileSealer?
        do {
            (replay, outcome, sealer) = try ManifestReplay.read(file, path: path, cipher: cipher)
        } catch let e as StorageError {
            throw ManifestKeyCheck.explain(e, manifest: path, directory: directory, fileSystem: fileSystem, cipher: cipher)
        }
        set.readManifestSealer = sealer
        set.keySpaces = try replay.finish(path: path)
        set.formatVersion = replay.formatVersion ?? set.formatVersion
        set.storeId = replay.storeId
        set.archiveLogOwners = replay.archiveLogOwners
        set.logNumber = replay.logNumber
        set.nextFileNumber = max(set.nextFileNumber, replay.nextFileNumber)
        set.lastSequence = max(set.lastSequence, replay.lastSequence)
        let metas = replay.segments
        for m in metas.values { set.nextFileNumber = max(set.nextFileNumber, m.fileNumber + 1) }
        var edit = VersionEdit()
        edit.addedKeySpaces = set.keySpaces
        edit.addedSegments = Array(metas.values)
        set.current = try Version(keySpaces: [:]).applying(edit) { LiveSegment(meta: $0, opener: opener) }
        set.manifestNumber = number
        set.nextFileNumber = max(set.nextFileNumber, number + 1)
        if !outcome.droppedTornTail, UInt64(outcome.validEnd) == file.size { set.readManifestBytes = file.size }
        return set
    }

    /// CURRENT holds "MANIFEST-NNNNNN\n" then the masked CRC32C of that line in 8 hex digits and
    /// "\n" (SPEC.md §Files).
    static func parseCurrent(_ bytes: [UInt8], path: String) throws -> UInt64 {
        // Longer than any canonical CURRENT (name, 20 digits, CRC, two newlines): damage,
        // refused before a string of it is built and split.
        guard bytes.count <= FormatConstants.manifestPrefix.utf8.count + 20 + 1 + 8 + 1 else {
            throw StorageError.corruption(file: path, offset: 0, reason: "CURRENT is malformed")
        }
        let text = String(decoding: bytes, as: UTF8.self)
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        guard lines.count == 3, lines[2].isEmpty, lines[0].hasPrefix(FormatConstants.manifestPrefix),
              let number = UInt64(lines[0].dropFirst(FormatConstants.manifestPrefix.count)),
              number <= FormatConstants.maxFileNumber,
              let crc = UInt32(lines[1], radix: 16)
        else {
            throw StorageError.corruption(file: path, offset: 0, reason: "CURRENT is malformed")
        }
        let line = Array((lines[0] + "\n").utf8)
        guard Checksum.mask(line.withUnsafeBytes { Checksum.crc32c($0) }) == crc else {
            throw StorageError.corruption(file: path, offset: 0, reason: "CURRENT checksum mismatch")
        }
        // Byte for byte what this build writes: a change that parses the same (an upper-case
        // hex digit) is still damage.
        guard bytes == currentContents(manifestNumber: number) else {
            throw StorageError.corruption(file: path, offset: 0, reason: "CURRENT is not in its canonical form")
        }
        return number
    }

    package static func currentContents(manifestNumber: UInt64) -> [UInt8] {
        let line = Array((StoreFile.manifestName(manifestNumber) + "\n").utf8)
        let crc = Checksum.mask(line.withUnsafeBytes { Checksum.crc32c($0) })
        return line + Array((String(crc, radix: 16).leftPadded(to: 8) + "\n").utf8)
    }

    /// Set when a manifest record could not be made durable: its fate is unknown until the
    /// store is reopened, so every later edit is refused with it.
    private(set) var unknownState: StorageError?

    func newFileNumber() -> UInt64 {
        defer { nextFileNumber += 1 }
        return nextFileNumber
    }

    /// Notes a file number seen on disk so new files never reuse it.
    func markFileNumberUsed(_ n: UInt64) {
        // Callers pass names parsed within maxFileNumber; the guard keeps the sum in range.
        guard n < FormatConstants.maxFileNumber else { return }
        nextFileNumber = max(nextFileNumber, n + 1)
    }

    func noteLastSequence(_ s: UInt64) { lastSequence = max(lastSequence, s) }

    /// Starts a new manifest holding the whole current state, then points CURRENT at it:
    /// write + fsync the manifest, write + fsync CURRENT.tmp, rename it over CURRENT, fsync the
    /// directory (SPEC.md §Recovery: each step leaves either the old or the new state).
    func writeSnapshotManifest() throws {
        let number = newFileNumber()
        var edit = VersionEdit()
        edit.formatVersion = FormatConstants.storeFormatVersion
        edit.logNumber = logNumber
        edit.nextFileNumber = nextFileNumber
        edit.lastSequence = lastSequence
        edit.addedKeySpaces = keySpaces
        edit.addedSegments = current.allSegments.map(\.meta)
        // An older store gets its identity with its first snapshot (the one its first
        // writable open writes, since its manifest is of an older format).
        if storeId == 0 { storeId = Self.newStoreId() }
        edit.storeId = storeId
        edit.archiveLogOwners = archiveLogOwners
        let writer = try Self.writeManifest(edit, number: number, fileSystem: fileSystem, directory: directory, cipher: cipher)
        stats.manifestBytesWritten.add(writer.size, ordering: .relaxed)
        var renamed = false
        do {
            try Self.replaceCurrent(manifestNumber: number, fileSystem: fileSystem, directory: directory)
            renamed = true
            try fileSystem.syncDirectory(directory)
        } catch {
            if renamed {
                // CURRENT already names the new manifest (durably or not): it must stay. Found
                // by the I/O error test: removing it here left CURRENT naming nothing.
                try? manifest?.close()
                manifest = writer
                manifestNumber = number
            } else {
                try? writer.close()
                try? fileSystem.removeFile(joinPath(directory, StoreFile.manifestName(number)))
            }
            throw error
        }
        try? manifest?.close()
        manifest = writer
        manifestNumber = number
        // An older store is now of this format: what is logged from here on may use it.
        formatVersion = FormatConstants.storeFormatVersion
    }

    /// Writes a new manifest `MANIFEST-number` holding the one record `edit`, synced, and
    /// returns its writer, still open. Nothing is left behind when it fails.
    static func writeManifest(_ edit: VersionEdit, number: UInt64, fileSystem: any FileSystem, directory: String,
                              cipher: StoreCipher?) throws -> LogWriter {
        let path = joinPath(directory, StoreFile.manifestName(number))
        let file = try fileSystem.openWritable(path, truncate: true)
        let writer: LogWriter
        do { writer = try LogWriter.create(file: file, path: path, cipher: cipher) } catch {
            try? fileSystem.removeFile(path)
            throw error
        }
        do {
            try edit.encode().withUnsafeBytes { try writer.addRecord($0) }
            try writer.sync()
        } catch {
            try? writer.close()
            try? fileSystem.removeFile(path)
            throw error
        }
        return writer
    }

    /// Points CURRENT at `MANIFEST-manifestNumber`: writes and syncs CURRENT.tmp, then renames it
    /// over CURRENT, which is the last step (when this throws, CURRENT was not replaced). The
    /// caller syncs the directory.
    static func replaceCurrent(manifestNumber: UInt64, fileSystem: any FileSystem, directory: String) throws {
        let currentPath = joinPath(directory, FormatConstants.currentFileName)
        let tmpPath = currentPath + FormatConstants.tempSuffix
        let tmp = try fileSystem.openWritable(tmpPath, truncate: true)
        do {
            try currentContents(manifestNumber: manifestNumber).withUnsafeBytes { try tmp.append($0) }
            try tmp.sync()
        } catch {
            try? tmp.close()
            throw error
        }
        try tmp.close()
        try fileSystem.rename(tmpPath, to: currentPath)
    }

    /// A manifest is appended to across opens until it reaches this size; the open after that
    /// starts a new one holding only the live state (LevelDB's `reuse_manifest` bound).
    static let reuseLimitBytes: UInt64 = 2 << 20

    /// Opens the manifest CURRENT names for appending, as the open's manifest, instead of
    /// starting a new one: an open then writes no manifest, `CURRENT` or directory entry,
    /// three syncs fewer (SPEC.md §8). Only a manifest read whole (a record appended after a
    /// torn or zeroed tail would be unreachable), of this build's format, below
    /// ``reuseLimitBytes`` and not outgrown (``hasOutgrownLiveState(_:)``); false otherwise,
    /// and the caller writes a snapshot manifest.
    func reopenManifestForAppend() throws -> Bool {
        guard manifest == nil, let readManifestBytes, formatVersion == FormatConstants.storeFormatVersion else { return false }
        let path = joinPath(directory, StoreFile.manifestName(manifestNumber))
        let file = try fileSystem.openWritable(path, truncate: false)
        // Compared with what recovery read, so that a change in between cannot put a record
        // after bytes no reader accepts.
        guard file.size < Self.reuseLimitBytes, file.size == readManifestBytes, !hasOutgrownLiveState(file.size) else {
            try? file.close()
            return false
        }
        manifest = LogWriter(file: file, path: path, sealer: readManifestSealer)
        return true
    }

    /// A segment a flush or a compaction has just written, opened now: an edit whose file does
    /// not open changes nothing.
    private func openedSegment(_ meta: SegmentMeta) throws -> LiveSegment {
        LiveSegment(meta: meta, reader: try opener.open(meta), opener: opener)
    }

    /// Appends `edit` (with the counters) to the manifest, syncs it, then makes the result the
    /// current version. Nothing changes if the write fails.
    func logAndApply(_ edit: VersionEdit) throws {
        guard let manifest else { throw StorageError.closed }
        if let unknownState { throw unknownState }
        var e = edit
        e.nextFileNumber = nextFileNumber
        if let s = e.lastSequence { e.lastSequence = max(s, lastSequence) }
        let next = try current.applying(e, segment: openedSegment)
        let payload = e.encode()
        let before = manifest.size
        do {
            try payload.withUnsafeBytes { try manifest.addRecord($0) }
        } catch {
            // A partial record that could not be cut back: a later record after it would be
            // unreachable (recovery stops at the partial one), so no edit may follow.
            if manifest.endIsUnknown {
                unknownState = .writesStopped(reason: "a manifest record could not be taken back after a failed write: \(error)")
            }
            throw error
        }
        do {
            try manifest.sync()
        } catch {
            // The record may or may not be durable (and the truncation below may fail too):
            // no later record may follow it, and the files it names must stay, since a reopen
            // may find it. The engine stops writing; the open replays what reached the disk and
            // starts a fresh manifest.
            unknownState = .writesStopped(reason: "a manifest record could not be made durable: \(error)")
            try? manifest.file.truncate(to: before)
            throw error
        }
        stats.manifestBytesWritten.add(manifest.size - before, ordering: .relaxed)
        current = next
        if let v = e.logNumber { logNumber = v }
        if let v = e.lastSequence { lastSequence = v }
        if let v = e.archiveLogOwners { archiveLogOwners = v }
        for ks in e.addedKeySpaces where !keySpaces.contains(ks) { keySpaces.append(ks) }
        if hasOutgrownLiveState(manifest.size) { rollManifest() }
    }

    /// When this manifest is rewritten as a snapshot (``ManifestRollRule``).
    var roll = ManifestRollRule()

    /// Whether a manifest of `size` bytes holds much more history than live state, which is
    /// about what a snapshot of the current version takes (its segment records and key spaces).
    func hasOutgrownLiveState(_ size: UInt64) -> Bool {
        guard size > roll.minimumBytes else { return false }
        var live: UInt64 = 64 + 32 * UInt64(keySpaces.count)
        for segment in current.allSegments { live += 48 + UInt64(segment.meta.smallest.count + segment.meta.largest.count) }
        return size / max(1, roll.liveMultiple) > live
    }

    /// Starts a snapshot manifest in place of an outgrown one and removes the old one. The edit
    /// that outgrew it is already durable in the old manifest, so a failure before `CURRENT`
    /// names the new one leaves everything as it was (the next edit tries again); a failure
    /// after it (the directory sync) leaves `CURRENT`'s fate unknown, and a later edit logged
    /// only in the new manifest could be lost with it: writes stop, as after a failed manifest
    /// sync, and the next open follows whichever `CURRENT` is on disk.
    private func rollManifest() {
        let old = manifestNumber
        do {
            try writeSnapshotManifest()
        } catch {
            if manifestNumber != old {
                unknownState = .writesStopped(reason: "a new manifest could not be made durable: \(error)")
            }
            return
        }
        try? fileSystem.removeFile(joinPath(directory, StoreFile.manifestName(old)))
    }

    /// Applies an edit to the in-memory state only; the next snapshot manifest records it.
    func applyWithoutLogging(_ edit: VersionEdit) throws {
        current = try current.applying(edit, segment: openedSegment)
        for ks in edit.addedKeySpaces where !keySpaces.contains(ks) { keySpaces.append(ks) }
        if let v = edit.logNumber { logNumber = v }
    }

    func close() {
        try? manifest?.close()
        manifest = nil
    }
}

extension VersionSet {
    /// Adds a key space before the first manifest exists (store creation).
    func addInitialKeySpace(_ ks: KeySpace) throws {
        var edit = VersionEdit()
        edit.addedKeySpaces = [ks]
        try applyWithoutLogging(edit)
    }

    /// Sets the log number before the first manifest edit is logged; it reaches disk with the
    /// next edit or snapshot.
    func setLogNumber(_ n: UInt64) throws {
        var edit = VersionEdit()
        edit.logNumber = n
        try logAndApply(edit)
    }
}
