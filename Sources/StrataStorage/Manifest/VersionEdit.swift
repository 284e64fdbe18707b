/// Metadata of one live segment, as recorded in the manifest.
struct SegmentMeta: Equatable, Sendable {
    var keySpaceId: UInt32
    var level: Int
    var fileNumber: UInt64
    var fileSize: UInt64
    /// Smallest and largest internal keys.
    var smallest: [UInt8]
    var largest: [UInt8]
    var minSequence: UInt64
    var maxSequence: UInt64
    var entryCount: UInt64
    /// A random id given at creation (store format 3; 0 for a segment an older build wrote):
    /// with the store id, what names the segment in an archive (SPEC.md §3.3), so that two
    /// copies of a store that go on writing never ship different bytes under one name.
    var uid: UInt64 = 0

    /// A new segment's ``uid``: random, never 0.
    static func newUid() -> UInt64 { UInt64.random(in: 1...UInt64.max) }
}

/// Which open of the store (its archive generation, SPEC.md §3.3) wrote the WALs from
/// `firstWal` on: kept in the manifest so that the next open ships a WAL the archive lacks
/// under the generation it belongs to, instead of deleting it.
struct ArchiveLogOwner: Equatable, Sendable {
    var firstWal: UInt64
    var generation: UInt64
}

/// One manifest record: a change to the set of live files and counters (SPEC.md §Manifest).
/// Fields are tagged; tags are frozen (never renumber, retired tags stay reserved).
package struct VersionEdit: Equatable {
    enum Tag: UInt64 {
        case formatVersion = 1
        case logNumber = 2
        case nextFileNumber = 3
        case lastSequence = 4
        case addKeySpace = 5
        case addSegment = 6
        case deleteSegment = 7
        /// Store format 3 on.
        case storeId = 8
        case archiveLogOwners = 9
        case addSegmentWithUid = 10
    }

    struct Deletion: Equatable {
        var keySpaceId: UInt32
        var level: Int
        var fileNumber: UInt64
    }

    var formatVersion: UInt32?
    var logNumber: UInt64?
    var nextFileNumber: UInt64?
    var lastSequence: UInt64?
    var addedKeySpaces: [KeySpace] = []
    var addedSegments: [SegmentMeta] = []
    var deletedSegments: [Deletion] = []
    /// The store's identity (store format 3): random, never 0, set when the store is created
    /// (or at the first writable open of an older store) and kept by its backups and restores.
    var storeId: UInt64?
    /// When present, replaces the list of WAL owners (``ArchiveLogOwner``), oldest first.
    var archiveLogOwners: [ArchiveLogOwner]?

    func encode() -> [UInt8] {
        var w = ByteWriter(capacity: 256)
        if let v = formatVersion { w.appendVarint(Tag.formatVersion.rawValue); w.appendVarint(UInt64(v)) }
        if let v = logNumber { w.appendVarint(Tag.logNumber.rawValue); w.appendVarint(v) }
        if let v = nextFileNumber { w.appendVarint(Tag.nextFileNumber.rawValue); w.appendVarint(v) }
        if let v = lastSequence { w.appendVarint(Tag.lastSequence.rawValue); w.appendVarint(v) }
        for ks in addedKeySpaces {
            w.appendVarint(Tag.addKeySpace.rawValue)
            w.appendVarint(UInt64(ks.id))
            w.appendLengthPrefixed(Array(ks.name.utf8))
        }
        if let v = storeId { w.appendVarint(Tag.storeId.rawValue); w.appendVarint(v) }
        if let owners = archiveLogOwners {
            w.appendVarint(Tag.archiveLogOwners.rawValue)
            w.appendVarint(UInt64(owners.count))
            for o in owners {
                w.appendVarint(o.firstWal)
                w.appendVarint(o.generation)
            }
        }
        for s in addedSegments {
            // A segment with a uid needs store format 3's tag; one without keeps tag 6, which
            // every build reads.
            w.appendVarint(s.uid == 0 ? Tag.addSegment.rawValue : Tag.addSegmentWithUid.rawValue)
            w.appendVarint(UInt64(s.keySpaceId))
            w.appendVarint(s.level)
            w.appendVarint(s.fileNumber)
            w.appendVarint(s.fileSize)
            w.appendLengthPrefixed(s.smallest)
            w.appendLengthPrefixed(s.largest)
            w.appendVarint(s.minSequence)
            w.appendVarint(s.maxSequence)
            w.appendVarint(s.entryCount)
            if s.uid != 0 { w.appendVarint(s.uid) }
        }
        for d in deletedSegments {
            w.appendVarint(Tag.deleteSegment.rawValue)
            w.appendVarint(UInt64(d.keySpaceId))
            w.appendVarint(d.level)
            w.appendVarint(d.fileNumber)
        }
        return w.bytes
    }

    /// Decodes an edit; nil when malformed or when it holds a tag this build does not know.
    package static func decode(_ raw: UnsafeRawBufferPointer) -> VersionEdit? {
        var r = ByteReader(raw)
        var e = VersionEdit()
        let keyLimit = StorageLimits.maxKeyBytes + InternalKey.trailerBytes
        while !r.isAtEnd {
            guard let tagValue = r.readVarint(), let tag = Tag(rawValue: tagValue) else { return nil }
            switch tag {
            case .formatVersion:
                guard let v = r.readVarint(), v <= UInt64(UInt32.max) else { return nil }
                e.formatVersion = UInt32(v)
            case .logNumber:
                guard let v = r.readVarint() else { return nil }
                e.logNumber = v
            case .nextFileNumber:
                guard let v = r.readVarint() else { return nil }
                e.nextFileNumber = v
            case .lastSequence:
                guard let v = r.readVarint() else { return nil }
                e.lastSequence = v
            case .addKeySpace:
                guard let id = r.readVarint(), id < UInt64(StorageLimits.maxKeySpaces),
                      let name = r.readLengthPrefixed(limit: StorageLimits.maxKeySpaceNameBytes)
                else { return nil }
                e.addedKeySpaces.append(KeySpace(id: UInt32(id), name: String(decoding: name, as: UTF8.self)))
            case .storeId:
                guard let v = r.readVarint(), v != 0 else { return nil }
                e.storeId = v
            case .archiveLogOwners:
                // Each owner takes at least two bytes: a count past that is damage, refused
                // before anything is reserved.
                guard let count = r.readVarint(), count <= UInt64(r.remaining / 2) else { return nil }
                var owners: [ArchiveLogOwner] = []
                for _ in 0..<count {
                    guard let first = r.readVarint(), first <= FormatConstants.maxFileNumber,
                          let generation = r.readVarint(), generation != 0 else { return nil }
                    owners.append(ArchiveLogOwner(firstWal: first, generation: generation))
                }
                e.archiveLogOwners = owners
            case .addSegment, .addSegmentWithUid:
                guard let ks = r.readVarint(), ks < UInt64(StorageLimits.maxKeySpaces),
                      let level = r.readVarintInt(limit: Version.levelCount - 1),
                      let number = r.readVarint(), let size = r.readVarint(),
                      let smallest = r.readLengthPrefixed(limit: keyLimit), smallest.count >= 8,
                      let largest = r.readLengthPrefixed(limit: keyLimit), largest.count >= 8,
                      let minSeq = r.readVarint(), let maxSeq = r.readVarint(), let entries = r.readVarint()
                else { return nil }
                var uid: UInt64 = 0
                if tag == .addSegmentWithUid {
                    guard let v = r.readVarint(), v != 0 else { return nil }
                    uid = v
                }
                e.addedSegments.append(SegmentMeta(keySpaceId: UInt32(ks), level: level, fileNumber: number, fileSize: size,
                                                   smallest: Array(smallest), largest: Array(largest),
                                                   minSequence: minSeq, maxSequence: maxSeq, entryCount: entries, uid: uid))
            case .deleteSegment:
                guard let ks = r.readVarint(), ks < UInt64(StorageLimits.maxKeySpaces),
                      let level = r.readVarintInt(limit: Version.levelCount - 1),
                      let number = r.readVarint()
                else { return nil }
                e.deletedSegments.append(Deletion(keySpaceId: UInt32(ks), level: level, fileNumber: number))
            }
        }
        return e
    }
}
