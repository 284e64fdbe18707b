#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import StrataStorage

/// Keys of the indexes key space (SPEC.md §Indexes): entity id (u32 BE), property id (u32 BE),
/// the value's order-preserving encoding, object id (u64 BE). Comparing encodings bytewise
/// orders values as queries compare them (``QueryValue``), so equality is a prefix and a range
/// condition is a key range. The value bytes of an entry are its key minus header and id.
enum IndexKey {
    static let headerBytes = 8
    static let idBytes = 8

    /// First byte of an encoded value. Never renumber.
    enum Tag {
        static let null: UInt8 = 0
        static let int: UInt8 = 1
        static let uint: UInt8 = 2
        static let double: UInt8 = 3
        static let bytes: UInt8 = 4
    }

    /// Within bytes, 0x00 is written 0x00 0xFF and the value ends with 0x00 0x01: a value sorts
    /// before every longer value it begins, and a prefix of the raw bytes is a prefix of the
    /// encoding (what `startsWith` scans).
    private static let escape: UInt8 = 0xFF
    private static let terminator: UInt8 = 0x01

    static func header(entityId: UInt32, propertyId: UInt32) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(headerBytes + 16)
        appendBigEndian(UInt64(entityId) << 32 | UInt64(propertyId), to: &out)
        return out
    }

    static func appendBigEndian(_ v: UInt64, to out: inout [UInt8]) {
        for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: v >> UInt64(shift))) }
    }

    /// The value's encoding: tag, then payload.
    static func encode(_ v: FieldView, into out: inout [UInt8]) {
        switch v {
        case .null: out.append(Tag.null)
        case let .int(x):
            out.append(Tag.int)
            appendBigEndian(UInt64(bitPattern: x) ^ (1 << 63), to: &out)
        case let .uint(x):
            out.append(Tag.uint)
            appendBigEndian(x, to: &out)
        case let .double(x):
            out.append(Tag.double)
            appendBigEndian(orderedBits(x), to: &out)
        case let .bytes(raw):
            out.append(Tag.bytes)
            appendEscaped(raw, to: &out)
            out.append(0)
            out.append(terminator)
        }
    }

    /// Splits a concatenation of encodings (a composite index's value) into the encodings; stops
    /// at the first byte that does not begin one.
    static func splitEncodings(_ bytes: [UInt8]) -> [[UInt8]] {
        var parts: [[UInt8]] = []
        var i = 0
        while i < bytes.count {
            var end: Int
            switch bytes[i] {
            case Tag.null: end = i + 1
            case Tag.int, Tag.uint, Tag.double: end = i + 9
            case Tag.bytes:
                end = i + 1
                // Up to the terminator 00 01; 00 FF is an escaped zero byte.
                while end + 1 < bytes.count && !(bytes[end] == 0 && bytes[end + 1] == terminator) { end += bytes[end] == 0 ? 2 : 1 }
                end += 2
            default: return parts
            }
            guard end <= bytes.count else { return parts }
            parts.append(Array(bytes[i..<end]))
            i = end
        }
        return parts
    }

    /// The encoding of a string lowercased, as a case-insensitive index keeps it (the same
    /// folding the query matcher applies: `String.lowercased()`, then bytewise).
    static func encodeFolded(_ raw: UnsafeRawBufferPointer, into out: inout [UInt8]) {
        var folded = String(decoding: raw, as: UTF8.self).lowercased()
        folded.withUTF8 { encode(FieldView.bytes(UnsafeRawBufferPointer($0)), into: &out) }
    }

    /// The encoding of a value as an index of `x`'s kind keeps it: strings
    /// lowercased in a case-insensitive index.
    static func encode(_ v: QueryValue, for x: EntityIndexes.Indexed) -> [UInt8] {
        guard x.caseInsensitive, case let .bytes(b) = v else { return encode(v) }
        var out: [UInt8] = []
        b.withUnsafeBytes { encodeFolded($0, into: &out) }
        return out
    }

    static func encode(_ v: QueryValue) -> [UInt8] {
        var out: [UInt8] = []
        encode(v, into: &out)
        return out
    }

    /// Appends the encoding of `v` to `out`.
    static func encode(_ v: QueryValue, into out: inout [UInt8]) {
        switch v {
        case .null: encode(FieldView.null, into: &out)
        case let .int(x): encode(FieldView.int(x), into: &out)
        case let .uint(x): encode(FieldView.uint(x), into: &out)
        case let .double(x): encode(FieldView.double(x), into: &out)
        case let .bytes(b): b.withUnsafeBytes { encode(FieldView.bytes($0), into: &out) }
        }
    }

    /// The encoding of every byte string that starts with `prefix`, up to the prefix's end.
    static func encodePrefix(_ prefix: [UInt8]) -> [UInt8] {
        var out: [UInt8] = [Tag.bytes]
        prefix.withUnsafeBytes { appendEscaped($0, to: &out) }
        return out
    }

    private static func appendEscaped(_ raw: UnsafeRawBufferPointer, to out: inout [UInt8]) {
        // Room for the terminator too; text rarely holds a zero byte, and without one the bytes
        // go in whole instead of one append (and capacity check) each.
        out.reserveCapacity(out.count + raw.count + 3)
        // memchr, not `contains`: a byte-at-a-time loop was a fifth of a unique lookup's key
        // building and of its holder check, for an e-mail address.
        guard raw.count > 0, memchr(raw.baseAddress!, 0, raw.count) != nil else {
            out.append(contentsOf: raw)
            return
        }
        for b in raw {
            out.append(b)
            if b == 0 { out.append(escape) }
        }
    }

    /// Bits that sort like the doubles: -0 is 0 (they compare equal) and every NaN is one NaN,
    /// after +infinity.
    static func orderedBits(_ x: Double) -> UInt64 {
        let canonical = x.isNaN ? Double.nan : (x == 0 ? 0 : x)
        let bits = canonical.bitPattern
        return bits & (1 << 63) != 0 ? ~bits : bits | (1 << 63)
    }

    /// The object id at the end of an index key.
    static func id(fromKey key: UnsafeRawBufferPointer) -> Id {
        var id: Id = 0
        for i in (key.count - idBytes)..<key.count { id = id << 8 | Id(key[i]) }
        return id
    }

    /// The object id an index entry names: the end of its key, or the whole value of an entry
    /// of a unique index keyed by value. Throws when the entry is too short to hold one.
    static func id(key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer, keyedByValue: Bool) throws(StrataError) -> Id {
        if keyedByValue {
            guard value.count == idBytes else {
                throw .corruptCatalog(reason: "an entry of a unique index holds \(value.count) bytes instead of an object id")
            }
            return id(fromKey: value)
        }
        guard key.count > headerBytes + idBytes else {
            throw .corruptCatalog(reason: "an index key of \(key.count) bytes is too short to end in an object id")
        }
        return id(fromKey: key)
    }

    /// The smallest key after every key that starts with `prefix`; nil when none exists.
    static func successor(_ prefix: [UInt8]) -> [UInt8]? { Engine.prefixSuccessor(prefix) }
}
