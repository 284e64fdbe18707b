/// A bloom filter over the user keys of one segment (SPEC.md §Segment, filter block):
/// `bitsPerKey` bits per key, k = bitsPerKey × ln 2 probes by double hashing. At 10 bits per key
/// about 1% of absent keys get a false "maybe".
///
/// Encoding: bit array (bit i in byte i/8, mask 1 << (i % 8)) | k (1 byte).
///
/// Its key hash is public: the object layer's write overlay hashes keys with it too.
public enum BloomFilter {
    /// 64-bit hash of a user key; stable across versions because it reaches disk.
    @inlinable @inline(__always)
    public static func hash(_ key: UnsafeRawBufferPointer) -> UInt64 {
        var h: UInt64 = 0x9E37_79B9_7F4A_7C15 ^ UInt64(key.count)
        var i = 0
        while i + 8 <= key.count {
            h = (h ^ key.loadUnaligned(fromByteOffset: i, as: UInt64.self).littleEndian) &* 0xBF58_476D_1CE4_E5B9
            h = (h << 31) | (h >> 33)
            i += 8
        }
        var tail: UInt64 = 0
        var shift: UInt64 = 0
        while i < key.count {
            tail |= UInt64(key[i]) << shift
            shift += 8
            i += 1
        }
        h = (h ^ tail) &* 0x94D0_49BB_1331_11EB
        h ^= h >> 29
        h = h &* 0xBF58_476D_1CE4_E5B9
        h ^= h >> 32
        return h
    }

    static func build(hashes: [UInt64], bitsPerKey: Int) -> [UInt8] {
        let k = max(1, min(30, Int(Double(bitsPerKey) * 0.69)))
        let bits = max(64, hashes.count * bitsPerKey)
        let bytes = (bits + 7) / 8
        let nbits = UInt64(bytes * 8)
        var out = [UInt8](repeating: 0, count: bytes + 1)
        for h in hashes {
            var a = h & 0xFFFF_FFFF
            let b = (h >> 32) | 1
            for _ in 0..<k {
                let bit = a % nbits
                out[Int(bit >> 3)] |= UInt8(1 << (bit & 7))
                a &+= b
            }
        }
        out[bytes] = UInt8(k)
        return out
    }

    /// Whether the filter may contain a key with this hash. A malformed filter answers "maybe".
    @inline(__always)
    static func mayContain(_ filter: UnsafeRawBufferPointer, hash h: UInt64) -> Bool {
        guard filter.count >= 2 else { return true }
        let k = Int(filter[filter.count - 1])
        guard k >= 1, k <= 30 else { return true }
        let nbits = UInt64((filter.count - 1) * 8)
        var a = h & 0xFFFF_FFFF
        let b = (h >> 32) | 1
        for _ in 0..<k {
            let bit = a % nbits
            if filter[Int(bit >> 3)] & UInt8(1 << (bit & 7)) == 0 { return false }
            a &+= b
        }
        return true
    }
}
