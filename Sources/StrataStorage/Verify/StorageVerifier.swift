/// One problem ``Engine/verify(directory:fileSystem:)`` found: where, and what.
public struct StorageProblem: Sendable, Equatable, CustomStringConvertible {
    /// Path of the damaged file.
    public var file: String
    /// Byte offset of the damage in the file (0 when it concerns the whole file).
    public var offset: UInt64
    public var reason: String

    public var description: String { "\(file) at offset \(offset): \(reason)" }
}

/// What a storage verification read and found.
public struct StorageVerification: Sendable {
    /// Damage: a checksum or structural check failed, or a file the store needs is missing.
    public var problems: [StorageProblem] = []
    /// Findings that are not damage: a torn log tail that recovery drops (a write that was never
    /// acknowledged), files a writable open will delete.
    public var notes: [String] = []
    public var manifestRecords = 0
    public var walRecords = 0
    public var segments = 0
    public var blocks = 0
    /// Blocks among ``blocks`` in the id layout (SPEC.md §6.1.1), where objects are read by
    /// arithmetic on their id: a store's `objects` key space is written so.
    public var idBlocks = 0
    /// Segment entries read (every version and tombstone).
    public var entries: UInt64 = 0
    /// Bytes of files read and checked.
    public var bytesChecked: UInt64 = 0

    /// Whether no problem was found.
    public var isClean: Bool { problems.isEmpty }
}

extension Engine {
    /// Reads every file of the store in `directory` and checks every checksum and structure,
    /// without opening the engine and without writing anything: `CURRENT`, every manifest
    /// record, every block of every live segment (with key order, entry counts and key ranges
    /// against the manifest), every record of the WAL files recovery would replay, and `STATS`.
    /// Damage is collected, not thrown, so that one run reports all of it.
    ///
    /// Throws ``StorageError/notAStore(path:)`` when the directory holds no store, and
    /// ``StorageError/locked(path:)`` when a writer has it open (verification takes the shared
    /// lock read-only openers take).
    ///
    /// An encrypted store needs its key (`encryptionKey`): without it, or with another, this
    /// throws ``StorageError/encryptionKeyRequired(file:)`` or
    /// ``StorageError/wrongEncryptionKey(file:)`` before checking anything; every sealed unit's
    /// tag is then checked as a checksum would be.
    ///
    /// ```swift
    /// let report = try Engine.verify(directory: path)
    /// for p in report.problems { print(p) }
    /// ```
    public static func verify(directory: String, fileSystem: any FileSystem = PosixFileSystem(),
                              encryptionKey: [UInt8]? = nil) throws -> StorageVerification {
        let fs = fileSystem
        let currentPath = joinPath(directory, FormatConstants.currentFileName)
        guard fs.directoryExists(directory), fs.fileExists(currentPath) else { throw StorageError.notAStore(path: directory) }
        let cipher = try encryptionKey.map { try StoreCipher(key: $0) }
        let lockPath = joinPath(directory, FormatConstants.lockFileName)
        let lock = fs.fileExists(lockPath) ? try fs.lockFile(lockPath, shared: true) : nil
        defer { lock?.release() }
        try checkEncryptionKey(directory: directory, fs: fs, cipher: cipher)
        var verifier = StorageVerifier(directory: directory, fs: fs, cipher: cipher)
        verifier.run(currentPath: currentPath)
        return verifier.report
    }
}

extension Engine {
    /// Throws the typed error of a key that does not open the store in `directory` (none for an
    /// encrypted store, another one, or one for a plaintext store), judged from the header of
    /// the manifest `CURRENT` names; a store whose `CURRENT` or manifest cannot be read is left
    /// to the caller's own checks, which report that damage.
    static func checkEncryptionKey(directory: String, fs: any FileSystem, cipher: StoreCipher?) throws {
        let currentPath = joinPath(directory, FormatConstants.currentFileName)
        guard let current = try? fs.readWholeFile(currentPath, limit: FormatConstants.smallFileMaxBytes),
              let number = try? VersionSet.parseCurrent(current, path: currentPath) else { return }
        let path = joinPath(directory, StoreFile.manifestName(number))
        guard let file = try? fs.openReadable(path) else { return }
        defer { file.close() }
        guard file.size > 0 else { return }
        do {
            _ = try EncryptionHeader.read(file: file, cipher: cipher, path: path)
        } catch let e as StorageError {
            // A damaged manifest header is reported with the other damage, not as a wrong key.
            if case .corruption = ManifestKeyCheck.explain(e, manifest: path, directory: directory, fileSystem: fs, cipher: cipher) { return }
            throw e
        }
    }
}

/// The walk behind ``Engine/verify(directory:fileSystem:encryptionKey:)``.
struct StorageVerifier {
    let directory: String
    let fs: any FileSystem
    let cipher: StoreCipher?
    var report = StorageVerification()
    private let stats = StatisticsCounters()
    /// A small cache: every block is read once, with `fillCache` false.
    private let cache = BlockCache(capacityBytes: 1 << 20)

    init(directory: String, fs: any FileSystem, cipher: StoreCipher?) {
        self.cipher = cipher
        self.directory = directory
        self.fs = fs
    }

    private mutating func problem(_ error: Error, file: String) {
        if let e = error as? StorageError, case let .corruption(f, offset, reason) = e {
            report.problems.append(StorageProblem(file: f, offset: offset, reason: reason))
        } else {
            report.problems.append(StorageProblem(file: file, offset: 0, reason: "\(error)"))
        }
    }

    mutating func run(currentPath: String) {
        let manifestNumber: UInt64
        do {
            let bytes = try fs.readWholeFile(currentPath, limit: FormatConstants.smallFileMaxBytes)
            report.bytesChecked += UInt64(bytes.count)
            manifestNumber = try VersionSet.parseCurrent(bytes, path: currentPath)
        } catch {
            problem(error, file: currentPath)
            return
        }
        guard let manifest = readManifest(number: manifestNumber) else { return }
        let names = (try? fs.listDirectory(directory)) ?? []
        let live = Set(manifest.segments.map(\.fileNumber))
        for meta in manifest.segments.sorted(by: { $0.fileNumber < $1.fileNumber }) {
            verifySegment(meta)
        }
        var wals: [UInt64] = []
        for name in names.sorted() {
            switch StoreFile.parse(name) {
            case let .wal(n)?:
                if n >= manifest.logNumber { wals.append(n) } else { report.notes.append("\(name): obsolete log, removed at the next writable open") }
            case let .segment(n)? where !live.contains(n):
                report.notes.append("\(name): not in the manifest (an unfinished flush or compaction), removed by the next writable session")
            case let .manifest(n)? where n != manifestNumber:
                report.notes.append("\(name): old manifest, removed at the next writable open")
            case .temp?:
                report.notes.append("\(name): temporary file, removed at the next writable open")
            default:
                break
            }
        }
        if manifest.logNumber > 0, !fs.fileExists(joinPath(directory, StoreFile.walName(manifest.logNumber))) {
            report.problems.append(StorageProblem(file: joinPath(directory, StoreFile.manifestName(manifestNumber)), offset: 0,
                                                  reason: "the log number names \(StoreFile.walName(manifest.logNumber)), which does not exist: later manifest records are lost"))
        }
        // Every log is read and checked, then judged as recovery judges it (``WALReplay``).
        var lastSequence = manifest.lastSequence
        var scans: [UInt64: WALScan] = [:]
        for n in wals.sorted() {
            let scan = verifyLog(joinPath(directory, StoreFile.walName(n)), keySpaces: manifest.keySpaces, after: lastSequence)
            lastSequence = scan.lastSequence
            scans[n] = scan
        }
        let decisions = try? WALReplay.decide(logs: wals.sorted(), after: manifest.lastSequence,
                                              scan: { n, _ in scans[n]! }, hasDurableMark: { n, _ in scans[n]!.sawDurableMark })
        for d in decisions ?? [] {
            let path = joinPath(directory, StoreFile.walName(d.number))
            switch d.verdict {
            case let .corrupt(offset, later):
                problem(WALReplay.corruption(directory: directory, log: d.number, offset: offset, vouchedBy: later), file: path)
            case .discard:
                let records = scans[d.number]!.records
                if records > 0 {
                    report.notes.append("\(path): follows a log whose end is not known to be durable and was never synced; recovery drops its \(records) records")
                }
            case .replay:
                break
            }
        }
        let statsPath = StatsFile.path(in: directory)
        if fs.fileExists(statsPath) {
            do {
                let bytes = try fs.readWholeFile(statsPath, limit: FormatConstants.smallFileMaxBytes)
                report.bytesChecked += UInt64(bytes.count)
                _ = try StatsFile.decode(bytes, path: statsPath, cipher: cipher)
            } catch {
                problem(error, file: statsPath)
            }
        }
    }

    private struct ManifestState {
        var segments: [SegmentMeta]
        var keySpaces: Set<UInt32>
        var logNumber: UInt64
        var lastSequence: UInt64
    }

    /// Replays the manifest's edits with recovery's own replay (``ManifestReplay``), reporting
    /// what it refuses as a problem; nil when the live segment set cannot be known.
    private mutating func readManifest(number: UInt64) -> ManifestState? {
        let path = joinPath(directory, StoreFile.manifestName(number))
        guard fs.fileExists(path) else {
            report.problems.append(StorageProblem(file: joinPath(directory, FormatConstants.currentFileName), offset: 0,
                                                  reason: "CURRENT names \(StoreFile.manifestName(number)), which does not exist"))
            return nil
        }
        // The engine's own replay (ManifestReplay), so that what recovery refuses is a problem here.
        var replay = ManifestReplay()
        let spaces: [KeySpace]
        do {
            let bytes = try fs.readWholeFile(path, limit: FormatConstants.manifestMaxBytes)
            report.bytesChecked += UInt64(bytes.count)
            let outcome = try LogReader(bytes: bytes, path: path, allowsMarks: false, encryption: cipher.map { .file($0) } ?? .none).forEachRecord { record in
                try replay.apply(record.payload, offset: record.offset, path: path)
            }
            if outcome.droppedTornTail {
                report.notes.append("\(path): torn last record at offset \(outcome.validEnd) (an edit that never took effect)")
            }
            spaces = try replay.finish(path: path)
        } catch {
            report.manifestRecords += replay.records
            problem(error, file: path)
            return nil
        }
        report.manifestRecords += replay.records
        return ManifestState(segments: Array(replay.segments.values), keySpaces: Set(spaces.map(\.id)),
                             logNumber: replay.logNumber, lastSequence: replay.lastSequence)
    }

    /// Every block of one live segment: checksums, decompression, entry structure, key order,
    /// and agreement with the manifest's record of it.
    private mutating func verifySegment(_ meta: SegmentMeta) {
        let path = joinPath(directory, StoreFile.segmentName(meta.fileNumber))
        report.segments += 1
        guard fs.fileExists(path) else {
            report.problems.append(StorageProblem(file: path, offset: 0, reason: "live segment file is missing"))
            return
        }
        do {
            let reader = try SegmentReader.open(fileSystem: fs, path: path, fileNumber: meta.fileNumber, cache: cache, stats: stats,
                                                cipher: cipher)
            report.bytesChecked += reader.fileSize
            guard reader.fileSize == meta.fileSize else {
                throw StorageError.corruption(file: path, offset: 0,
                                              reason: "file has \(reader.fileSize) bytes, the manifest records \(meta.fileSize)")
            }
            guard reader.properties.keySpaceId == meta.keySpaceId else {
                throw StorageError.corruption(file: path, offset: 0, reason: "segment of key space \(reader.properties.keySpaceId), the manifest records \(meta.keySpaceId)")
            }
            try reader.checkFilter()
            var previous: [UInt8] = []
            var first: [UInt8]?
            var entries: UInt64 = 0
            let index = try reader.withIndex { $0.makeIterator() }
            index.seekToFirst()
            while index.isValid {
                let handle = try reader.handle(fromIndexValue: index.value)
                // A block of sealed values has each value's own tag checked as it is read.
                let block = try reader.dataBlock(handle, fillCache: false, checkingEachSealedValue: true)
                report.blocks += 1
                if block.idLayout != nil { report.idBlocks += 1 }
                try Self.checkIdBlock(block, indexValue: index.value, reader: reader, offset: handle.offset)
                let it = block.makeIterator()
                it.seekToFirst()
                var inBlock = 0
                while it.isValid {
                    let key = it.key
                    guard key.count >= InternalKey.trailerBytes else {
                        throw StorageError.corruption(file: path, offset: handle.offset, reason: "entry key shorter than its trailer")
                    }
                    if first == nil { first = Array(key) }
                    if !previous.isEmpty {
                        let order = previous.withUnsafeBytes { InternalKey.compare($0, key) }
                        guard order < 0 else {
                            throw StorageError.corruption(file: path, offset: handle.offset, reason: "keys out of order")
                        }
                    }
                    previous.removeAll(keepingCapacity: true)
                    previous.append(contentsOf: key)
                    entries += 1
                    inBlock += 1
                    it.next()
                }
                if it.corrupted || inBlock == 0 {
                    throw StorageError.corruption(file: path, offset: handle.offset, reason: "malformed data block")
                }
                // The index entry is a separator at or above every key of its block.
                if index.key.count > 0, previous.withUnsafeBytes({ InternalKey.compare($0, index.key) }) > 0 {
                    throw StorageError.corruption(file: path, offset: handle.offset, reason: "index entry below its block's last key")
                }
                index.next()
            }
            if index.corrupted { throw StorageError.corruption(file: path, offset: 0, reason: "malformed index block") }
            report.entries += entries
            guard entries == reader.properties.entryCount, entries == meta.entryCount else {
                throw StorageError.corruption(file: path, offset: 0,
                                              reason: "\(entries) entries read, properties say \(reader.properties.entryCount), the manifest \(meta.entryCount)")
            }
            guard first == meta.smallest, previous == meta.largest else {
                throw StorageError.corruption(file: path, offset: 0, reason: "key range differs from the manifest's record")
            }
        } catch {
            problem(error, file: path)
        }
    }

    /// Format 5: an id block's entries match their checksums, and its index entry's span (what
    /// point reads trust instead of the block) says what the block holds; other blocks have none.
    static func checkIdBlock(_ block: Block, indexValue: UnsafeRawBufferPointer, reader: SegmentReader, offset: UInt64) throws {
        guard reader.idFormat == .checked else { return }
        if reader.sealer != nil && !reader.sealedValues {
            // A format 5 encrypted segment's index has no spans (its id blocks are sealed whole).
            if let i = block.idLayout?.firstDamagedEntry() {
                throw StorageError.corruption(file: reader.path, offset: offset, reason: "id block entry \(i) fails its checksum")
            }
            return
        }
        var r = ByteReader(indexValue)
        _ = BlockHandle.decode(&r)
        guard let span = IdBlockSpan.decode(&r) else {
            throw StorageError.corruption(file: reader.path, offset: offset, reason: "malformed id block span in the index")
        }
        guard let layout = block.idLayout else {
            if span != nil {
                throw StorageError.corruption(file: reader.path, offset: offset, reason: "index gives a span to a block not in the id layout")
            }
            return
        }
        guard span == IdBlockSpan(firstId: layout.firstId, count: UInt32(layout.count), isSparse: layout.isSparse,
                                  sequenceZero: layout.shape == .checkedSequenceZero) else {
            throw StorageError.corruption(file: reader.path, offset: offset, reason: "index span differs from its id block")
        }
        if let i = layout.firstDamagedEntry() {
            throw StorageError.corruption(file: reader.path, offset: offset, reason: "id block entry \(i) fails its checksum")
        }
    }

    /// Every record of one WAL: checksum, batch structure (``WALRecord``), known key spaces.
    private mutating func verifyLog(_ path: String, keySpaces: Set<UInt32>, after start: UInt64) -> WALScan {
        var scan = WALScan(lastSequence: start, records: 0, torn: false, validEnd: 0, sawEndOfLog: false, sawDurableMark: false)
        do {
            let file = try fs.openReadable(path)
            defer { file.close() }
            report.bytesChecked += file.size
            let outcome = try Recovery.walReader(file, path: path, cipher: cipher, after: start).forEachRecord { record in
                if record.isEndOfLog { return }
                scan.records += 1
                let batch = try WALRecord(parsing: record.payload, path: path, offset: record.offset)
                try batch.forEachOperation(path: path, offset: record.offset) { op in
                    guard keySpaces.contains(op.keySpaceId) else {
                        throw StorageError.corruption(file: path, offset: UInt64(record.offset), reason: "WAL record for unknown key space \(op.keySpaceId)")
                    }
                }
                if let end = batch.lastSequence { scan.lastSequence = max(scan.lastSequence, end) }
            }
            scan.torn = outcome.droppedTornTail
            scan.validEnd = outcome.validEnd
            scan.sawDurableMark = outcome.sawDurableMark
            scan.sawEndOfLog = outcome.sawEndOfLog
            if scan.torn {
                report.notes.append("\(path): torn at offset \(outcome.validEnd): the rest was never synced, and recovery drops it")
            }
        } catch {
            problem(error, file: path)
        }
        report.walRecords += scan.records
        return scan
    }
}
