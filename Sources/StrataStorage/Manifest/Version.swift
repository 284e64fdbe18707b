import Synchronization

/// A live segment: its manifest record and its open reader. Shared by every ``Version`` that
/// lists it; readers and iterators keep it (and so its file handle) alive while they use it.
///
/// When compaction replaces a segment it is marked obsolete; its file is deleted when the last
/// version, iterator or snapshot view that lists it goes away (reference counting by ARC).
final class LiveSegment: Sendable {
    let meta: SegmentMeta
    let reader: SegmentReader
    private let obsolete = Atomic<Bool>(false)

    init(meta: SegmentMeta, reader: SegmentReader) {
        self.meta = meta
        self.reader = reader
    }

    func markObsolete() { obsolete.store(true, ordering: .releasing) }

    deinit {
        if obsolete.load(ordering: .acquiring) { reader.deleteFile() }
    }

    /// Whether the segment's key range meets the user keys `lowerBound..<upperBound` (nil: open).
    func overlaps(lowerBound: [UInt8]?, upperBound: [UInt8]?) -> Bool {
        !endsBefore(lowerBound) && !startsAtOrAfter(upperBound)
    }

    private func endsBefore(_ lowerBound: [UInt8]?) -> Bool {
        guard let lowerBound else { return false }
        return lowerBound.withUnsafeBytes { endsBefore($0) }
    }

    /// Whether every key of the segment is below the user key `userKey`.
    func endsBefore(_ userKey: UnsafeRawBufferPointer) -> Bool {
        meta.largest.withUnsafeBytes { InternalKey.compareUserKeys(InternalKey.userKey($0), userKey) < 0 }
    }

    private func startsAtOrAfter(_ upperBound: [UInt8]?) -> Bool {
        guard let upperBound else { return false }
        return meta.smallest.withUnsafeBytes { smallest in
            upperBound.withUnsafeBytes { InternalKey.compareUserKeys(InternalKey.userKey(smallest), $0) >= 0 }
        }
    }

    /// The positions in `level` (sorted by key, not overlapping: a level ≥ 1) of the segments
    /// that meet the user keys `lowerBound..<upperBound`, found by binary search.
    static func overlapping(_ level: [LiveSegment], lowerBound: [UInt8]?, upperBound: [UInt8]?) -> Range<Int> {
        var lo = 0, hi = level.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if level[mid].endsBefore(lowerBound) { lo = mid + 1 } else { hi = mid }
        }
        let first = lo
        hi = level.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if level[mid].startsAtOrAfter(upperBound) { hi = mid } else { lo = mid + 1 }
        }
        return first..<lo
    }

    /// Whether `userKey` lies within the segment's key range.
    func covers(_ userKey: UnsafeRawBufferPointer) -> Bool {
        meta.smallest.withUnsafeBytes { InternalKey.compareUserKeys(userKey, InternalKey.userKey($0)) >= 0 }
            && meta.largest.withUnsafeBytes { InternalKey.compareUserKeys(userKey, InternalKey.userKey($0)) <= 0 }
    }
}

/// The segments of one key space, per level. Level 0 is ordered newest first and its segments
/// may overlap; deeper levels are ordered by key and do not overlap.
struct KeySpaceLevels: Sendable {
    var levels: [[LiveSegment]] = Array(repeating: [], count: Version.levelCount)
}

/// An immutable view of the live segments of every key space. A new Version is made for every
/// manifest edit; readers hold the one they started with.
final class Version: Sendable {
    static let levelCount = 7

    let keySpaces: [UInt32: KeySpaceLevels]
    /// For point reads: each key space's levels by key space id (``KeySpaceTable``), and which
    /// levels hold any segment, so that a lookup neither hashes the id nor walks empty levels (a
    /// fresh store's point misses paid both on every read).
    private let pointLookup: KeySpaceTable<SegmentChooser>

    init(keySpaces: [UInt32: KeySpaceLevels]) {
        self.keySpaces = keySpaces
        pointLookup = KeySpaceTable(keySpaces.mapValues { SegmentChooser(levels: $0.levels) })
    }

    /// The segments that may hold `userKey`, newest data first.
    @inline(__always)
    func candidates(for userKey: UnsafeRawBufferPointer, in keySpaceId: UInt32, _ body: (LiveSegment) throws -> Bool) rethrows {
        guard let chooser = pointLookup[keySpaceId] else { return }
        try chooser.candidates(for: userKey, body)
    }

    var allSegments: [LiveSegment] {
        keySpaces.values.flatMap { $0.levels.flatMap { $0 } }
    }

    /// A new version with `edit` applied; `open` gives the reader of an added segment.
    func applying(_ edit: VersionEdit, open: (SegmentMeta) throws -> SegmentReader) throws -> Version {
        var spaces = keySpaces
        for ks in edit.addedKeySpaces where spaces[ks.id] == nil { spaces[ks.id] = KeySpaceLevels() }
        for d in edit.deletedSegments {
            spaces[d.keySpaceId]?.levels[d.level].removeAll { $0.meta.fileNumber == d.fileNumber }
        }
        for m in edit.addedSegments {
            let live = LiveSegment(meta: m, reader: try open(m))
            spaces[m.keySpaceId, default: KeySpaceLevels()].levels[m.level].append(live)
        }
        for id in spaces.keys {
            spaces[id]!.levels[0].sort { $0.meta.maxSequence > $1.meta.maxSequence }
            for level in 1..<Version.levelCount {
                spaces[id]!.levels[level].sort { a, b in
                    a.meta.smallest.withUnsafeBytes { x in b.meta.smallest.withUnsafeBytes { y in InternalKey.compare(x, y) < 0 } }
                }
            }
        }
        return Version(keySpaces: spaces)
    }
}
