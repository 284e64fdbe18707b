/// A bounds-checked reader over bytes that came from disk. Every read returns nil on short or
/// malformed input instead of trapping, so that a damaged file becomes a `StorageError`, never a
/// crash. The caller keeps the memory alive while the reader is in use.
@usableFromInline
package struct ByteReader {
    @usableFromInline let base: UnsafeRawBufferPointer
    @usableFromInline var offset: Int

    @inlinable package init(_ base: UnsafeRawBufferPointer, offset: Int = 0) {
        self.base = base
        self.offset = offset
    }

    @inlinable var remaining: Int { base.count - offset }
    @inlinable var isAtEnd: Bool { offset >= base.count }

    @inlinable mutating func readByte() -> UInt8? {
        guard offset < base.count else { return nil }
        defer { offset += 1 }
        return base[offset]
    }

    @inlinable mutating func readFixed32() -> UInt32? {
        guard remaining >= 4 else { return nil }
        defer { offset += 4 }
        return UInt32(littleEndian: base.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
    }

    @inlinable mutating func readFixed64() -> UInt64? {
        guard remaining >= 8 else { return nil }
        defer { offset += 8 }
        return UInt64(littleEndian: base.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
    }

    /// One-byte varints (lengths and key space ids, mostly) in line; longer ones in
    /// ``readLongVarint()``. The loop as a call was 50 instructions an operation of a WAL's
    /// replay.
    @inlinable @inline(__always) mutating func readVarint() -> UInt64? {
        if offset < base.count {
            let byte = base[offset]
            if byte < 0x80 {
                offset += 1
                return UInt64(byte)
            }
        }
        return readLongVarint()
    }

    @inlinable @inline(never) mutating func readLongVarint() -> UInt64? {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while offset < base.count, shift <= 63 {
            let byte = base[offset]
            offset += 1
            result |= UInt64(byte & 0x7F) << shift
            if byte < 0x80 { return result }
            shift += 7
        }
        return nil
    }

    /// A varint that must fit in `Int` and be at most `limit`.
    @inlinable mutating func readVarintInt(limit: Int = Int.max) -> Int? {
        guard let v = readVarint(), v <= UInt64(limit) else { return nil }
        return Int(v)
    }

    @inlinable mutating func readBytes(_ count: Int) -> UnsafeRawBufferPointer? {
        guard count >= 0, remaining >= count else { return nil }
        defer { offset += count }
        return UnsafeRawBufferPointer(rebasing: base[offset..<(offset + count)])
    }

    @inlinable mutating func readLengthPrefixed(limit: Int = Int.max) -> UnsafeRawBufferPointer? {
        guard let n = readVarintInt(limit: limit) else { return nil }
        return readBytes(n)
    }
}

/// Decodes a little-endian UInt64 at `offset` (caller has checked bounds).
@inlinable package func loadFixed64(_ raw: UnsafeRawBufferPointer, _ offset: Int) -> UInt64 {
    UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
}

/// Decodes a little-endian UInt32 at `offset` (caller has checked bounds).
@inlinable package func loadFixed32(_ raw: UnsafeRawBufferPointer, _ offset: Int) -> UInt32 {
    UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
}
