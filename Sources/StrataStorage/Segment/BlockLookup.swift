import CStrataSupport

/// Point lookups in a block without creating an iterator: the read path of `get` runs these
/// once per segment it consults, so they allocate nothing.
extension Block {
    /// Starts loading the entries that ``dataLookup(_:)`` reads first for `target` (every
    /// restart point of a small block; the middle and quartiles of a larger one; an id block's
    /// entry), so that a batched read overlaps these memory misses across its keys.
    func prefetchForLookup(_ target: UnsafeRawBufferPointer) {
        if let idLayout { return idLayout.prefetch(for: target) }
        let base = contents.baseAddress!
        let n = restartCount
        if n <= 4 {
            for i in 0..<n { strata_prefetch(base + restartPoint(i)) }
        } else {
            strata_prefetch(base + restartPoint(n / 4))
            strata_prefetch(base + restartPoint(n / 2))
            strata_prefetch(base + restartPoint((3 * n) / 4))
        }
    }

    package enum Lookup {
        /// The first entry with internal key >= target: its key relation and its value's range.
        case entry(userKeyMatches: Bool, isDeletion: Bool, valueOffset: Int, valueCount: Int)
        case notFound
        case corrupted
        /// A key longer than the lookup buffer; the caller falls back to an iterator.
        case keyTooLong
    }

    /// Decodes the entry header at `start`: (shared, unshared, value length, offset after header).
    @inline(__always)
    private func header(at start: Int) -> (Int, Int, Int, Int)? {
        // Fast path: three one-byte varints, the usual case for short keys and values.
        if start + 3 <= restartsOffset {
            let p = contents.baseAddress! + start
            let a = p.load(as: UInt8.self), b = p.load(fromByteOffset: 1, as: UInt8.self)
            let c = p.load(fromByteOffset: 2, as: UInt8.self)
            if (a | b | c) < 0x80 {
                let shared = Int(a), unshared = Int(b), vlen = Int(c), after = start + 3
                guard unshared + vlen <= restartsOffset - after else { return nil }
                return (shared, unshared, vlen, after)
            }
        }
        var r = ByteReader(UnsafeRawBufferPointer(rebasing: contents[0..<restartsOffset]), offset: start)
        guard let shared = r.readVarintInt(limit: Int(Int32.max)), let unshared = r.readVarintInt(limit: Int(Int32.max)),
              let vlen = r.readVarintInt(limit: Int(Int32.max)),
              unshared <= restartsOffset - r.offset, vlen <= restartsOffset - r.offset - unshared
        else { return nil }
        return (shared, unshared, vlen, r.offset)
    }

    /// The key and value (a block handle) of index entry `i` (index blocks store every entry
    /// whole, as a restart point); nil when the entry is malformed.
    @inline(__always)
    func indexEntry(_ i: Int) -> (key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer)? {
        guard let (shared, unshared, vlen, p) = header(at: restartPoint(i)), shared == 0,
              unshared >= InternalKey.trailerBytes else { return nil }
        return (UnsafeRawBufferPointer(rebasing: contents[p..<(p + unshared)]),
                UnsafeRawBufferPointer(rebasing: contents[(p + unshared)..<(p + unshared + vlen)]))
    }

    /// The key of index entry `i`.
    func indexEntryKey(_ i: Int) -> UnsafeRawBufferPointer? { indexEntry(i)?.key }

    /// Index blocks (every entry a restart point, stored whole): the position of the first entry
    /// whose key is >= target (`restartCount` when every key is smaller); nil when the block is
    /// malformed. `summary`, when given, narrows the search to the entries whose key integer
    /// ties with the target's.
    package func indexPosition(_ target: UnsafeRawBufferPointer, summary: IndexSummary? = nil) -> Int? {
        var lo = 0, hi = restartCount
        if let summary {
            switch summary.candidates(for: InternalKey.userKey(target)) {
            case .afterAll: return restartCount
            case let .within(range): (lo, hi) = (range.lowerBound, range.upperBound)
            }
        }
        while lo < hi {
            let mid = (lo + hi) / 2
            guard let k = indexEntryKey(mid) else { return nil }
            if InternalKey.compare(k, target) < 0 { lo = mid + 1 } else { hi = mid }
        }
        return lo
    }

    /// The value of index entry `i` (a block handle).
    package func indexEntryValue(_ i: Int) -> UnsafeRawBufferPointer? { indexEntry(i)?.value }

    /// Data blocks: the first entry with internal key >= target.
    package func dataLookup(_ target: UnsafeRawBufferPointer) -> Lookup {
        if let idLayout { return idLayout.lookup(target) }
        // Last restart whose key is < target.
        var lo = 0, hi = restartCount - 1
        while lo < hi {
            let mid = (lo + hi + 1) / 2
            guard let (shared, unshared, _, p) = header(at: restartPoint(mid)), shared == 0,
                  unshared >= InternalKey.trailerBytes else { return .corrupted }
            let k = UnsafeRawBufferPointer(rebasing: contents[p..<(p + unshared)])
            if InternalKey.compare(k, target) < 0 { lo = mid } else { hi = mid - 1 }
        }
        if let found = scanComparingSuffixes(from: restartPoint(lo), target) { return found }
        return scanRebuildingKeys(from: restartPoint(lo), target)
    }

    /// The scan of one restart interval for the first entry >= target, without rebuilding any
    /// key: an entry's first `shared` bytes are the previous key's, so when the previous key
    /// was found below the target at byte `d`, an entry sharing more than `d` bytes is below it
    /// too (no comparison), and one sharing at most `d` bytes matches the target there, so only
    /// its own bytes are compared. The rebuilding scan cost about 90 instructions an entry (a
    /// copy and a whole comparison), most of a point read's search in a block.
    ///
    /// Nil where these shortcuts do not decide: a user key that is a proper prefix of the
    /// target's, or the same user key at a newer sequence than the read's (both need the bytes
    /// the previous key shares); ``scanRebuildingKeys(from:_:)`` answers those.
    @inline(__always)
    private func scanComparingSuffixes(from start: Int, _ target: UnsafeRawBufferPointer) -> Lookup? {
        guard target.count >= InternalKey.trailerBytes else { return nil }
        let base = contents.baseAddress!
        let targetUserCount = target.count - InternalKey.trailerBytes
        var offset = start
        var keyCount = 0
        // The previous key is below the target and first differs from it at byte `below`,
        // inside both user keys (0 before the first entry, which shares nothing).
        var below = 0
        while offset < restartsOffset {
            guard let (shared, unshared, vlen, p) = header(at: offset), shared <= keyCount,
                  shared + unshared >= InternalKey.trailerBytes else { return .corrupted }
            keyCount = shared + unshared
            offset = p + unshared + vlen
            if shared > below { continue }
            // The first `shared` bytes are the target's: compare from there.
            let userCount = keyCount - InternalKey.trailerBytes
            guard userCount >= shared else { return nil }
            let common = min(userCount, targetUserCount)
            let suffix = UnsafeRawBufferPointer(start: base + p, count: userCount - shared)
            let rest = UnsafeRawBufferPointer(start: target.baseAddress! + shared, count: targetUserCount - shared)
            let differs = shared + suffix.sharedPrefixCount(with: rest, limit: common - shared)
            if differs < common {
                if suffix[differs - shared] < rest[differs - shared] {
                    below = differs
                    continue
                }
                return .entry(userKeyMatches: false, isDeletion: false, valueOffset: p + unshared, valueCount: vlen)
            }
            if userCount > targetUserCount {
                return .entry(userKeyMatches: false, isDeletion: false, valueOffset: p + unshared, valueCount: vlen)
            }
            guard userCount == targetUserCount, unshared >= InternalKey.trailerBytes else { return nil }
            // The same user key: the entry is the one to read unless it is newer than the read.
            let trailer = loadFixed64(UnsafeRawBufferPointer(start: base + p, count: unshared), unshared - InternalKey.trailerBytes)
            guard trailer <= InternalKey.trailer(target) else { return nil }
            return .entry(userKeyMatches: true, isDeletion: trailer & 0xFF == UInt64(EntryKind.deletion.rawValue),
                          valueOffset: p + unshared, valueCount: vlen)
        }
        return .notFound
    }

    /// The scan of one restart interval for the first entry >= target, rebuilding each key in a
    /// stack buffer and comparing it whole: what ``scanComparingSuffixes(from:_:)`` leaves.
    private func scanRebuildingKeys(from start: Int, _ target: UnsafeRawBufferPointer) -> Lookup {
        let capacity = 512
        return withUnsafeTemporaryAllocation(byteCount: capacity, alignment: 8) { buffer -> Lookup in
            var offset = start
            var keyCount = 0
            while offset < restartsOffset {
                guard let (shared, unshared, vlen, p) = header(at: offset), shared <= keyCount,
                      shared + unshared >= InternalKey.trailerBytes else { return .corrupted }
                guard shared + unshared <= capacity else { return .keyTooLong }
                if unshared > 0 {
                    (buffer.baseAddress! + shared).copyMemory(from: contents.baseAddress! + p, byteCount: unshared)
                }
                keyCount = shared + unshared
                let key = UnsafeRawBufferPointer(start: buffer.baseAddress, count: keyCount)
                if InternalKey.compare(key, target) >= 0 {
                    let matches = InternalKey.userKey(key).bytesEqual(InternalKey.userKey(target))
                    let deletion = InternalKey.trailer(key) & 0xFF == UInt64(EntryKind.deletion.rawValue)
                    return .entry(userKeyMatches: matches, isDeletion: deletion, valueOffset: p + unshared, valueCount: vlen)
                }
                offset = p + unshared + vlen
            }
            return .notFound
        }
    }
}
