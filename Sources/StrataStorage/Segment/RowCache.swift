/// What segments answered for single keys, by (segment, user key): RocksDB's `row_cache`. A hit
/// replaces the segment's index search, block cache lookup and block search (2.4 k of the 3.9 k
/// instructions of a point read, `Benchmarks/RESULTS.md`) with one hash probe. Segments never
/// change, so an entry never goes stale; those of a deleted segment age out by LRU eviction.
///
/// An entry is the newest entry the segment holds for the key, so only reads whose sequence is
/// at or above the segment's largest one may use it (every read of the latest state; an older
/// snapshot goes to the segment).
///
/// Admission: a key enters on its second miss within a while, not its first (a doorkeeper
/// bitset, as TinyLFU's). A key read once, like most of a random scan of a large table, then
/// costs one bit instead of an allocation, a copy and an eviction.
final class RowCache: Sendable {
    private let rows: ShardedCache
    private let doorkeeper: [LockedValue<Doorkeeper>]
    let capacityBytes: Int

    /// Keys and values longer than these are not cached: they would take a large share of the
    /// cache for one key, and their reads are dominated by copying anyway.
    static let maxKeyBytes = 256
    static let maxValueBytes = 4096

    init(capacityBytes: Int) {
        self.capacityBytes = capacityBytes
        rows = ShardedCache(capacityBytes: capacityBytes)
        // About four bits per row the cache can hold (rows of ~100 bytes with their overhead).
        let bits = max(1 << 12, min(1 << 24, capacityBytes / 25))
        doorkeeper = (0..<Self.doorkeeperShards).map { _ in LockedValue(Doorkeeper(bits: bits / Self.doorkeeperShards)) }
    }

    private static var doorkeeperShards: Int { 16 }

    /// The cached answer of segment `segmentId` for `key` (whose ``BloomFilter/hash(_:)`` is
    /// `hash`), if any.
    func get(segmentId: UInt64, key: UnsafeRawBufferPointer, hash: UInt64) -> Row? {
        // Only rows are inserted.
        guard let found = rows.get(ShardedCache.Key(segmentId: segmentId, offset: hash)) else { return nil }
        let row = unsafeDowncast(found, to: Row.self)
        return row.holds(key) ? row : nil
    }

    /// Offers what segment `segmentId` answered for `key`: a value (`value` non-nil) or a
    /// deletion. Cached on the key's second offer since the doorkeeper last forgot.
    func offer(segmentId: UInt64, key: UnsafeRawBufferPointer, hash: UInt64, value: UnsafeRawBufferPointer?) {
        guard key.count <= Self.maxKeyBytes, (value?.count ?? 0) <= Self.maxValueBytes else { return }
        let mixed = hash ^ (segmentId &* 0x9E37_79B9_7F4A_7C15)
        let shard = Int(truncatingIfNeeded: (mixed >> 59) & UInt64(Self.doorkeeperShards - 1))
        guard doorkeeper[shard].withLock({ $0.admits(mixed) }) else { return }
        rows.insert(ShardedCache.Key(segmentId: segmentId, offset: hash), Row.make(key: key, value: value))
    }

    var usageBytes: Int { rows.usageBytes }

    /// One bit per hash slot: set at a key's first offer, found at its second. Cleared whole
    /// when half its bits are set, so that it remembers recent offers only.
    private struct Doorkeeper {
        var words: [UInt64]
        var setBits = 0

        init(bits: Int) { words = [UInt64](repeating: 0, count: max(1, bits / 64)) }

        /// Whether the key was offered since the last clear; notes it if not.
        mutating func admits(_ mixed: UInt64) -> Bool {
            let bit = Int(truncatingIfNeeded: mixed % UInt64(words.count * 64))
            let mask: UInt64 = 1 << UInt64(bit & 63)
            if words[bit >> 6] & mask != 0 { return true }
            words[bit >> 6] |= mask
            setBits += 1
            if setBits * 2 >= words.count * 64 {
                for i in words.indices { words[i] = 0 }
                setBits = 0
            }
            return false
        }
    }
}

/// One cached answer: the user key and the value, or a deletion, in one buffer. Immutable.
final class Row: CachedObject, @unchecked Sendable {
    private let storage: UnsafeMutableRawBufferPointer
    private let keyCount: Int
    /// -1 for a deletion.
    private let valueCount: Int

    static func make(key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer?) -> Row {
        Row(key: key, value: value)
    }

    private init(key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer?) {
        keyCount = key.count
        valueCount = value?.count ?? -1
        storage = .allocate(byteCount: max(1, key.count + (value?.count ?? 0)), alignment: 8)
        if key.count > 0 { storage.baseAddress!.copyMemory(from: key.baseAddress!, byteCount: key.count) }
        if let value, value.count > 0 { (storage.baseAddress! + key.count).copyMemory(from: value.baseAddress!, byteCount: value.count) }
    }

    deinit { storage.deallocate() }

    /// Whether this is the row of `key` (the cache finds rows by hash).
    func holds(_ key: UnsafeRawBufferPointer) -> Bool {
        keyCount == key.count && UnsafeRawBufferPointer(start: storage.baseAddress, count: keyCount).bytesEqual(key)
    }

    var isDeletion: Bool { valueCount < 0 }

    /// The value's bytes, valid while this row is alive. Empty for a deletion.
    var value: UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: storage.baseAddress! + keyCount, count: max(0, valueCount))
    }

    var charge: Int { storage.count + 96 }
    var prefetchAddress: UnsafeRawPointer? { nil }
}
