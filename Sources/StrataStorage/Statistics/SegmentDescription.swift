/// One live segment file, as ``Engine/segments()`` lists it (for inspection tools).
///
/// ```swift
/// for s in engine.segments() where s.level == 0 { print(s.fileName, s.bytes) }
/// ```
public struct SegmentDescription: Sendable, Equatable {
    /// The key space the segment belongs to.
    public var keySpace: String
    public var level: Int
    public var fileNumber: UInt64
    /// The file's name in the store directory.
    public var fileName: String
    /// Size of the file on disk.
    public var bytes: UInt64
    /// Entries, counting tombstones and older versions.
    public var entries: UInt64
    /// Smallest and largest user key held.
    public var smallestKey: [UInt8]
    public var largestKey: [UInt8]
    /// Sequence numbers of the oldest and newest entry.
    public var minSequence: UInt64
    public var maxSequence: UInt64
}

extension Engine {
    /// The live segments of every key space (or of one), by key space, level, then key range.
    public func segments(keySpace: KeySpace? = nil) -> [SegmentDescription] {
        let version = currentView().version
        var out: [SegmentDescription] = []
        for ks in keySpace.map({ [$0] }) ?? keySpaces {
            for level in version.keySpaces[ks.id]?.levels ?? [] {
                for s in level {
                    let m = s.meta
                    out.append(SegmentDescription(
                        keySpace: ks.name, level: m.level, fileNumber: m.fileNumber,
                        fileName: StoreFile.segmentName(m.fileNumber), bytes: m.fileSize, entries: m.entryCount,
                        smallestKey: m.smallest.withUnsafeBytes { Array(InternalKey.userKey($0)) },
                        largestKey: m.largest.withUnsafeBytes { Array(InternalKey.userKey($0)) },
                        minSequence: m.minSequence, maxSequence: m.maxSequence))
                }
            }
        }
        return out
    }
}
