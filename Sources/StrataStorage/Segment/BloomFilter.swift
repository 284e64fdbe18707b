/// A bloom filter over the user keys of one segment (SPEC.md §6.3): `bitsPerKey` bits per key,
/// k = bitsPerKey × 0.69 probes. At 10 bits per key about 1% of absent keys get a false "maybe".
///
/// Two layouts, chosen by the segment's format version:
/// - ``Layout/spread`` (segment formats 1 and 2): the probes of a key fall anywhere in the bit
///   array, by double hashing. A key the segment holds costs k cache misses to confirm.
/// - ``Layout/cacheLine`` (format 3): the array is made of 64-byte lines; a key's probes all fall
///   in the one line its hash picks, so a probe costs one cache miss, whatever k is (RocksDB's
///   cache-local bloom makes the same trade: a slightly higher false-positive rate for one
///   memory access).
///
/// Encoding: bit array (bit i in byte i/8, mask 1 << (i % 8)) | k (1 byte).
///
/// Its key hash is package-visible: the object layer's write overlay hashes keys with it too.
package enum BloomFilter {
    /// How a filter places a key's probes (SPEC.md §6.3).
    enum Layout: Sendable {
        /// Anywhere in the array (segment formats 1 and 2).
        case spread
        /// Within one 64-byte line (segment format 3).
        case cacheLine

        /// The layout of a segment of `formatVersion`.
        init(segmentFormat formatVersion: UInt32) {
            self = formatVersion >= 3 ? .cacheLine : .spread
        }
    }

    /// Bytes in a line of a ``Layout/cacheLine`` filter: one cache line.
    static let lineBytes = 64

    static func probeCount(bitsPerKey: Int) -> Int { max(1, min(30, Int(Double(bitsPerKey) * 0.69))) }

    /// 64-bit hash of a user key; stable across versions because it reaches disk.
    @inlinable @inline(__always)
    package static func hash(_ key: UnsafeRawBufferPointer) -> UInt64 {
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

    static func build(hashes: [UInt64], bitsPerKey: Int, layout: Layout) -> [UInt8] {
        let k = probeCount(bitsPerKey: bitsPerKey)
        switch layout {
        case .spread:
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
        case .cacheLine:
            let lineBits = lineBytes * 8
            let lines = max(1, (hashes.count * bitsPerKey + lineBits - 1) / lineBits)
            var out = [UInt8](repeating: 0, count: lines * lineBytes + 1)
            out.withUnsafeMutableBytes { f in
                for h in hashes {
                    let line = lineStart(h, lines: lines)
                    var p = UInt32(truncatingIfNeeded: h)
                    for _ in 0..<k {
                        let bit = Int(p >> 23)
                        f[line + (bit >> 3)] |= UInt8(1 << (bit & 7))
                        p = p &* 0x9E37_79B9
                    }
                }
            }
            out[lines * lineBytes] = UInt8(k)
            return out
        }
    }

    /// The byte offset of the line a ``Layout/cacheLine`` filter of `lines` lines gives `hash`:
    /// the high 32 bits scaled to the line count (a multiply and a shift, no division).
    @inline(__always)
    static func lineStart(_ hash: UInt64, lines: Int) -> Int {
        Int(truncatingIfNeeded: ((hash >> 32) &* UInt64(truncatingIfNeeded: lines)) >> 32) &* lineBytes
    }

    /// Whether the filter may contain a key with this hash. A malformed filter answers "maybe".
    @inline(__always)
    static func mayContain(_ filter: UnsafeRawBufferPointer, hash h: UInt64, layout: Layout) -> Bool {
        guard filter.count >= 2 else { return true }
        let k = Int(filter[filter.count - 1])
        guard k >= 1, k <= 30 else { return true }
        switch layout {
        case .spread:
            let nbits = UInt64((filter.count - 1) * 8)
            var a = h & 0xFFFF_FFFF
            let b = (h >> 32) | 1
            for _ in 0..<k {
                let bit = a % nbits
                if filter[Int(bit >> 3)] & UInt8(1 << (bit & 7)) == 0 { return false }
                a &+= b
            }
            return true
        case .cacheLine:
            let lines = (filter.count - 1) / lineBytes
            guard lines >= 1, lines * lineBytes == filter.count - 1 else { return true }
            let line = filter.baseAddress! + lineStart(h, lines: lines)
            var p = UInt32(truncatingIfNeeded: h)
            for _ in 0..<k {
                let bit = Int(p >> 23)
                if line.load(fromByteOffset: bit >> 3, as: UInt8.self) & UInt8(1 << (bit & 7)) == 0 { return false }
                p = p &* 0x9E37_79B9
            }
            return true
        }
    }
}
