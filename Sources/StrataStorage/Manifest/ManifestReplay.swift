/// The state a manifest's records describe (SPEC.md §4), folded record by record with every
/// check the engine makes: recovery and the verifier both replay a manifest through this, so
/// that a manifest the engine refuses never verifies clean.
struct ManifestReplay {
    var formatVersion: UInt32?
    var logNumber: UInt64 = 0
    var nextFileNumber: UInt64 = 0
    var lastSequence: UInt64 = 0
    var keySpaces: [UInt32: KeySpace] = [:]
    var segments: [UInt64: SegmentMeta] = [:]
    /// The store's id (0 for a store an older build made, until its first writable open).
    var storeId: UInt64 = 0
    var archiveLogOwners: [ArchiveLogOwner] = []
    /// Valid records applied.
    var records = 0

    /// Applies one record at `offset` of the manifest at `path`; throws what the engine refuses.
    mutating func apply(_ payload: UnsafeRawBufferPointer, offset: Int, path: String) throws {
        guard let edit = VersionEdit.decode(payload) else {
            throw StorageError.corruption(file: path, offset: UInt64(offset), reason: "malformed manifest record")
        }
        if let v = edit.formatVersion {
            guard v <= FormatConstants.storeFormatVersion else {
                throw StorageError.unsupportedFormatVersion(file: path, found: v, supported: FormatConstants.storeFormatVersion)
            }
            formatVersion = v
        }
        // Numbers are range-checked before anything adds to them.
        let numbers = [edit.logNumber, edit.nextFileNumber].compactMap { $0 } + edit.addedSegments.map(\.fileNumber)
            + edit.deletedSegments.map(\.fileNumber)
        guard numbers.allSatisfy({ $0 <= FormatConstants.maxFileNumber }), (edit.lastSequence ?? 0) <= StorageLimits.maxSequence else {
            throw StorageError.corruption(file: path, offset: UInt64(offset), reason: "manifest record with a number past the limit")
        }
        if let v = edit.logNumber { logNumber = v }
        if let v = edit.nextFileNumber { nextFileNumber = max(nextFileNumber, v) }
        if let v = edit.lastSequence { lastSequence = max(lastSequence, v) }
        for ks in edit.addedKeySpaces { keySpaces[ks.id] = ks }
        if let v = edit.storeId { storeId = v }
        if let v = edit.archiveLogOwners { archiveLogOwners = v }
        for d in edit.deletedSegments { segments[d.fileNumber] = nil }
        for m in edit.addedSegments { segments[m.fileNumber] = m }
        records += 1
    }

    /// The whole state's checks, once every record is applied; returns the key spaces in id
    /// order. Key spaces are numbered densely from 0, `default` first, and named once (SPEC.md
    /// §4): the engine sizes its tables by their count and hands out the next id as that count.
    func finish(path: String) throws -> [KeySpace] {
        guard formatVersion != nil else {
            throw StorageError.corruption(file: path, offset: 0, reason: "manifest has no format version record")
        }
        let spaces = keySpaces.values.sorted { $0.id < $1.id }
        let names = Set(spaces.map(\.name))
        guard !spaces.isEmpty, spaces.count <= StorageLimits.maxKeySpaces,
              spaces.enumerated().allSatisfy({ $0.offset == Int($0.element.id) }),
              spaces[0].name == "default", names.count == spaces.count else {
            throw StorageError.corruption(file: path, offset: 0,
                                          reason: "manifest key spaces are not numbered 0, 1, … from default with distinct names")
        }
        for m in segments.values where keySpaces[m.keySpaceId] == nil {
            throw StorageError.corruption(file: path, offset: 0, reason: "segment \(m.fileNumber) belongs to unknown key space \(m.keySpaceId)")
        }
        return spaces
    }

    /// Replays the manifest in `file`: the folded state and how its log ended.
    /// `sealer`: the manifest's own, when the store is encrypted (for appends to it).
    static func read(_ file: any ReadableFile, path: String, cipher: StoreCipher?) throws
        -> (replay: ManifestReplay, outcome: LogReader.Outcome, sealer: FileSealer?) {
        var replay = ManifestReplay()
        let reader = LogReader(file: file, path: path, allowsMarks: false, encryption: cipher.map { .file($0) } ?? .none)
        let outcome = try reader.forEachRecord { record in
            try replay.apply(record.payload, offset: record.offset, path: path)
        }
        return (replay, outcome, reader.sealer)
    }
}
