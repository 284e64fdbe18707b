/// A bloom filter over the user keys of one segment (SPEC.md §6.3, filter block): `bitsPerKey`
/// bits per key, k = bitsPerKey × ln 2 probes.
///
/// Segment format 2 writes the *blocked* layout: each key's probes all fall in one 64-byte
/// block chosen by its hash, so a probe costs one cache miss (the classic layout spreads a
/// key's k probes over k lines, and a key that is there pays for all of them) and no division.
/// At 10 bits per key about 1.2% of absent keys get a false "maybe" (classic: about 1%).
/// Format 1 segments keep the classic layout, still read.
///
/// Encoding: bit array (bit i in byte i/8, mask 1 << (i % 8)) | k (1 byte); blocked: the bit
/// array is a whole number of 64-byte blocks.
enum BloomFilter {
    static let blockBytes = 64
    /// 64-bit hash of a user key; stable across versions because it reaches disk.
    @inline(__always)
    static func hash(_ key: UnsafeRawBufferPointer) -> UInt64 {
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

    /// The probes' source inside a block: a remix of the hash, so that they do not depend on
    /// the bits that chose the block.
    @inline(__always)
    private static func blockProbes(_ h: UInt64) -> UInt64 { (h ^ (h >> 31)) &* 0x9E37_79B9_7F4A_7C15 }

    /// The block of `blocks` a hash falls in: the high half of hash × blocks, spread evenly.
    @inline(__always)
    private static func block(_ h: UInt64, of blocks: Int) -> Int { Int(h.multipliedFullWidth(by: UInt64(blocks)).high) }

    /// Probe j tests bit (probes rotated right by 9·j) mod 512 of the key's block: 64 distinct
    /// rotations, as 9 and 64 share no factor.
    static func buildBlocked(hashes: [UInt64], bitsPerKey: Int) -> [UInt8] {
        let k = max(1, min(30, Int(Double(bitsPerKey) * 0.69)))
        let blocks = max(1, (hashes.count * bitsPerKey + blockBytes * 8 - 1) / (blockBytes * 8))
        var out = [UInt8](repeating: 0, count: blocks * blockBytes + 1)
        out.withUnsafeMutableBytes { raw in
            for h in hashes {
                let base = block(h, of: blocks) * blockBytes
                var p = blockProbes(h)
                for _ in 0..<k {
                    let bit = Int(p & 511)
                    raw[base + (bit >> 3)] |= UInt8(1 << (bit & 7))
                    p = (p >> 9) | (p << 55)
                }
            }
        }
        out[blocks * blockBytes] = UInt8(k)
        return out
    }

    /// Whether a blocked filter may contain a key with this hash. A malformed filter answers
    /// "maybe".
    @inline(__always)
    static func mayContainBlocked(_ filter: UnsafeRawBufferPointer, hash h: UInt64) -> Bool {
        let blocks = (filter.count - 1) / blockBytes
        guard filter.count >= 2, blocks * blockBytes == filter.count - 1 else { return true }
        let k = Int(filter[filter.count - 1])
        guard k >= 1, k <= 30 else { return true }
        let base = block(h, of: blocks) * blockBytes
        var p = blockProbes(h)
        for _ in 0..<k {
            let bit = Int(p & 511)
            if filter[base + (bit >> 3)] & UInt8(1 << (bit & 7)) == 0 { return false }
            p = (p >> 9) | (p << 55)
        }
        return true
    }

    /// The classic layout (segment format 1): probe j tests bit (lo + j·hi) mod nbits.
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

    /// Whether a classic filter may contain a key with this hash. A malformed filter answers
    /// "maybe".
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
