/// A growable byte buffer for encoding records, blocks and edits. Little-endian fixed-width
/// integers and LEB128 varints (SPEC.md §Encodings).
@usableFromInline
struct ByteWriter {
    @usableFromInline var bytes: [UInt8]

    @inlinable init(capacity: Int = 0) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    @inlinable var count: Int { bytes.count }

    @inlinable mutating func removeAll() { bytes.removeAll(keepingCapacity: true) }

    @inlinable mutating func append(_ byte: UInt8) { bytes.append(byte) }

    @inlinable mutating func append(_ raw: UnsafeRawBufferPointer) {
        bytes.append(contentsOf: raw)
    }

    @inlinable mutating func append(_ other: [UInt8]) { bytes.append(contentsOf: other) }

    @inlinable mutating func appendZeros(_ count: Int) { bytes.append(contentsOf: repeatElement(0, count: count)) }

    /// Drops the last `count` bytes (at most ``count``).
    @inlinable mutating func removeLast(_ count: Int) { bytes.removeLast(count) }

    @inlinable mutating func appendFixed32(_ value: UInt32) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    @inlinable mutating func appendFixed64(_ value: UInt64) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    @inlinable mutating func appendVarint(_ value: UInt64) {
        var v = value
        while v >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: v) | 0x80)
            v >>= 7
        }
        bytes.append(UInt8(v))
    }

    @inlinable mutating func appendVarint(_ value: Int) { appendVarint(UInt64(value)) }

    /// Writes `value` as a varint into `buffer` at `offset` (at most 10 bytes); returns the
    /// offset after it. For callers that assemble a record before one append.
    @inlinable
    static func storeVarint(_ value: UInt64, in buffer: UnsafeMutableRawBufferPointer, at offset: Int) -> Int {
        var v = value, n = offset
        while v >= 0x80 {
            buffer[n] = UInt8(truncatingIfNeeded: v) | 0x80
            n += 1
            v >>= 7
        }
        buffer[n] = UInt8(v)
        return n + 1
    }

    /// A varint length followed by the bytes.
    @inlinable mutating func appendLengthPrefixed(_ raw: UnsafeRawBufferPointer) {
        appendVarint(raw.count)
        append(raw)
    }

    @inlinable mutating func appendLengthPrefixed(_ other: [UInt8]) {
        appendVarint(other.count)
        append(other)
    }

    /// Overwrites four bytes at `offset` (used to patch counts after the fact).
    @inlinable mutating func setFixed32(_ value: UInt32, at offset: Int) {
        withUnsafeBytes(of: value.littleEndian) { src in
            for i in 0..<4 { bytes[offset + i] = src[i] }
        }
    }
}
