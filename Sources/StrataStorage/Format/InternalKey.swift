#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Internal keys: the user key followed by an 8-byte little-endian trailer
/// `sequence << 8 | kind` (SPEC.md §Key encoding). Ordered by user key ascending (bytewise), then
/// trailer descending, so that the newest version of a key comes first.
package enum InternalKey {
    static let trailerBytes = 8

    @inline(__always)
    static func trailer(sequence: UInt64, kind: EntryKind) -> UInt64 {
        (sequence << 8) | UInt64(kind.rawValue)
    }

    /// The trailer to seek with: finds the newest entry whose sequence is at most `sequence`.
    @inline(__always)
    package static func seekTrailer(sequence: UInt64) -> UInt64 {
        (sequence << 8) | UInt64(EntryKind.value.rawValue)
    }

    @inline(__always)
    package static func userKey(_ internalKey: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: internalKey[0..<(internalKey.count - trailerBytes)])
    }

    @inline(__always)
    static func trailer(_ internalKey: UnsafeRawBufferPointer) -> UInt64 {
        loadFixed64(internalKey, internalKey.count - trailerBytes)
    }

    /// Bytewise comparison of user keys: negative, zero or positive.
    @inline(__always)
    static func compareUserKeys(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Int {
        let n = min(a.count, b.count)
        // Word-at-a-time for the short keys that dominate (a libc call costs more than the
        // comparison); big-endian loads keep bytewise order.
        var i = 0
        while i + 8 <= n {
            let x = UInt64(bigEndian: a.loadUnaligned(fromByteOffset: i, as: UInt64.self))
            let y = UInt64(bigEndian: b.loadUnaligned(fromByteOffset: i, as: UInt64.self))
            if x != y { return x < y ? -1 : 1 }
            i += 8
        }
        if i < n {
            if n >= 8 {
                // The last word, overlapping the bytes already found equal: its first
                // difference is past them, so the word's order is the keys' order.
                let x = UInt64(bigEndian: a.loadUnaligned(fromByteOffset: n - 8, as: UInt64.self))
                let y = UInt64(bigEndian: b.loadUnaligned(fromByteOffset: n - 8, as: UInt64.self))
                if x != y { return x < y ? -1 : 1 }
            } else {
                while i < n {
                    let x = a[i], y = b[i]
                    if x != y { return x < y ? -1 : 1 }
                    i += 1
                }
            }
        }
        return a.count - b.count
    }

    /// Internal-key order: user key ascending, then trailer descending.
    @inline(__always)
    static func compare(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Int {
        let r = compareUserKeys(userKey(a), userKey(b))
        if r != 0 { return r }
        let ta = trailer(a), tb = trailer(b)
        return ta > tb ? -1 : (ta < tb ? 1 : 0)
    }
}

extension UnsafeRawBufferPointer {
    /// Bytewise equality.
    @inline(__always)
    func bytesEqual(_ other: UnsafeRawBufferPointer) -> Bool {
        count == other.count && (count == 0 || memcmp(baseAddress!, other.baseAddress!, count) == 0)
    }

    /// How many leading bytes this and `other` share, up to `limit` (at most either's length):
    /// a word at a time, the first differing byte found from the words' XOR. The prefix
    /// compression of blocks, the index summary's common prefixes and a block's point lookup
    /// all ask it of short keys, where a libc call costs more than the loop.
    @inline(__always)
    func sharedPrefixCount(with other: UnsafeRawBufferPointer, limit: Int) -> Int {
        // Little-endian values: the first byte in memory is the lowest, so the lowest set bit of
        // the XOR is in the first byte that differs.
        @inline(__always) func difference(at offset: Int) -> UInt64 {
            UInt64(littleEndian: loadUnaligned(fromByteOffset: offset, as: UInt64.self))
                ^ UInt64(littleEndian: other.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
        }
        var n = 0
        while n + 8 <= limit {
            let x = difference(at: n)
            if x != 0 { return n + x.trailingZeroBitCount / 8 }
            n += 8
        }
        guard n < limit else { return n }
        if limit >= 8 {
            // The last word, overlapping bytes already found equal: its first difference is
            // past them.
            let x = difference(at: limit - 8)
            return x == 0 ? limit : limit - 8 + x.trailingZeroBitCount / 8
        }
        while n < limit && self[n] == other[n] { n += 1 }
        return n
    }
}
