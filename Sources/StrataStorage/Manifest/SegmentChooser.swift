/// For point reads of one key space in one ``Version``: which segments may hold a user key,
/// newest data first, found without reference counting.
///
/// The plain walk over `[[LiveSegment]]` retained and released each array, each segment it
/// looked at and each key bound it compared (`SegmentMeta`'s byte arrays): about a tenth of a
/// unique-index lookup's time went to those atomic counts. Here every segment's user-key bounds
/// are copied once into one buffer, the segments are held unretained beside them (the version
/// that owns this chooser keeps them alive), and a lookup reads only plain memory.
final class SegmentChooser: @unchecked Sendable {
    // @unchecked Sendable: immutable after init; the unretained segments are kept alive by the
    // version that owns the chooser.
    // @unchecked: immutable after init; the buffers are only read.

    /// One segment: where its smallest and largest user keys are in `keyBytes`, and the
    /// segment, unretained.
    private struct Entry {
        var smallestOffset: Int
        var smallestCount: Int
        var largestOffset: Int
        var largestCount: Int
        var segment: Unmanaged<LiveSegment>
    }

    /// Level 0's segments (newest first, may overlap), then each deeper level's in key order.
    private let entries: UnsafeMutableBufferPointer<Entry>
    /// Level 0's entries: `0 ..< level0Count`.
    private let level0Count: Int
    /// The entry ranges of the non-empty levels below 0, in level order.
    private let deeperLevels: UnsafeMutableBufferPointer<Range<Int>>
    private let keyBytes: UnsafeMutableRawBufferPointer
    /// The segments, retained for as long as the chooser lives (the version holds them too).
    private let retained: [LiveSegment]

    init(levels: [[LiveSegment]]) {
        var segments: [LiveSegment] = []
        var ranges: [Range<Int>] = []
        var bytes = 0
        for (level, segs) in levels.enumerated() {
            if level > 0 && !segs.isEmpty { ranges.append(segments.count..<(segments.count + segs.count)) }
            segments.append(contentsOf: segs)
            for s in segs {
                bytes += Self.userKeyCount(s.meta.smallest) + Self.userKeyCount(s.meta.largest)
            }
        }
        let keys = UnsafeMutableRawBufferPointer.allocate(byteCount: max(1, bytes), alignment: 8)
        let table = UnsafeMutableBufferPointer<Entry>.allocate(capacity: max(1, segments.count))
        var at = 0
        func copy(_ internalKey: [UInt8]) -> (Int, Int) {
            let n = Self.userKeyCount(internalKey)
            internalKey.withUnsafeBytes { src in
                if n > 0 { (keys.baseAddress! + at).copyMemory(from: src.baseAddress!, byteCount: n) }
            }
            defer { at += n }
            return (at, n)
        }
        for (i, s) in segments.enumerated() {
            let (so, sc) = copy(s.meta.smallest)
            let (lo, lc) = copy(s.meta.largest)
            (table.baseAddress! + i).initialize(to: Entry(smallestOffset: so, smallestCount: sc, largestOffset: lo,
                                                          largestCount: lc, segment: .passUnretained(s)))
        }
        keyBytes = keys
        entries = table
        level0Count = levels.first?.count ?? 0
        retained = segments
        deeperLevels = .allocate(capacity: max(1, ranges.count))
        _ = deeperLevels.initialize(from: ranges)
        deeperCount = ranges.count
    }

    private let deeperCount: Int

    /// The user key's length within an internal key (the manifest checks that every bound
    /// has its trailer; a shorter one counts as empty rather than trapping).
    private static func userKeyCount(_ internalKey: [UInt8]) -> Int {
        max(0, internalKey.count - InternalKey.trailerBytes)
    }

    deinit {
        entries.deallocate()
        deeperLevels.deallocate()
        keyBytes.deallocate()
    }

    @inline(__always)
    private func key(_ offset: Int, _ count: Int) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: keyBytes.baseAddress! + offset, count: count)
    }

    @inline(__always)
    private func covers(_ e: Entry, _ userKey: UnsafeRawBufferPointer) -> Bool {
        InternalKey.compareUserKeys(userKey, key(e.smallestOffset, e.smallestCount)) >= 0
            && InternalKey.compareUserKeys(userKey, key(e.largestOffset, e.largestCount)) <= 0
    }

    /// Calls `body` with each segment that may hold `userKey`, newest data first, until it
    /// returns true.
    @inline(__always)
    func candidates(for userKey: UnsafeRawBufferPointer, _ body: (LiveSegment) throws -> Bool) rethrows {
        for i in 0..<level0Count {
            let e = entries[i]
            if covers(e, userKey), try e.segment._withUnsafeGuaranteedRef({ try body($0) }) { return }
        }
        for l in 0..<deeperCount {
            let range = deeperLevels[l]
            // The first segment whose largest key is >= userKey.
            var lo = range.lowerBound, hi = range.upperBound
            while lo < hi {
                let mid = (lo + hi) / 2
                let e = entries[mid]
                if InternalKey.compareUserKeys(key(e.largestOffset, e.largestCount), userKey) < 0 { lo = mid + 1 } else { hi = mid }
            }
            if lo < range.upperBound {
                let e = entries[lo]
                if covers(e, userKey), try e.segment._withUnsafeGuaranteedRef({ try body($0) }) { return }
            }
        }
    }
}
