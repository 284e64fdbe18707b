/// Point lookups in a block without creating an iterator: the read path of `get` runs these
/// once per segment it consults, so they allocate nothing.
extension Block {
    enum Lookup {
        /// The first entry with internal key >= target: its key relation and its value's range.
        case entry(userKeyMatches: Bool, isDeletion: Bool, valueOffset: Int, valueCount: Int)
        case notFound
        case corrupted
        /// A key longer than the lookup buffer; the caller falls back to an iterator.
        case keyTooLong
    }

    /// Decodes the entry header at `p`: (shared, unshared, value length, offset after header).
    @inline(__always)
    private func header(at start: Int) -> (Int, Int, Int, Int)? {
        var r = ByteReader(UnsafeRawBufferPointer(rebasing: contents[0..<restartsOffset]), offset: start)
        guard let shared = r.readVarintInt(limit: Int(Int32.max)), let unshared = r.readVarintInt(limit: Int(Int32.max)),
              let vlen = r.readVarintInt(limit: Int(Int32.max)),
              unshared <= restartsOffset - r.offset, vlen <= restartsOffset - r.offset - unshared
        else { return nil }
        return (shared, unshared, vlen, r.offset)
    }

    /// Index blocks (every entry a restart point, stored whole): the value of the first entry
    /// whose key is >= target, nil when every key is smaller.
    func indexLookup(_ target: UnsafeRawBufferPointer) -> Lookup {
        var lo = 0, hi = restartCount
        while lo < hi {
            let mid = (lo + hi) / 2
            guard let (shared, unshared, _, p) = header(at: restartPoint(mid)), shared == 0,
                  unshared >= InternalKey.trailerBytes else { return .corrupted }
            let k = UnsafeRawBufferPointer(rebasing: contents[p..<(p + unshared)])
            if InternalKey.compare(k, target) < 0 { lo = mid + 1 } else { hi = mid }
        }
        guard lo < restartCount else { return .notFound }
        guard let (_, unshared, vlen, p) = header(at: restartPoint(lo)) else { return .corrupted }
        return .entry(userKeyMatches: false, isDeletion: false, valueOffset: p + unshared, valueCount: vlen)
    }

    /// Data blocks: the first entry with internal key >= target.
    func dataLookup(_ target: UnsafeRawBufferPointer) -> Lookup {
        // Last restart whose key is < target.
        var lo = 0, hi = restartCount - 1
        while lo < hi {
            let mid = (lo + hi + 1) / 2
            guard let (shared, unshared, _, p) = header(at: restartPoint(mid)), shared == 0,
                  unshared >= InternalKey.trailerBytes else { return .corrupted }
            let k = UnsafeRawBufferPointer(rebasing: contents[p..<(p + unshared)])
            if InternalKey.compare(k, target) < 0 { lo = mid } else { hi = mid - 1 }
        }
        let capacity = 512
        return withUnsafeTemporaryAllocation(byteCount: capacity, alignment: 8) { buffer -> Lookup in
            var offset = restartPoint(lo)
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
