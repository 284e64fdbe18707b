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
        for s in addedSegments {
            w.appendVarint(Tag.addSegment.rawValue)
            w.appendVarint(UInt64(s.keySpaceId))
            w.appendVarint(s.level)
            w.appendVarint(s.fileNumber)
            w.appendVarint(s.fileSize)
            w.appendLengthPrefixed(s.smallest)
            w.appendLengthPrefixed(s.largest)
            w.appendVarint(s.minSequence)
            w.appendVarint(s.maxSequence)
            w.appendVarint(s.entryCount)
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
            case .addSegment:
                guard let ks = r.readVarint(), ks < UInt64(StorageLimits.maxKeySpaces),
                      let level = r.readVarintInt(limit: Version.levelCount - 1),
                      let number = r.readVarint(), let size = r.readVarint(),
                      let smallest = r.readLengthPrefixed(limit: keyLimit), smallest.count >= 8,
                      let largest = r.readLengthPrefixed(limit: keyLimit), largest.count >= 8,
                      let minSeq = r.readVarint(), let maxSeq = r.readVarint(), let entries = r.readVarint()
                else { return nil }
                e.addedSegments.append(SegmentMeta(keySpaceId: UInt32(ks), level: level, fileNumber: number, fileSize: size,
                                                   smallest: Array(smallest), largest: Array(largest),
                                                   minSequence: minSeq, maxSequence: maxSeq, entryCount: entries))
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
