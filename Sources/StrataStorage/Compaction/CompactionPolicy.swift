/// The shape the leveled tree is kept in (SPEC.md §Compaction). Not stored on disk: a store
/// written with other values reads the same.
enum CompactionPolicy {
    /// Level-0 segments that make level 0 due for compaction.
    static let level0CompactionTrigger = 4
    /// Level-0 segments at which each write is delayed by `slowdownDelayMicros`. RocksDB's
    /// defaults (20 and 36), not LevelDB's (8 and 12): under a burst of writes, level 0 grows
    /// while a compaction runs, and the next one merges all of it at once, so every entry is
    /// rewritten fewer times; with 8 and 12 the writer slept instead (measured 2026-11-26 on
    /// 1M random entries in batches of 1,000: 650–757k → 961–1,043k entries/s, overwrite
    /// 363–381k → 496–554k/s, random point reads right after the load within the noise).
    static let level0SlowdownWrites = 20
    /// Level-0 segments at which writes wait for compaction.
    static let level0StopWrites = 36
    static let slowdownDelayMicros: UInt32 = 1000
    /// Target size of level 1, per key space; each deeper level is `levelSizeMultiplier` larger.
    static let level1TargetBytes: UInt64 = 10 << 20
    static let levelSizeMultiplier: UInt64 = 10
    /// Compaction output is cut into segments of about this size (at a user-key boundary).
    static let targetSegmentBytes: UInt64 = 2 << 20

    static func targetBytes(level: Int) -> UInt64 {
        var t = level1TargetBytes
        if level > 1 { for _ in 2...level { t *= levelSizeMultiplier } }
        return t
    }
}

/// One unit of compaction work: merge `inputs` (from `level`) with the overlapping `nextInputs`
/// (from `outputLevel`) into new segments at `outputLevel`.
struct CompactionJob {
    var keySpaceId: UInt32
    var level: Int
    var outputLevel: Int
    var inputs: [LiveSegment]
    var nextInputs: [LiveSegment]

    var allInputs: [LiveSegment] { inputs + nextInputs }

    /// Background jobs whose inputs overlap nothing (neither the next level nor each other)
    /// need no merge: the files move down a level in the manifest only (LevelDB's trivial
    /// move). Full compactions always rewrite, to drop obsolete versions.
    var allowsTrivialMove = true

    var isTrivialMove: Bool {
        guard allowsTrivialMove, nextInputs.isEmpty, outputLevel > level else { return false }
        let sorted = inputs.sorted { a, b in
            CompactionPicker.userKey(a.meta.smallest).lexicographicallyPrecedes(CompactionPicker.userKey(b.meta.smallest))
        }
        for (a, b) in zip(sorted, sorted.dropFirst()) {
            // Overlap if a's largest user key >= b's smallest user key.
            if !CompactionPicker.userKey(a.meta.largest).lexicographicallyPrecedes(CompactionPicker.userKey(b.meta.smallest)) {
                return false
            }
        }
        return true
    }
    var inputBytes: UInt64 { allInputs.reduce(0) { $0 + $1.meta.fileSize } }
}

enum CompactionPicker {
    /// The most urgent job by score (level 0: segments / trigger; level n: bytes / target), or
    /// nil when every score is below 1.
    static func pick(_ version: Version, cursors: [UInt32: [Int: [UInt8]]]) -> CompactionJob? {
        var best: (score: Double, ks: UInt32, level: Int)?
        for (id, ks) in version.keySpaces {
            for level in 0..<(Version.levelCount - 1) {
                let score: Double
                if level == 0 {
                    score = Double(ks.levels[0].count) / Double(CompactionPolicy.level0CompactionTrigger)
                } else {
                    let bytes = ks.levels[level].reduce(UInt64(0)) { $0 + $1.meta.fileSize }
                    score = Double(bytes) / Double(CompactionPolicy.targetBytes(level: level))
                }
                if score >= 1, score > (best?.score ?? 0) { best = (score, id, level) }
            }
        }
        guard let best, let ks = version.keySpaces[best.ks] else { return nil }
        let inputs: [LiveSegment]
        if best.level == 0 {
            inputs = ks.levels[0]
        } else {
            // Round-robin through the key range, like LevelDB's compact pointer.
            let files = ks.levels[best.level]
            let cursor = cursors[best.ks]?[best.level]
            let next = cursor.flatMap { c in
                files.first { f in f.meta.largest.withUnsafeBytes { x in c.withUnsafeBytes { InternalKey.compare(x, $0) > 0 } } }
            }
            inputs = [next ?? files[0]]
        }
        let (lo, hi) = range(of: inputs)
        let next = overlapping(ks.levels[best.level + 1], lo, hi)
        return CompactionJob(keySpaceId: best.ks, level: best.level, outputLevel: best.level + 1, inputs: inputs, nextInputs: next)
    }

    /// Smallest and largest user keys of a set of segments.
    static func range(of segments: [LiveSegment]) -> ([UInt8], [UInt8]) {
        guard let first = segments.first else { return ([], []) }
        var lo = userKey(first.meta.smallest)
        var hi = userKey(first.meta.largest)
        for s in segments.dropFirst() {
            let a = userKey(s.meta.smallest)
            if a.lexicographicallyPrecedes(lo) { lo = a }
            let b = userKey(s.meta.largest)
            if hi.lexicographicallyPrecedes(b) { hi = b }
        }
        return (lo, hi)
    }

    static func userKey(_ internalKey: [UInt8]) -> [UInt8] {
        Array(internalKey.dropLast(InternalKey.trailerBytes))
    }

    static func overlapping(_ files: [LiveSegment], _ lo: [UInt8], _ hi: [UInt8]) -> [LiveSegment] {
        files.filter { f in
            let fl = userKey(f.meta.smallest)
            let fh = userKey(f.meta.largest)
            return !(fh.lexicographicallyPrecedes(lo) || hi.lexicographicallyPrecedes(fl))
        }
    }
}
