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

    /// A new version with `edit` applied; `segment` gives the live segment of an added record.
    func applying(_ edit: VersionEdit, segment: (SegmentMeta) throws -> LiveSegment) throws -> Version {
        var spaces = keySpaces
        for ks in edit.addedKeySpaces where spaces[ks.id] == nil { spaces[ks.id] = KeySpaceLevels() }
        for d in edit.deletedSegments {
            spaces[d.keySpaceId]?.levels[d.level].removeAll { $0.meta.fileNumber == d.fileNumber }
        }
        for m in edit.addedSegments {
            let live = try segment(m)
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
