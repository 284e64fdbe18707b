/// A `Codable` property's value as the store keeps it (SPEC.md §11.3): a small self-describing
/// tree, written in a compact binary form whose sets and keyed values are canonical (sorted),
/// so that equal values have equal bytes.
///
/// ```
/// value := 00 nil | 01 false | 02 true
///        | 03 varint (zigzag)           signed integers
///        | 04 varint                    unsigned integers
///        | 05 u64 LE (IEEE bits)        Double, Float (widened)
///        | 06 varint n · n bytes        String (UTF-8)
///        | 07 varint n · value × n      unkeyed: arrays in order, sets sorted by their bytes
///        | 08 varint n · (varint k · k bytes key · value) × n   keyed, keys sorted bytewise
/// ```
///
/// ``StoredValue/codable(_:)`` hands it over when objects are read without their Swift type
/// (`strata dump` writes it as JSON).
public indirect enum CompactValue: Equatable, Sendable {
    case null
    case bool(Bool)
    case int(Int64)
    case uint(UInt64)
    case double(Double)
    case string(String)
    case array([CompactValue])
    case keyed([(key: String, value: CompactValue)])

    public static func == (a: CompactValue, b: CompactValue) -> Bool {
        switch (a, b) {
        case (.null, .null): true
        case let (.bool(x), .bool(y)): x == y
        case let (.int(x), .int(y)): x == y
        case let (.uint(x), .uint(y)): x == y
        case let (.double(x), .double(y)): x.bitPattern == y.bitPattern
        case let (.string(x), .string(y)): x == y
        case let (.array(x), .array(y)): x == y
        case let (.keyed(x), .keyed(y)): x.elementsEqual(y) { $0.key == $1.key && $0.value == $1.value }
        default: false
        }
    }

    /// Nesting deeper than this is refused when reading (a crafted value must not exhaust
    /// the stack) and when writing.
    static let maxDepth = 64

    /// The most elements reserved ahead from a count read from stored bytes.
    private static let reservedElements = 256

    // MARK: writing

    /// The canonical bytes of this value; throws `CodecFailure` for a value nested deeper than
    /// ``maxDepth``, which a reader would refuse: such a value is never stored.
    func encoded() throws -> [UInt8] {
        var out: [UInt8] = []
        try write(to: &out, depth: 0)
        return out
    }

    private func write(to out: inout [UInt8], depth: Int) throws {
        guard depth < Self.maxDepth else { throw CodecFailure("a Codable value nested more than \(Self.maxDepth) deep") }
        switch self {
        case .null: out.append(0)
        case let .bool(b): out.append(b ? 2 : 1)
        case let .int(v):
            out.append(3)
            Self.appendVarint(UInt64(bitPattern: (v << 1) ^ (v >> 63)), to: &out)
        case let .uint(v):
            out.append(4)
            Self.appendVarint(v, to: &out)
        case let .double(d):
            out.append(5)
            withUnsafeBytes(of: d.bitPattern.littleEndian) { out.append(contentsOf: $0) }
        case let .string(s):
            out.append(6)
            Self.appendVarint(UInt64(s.utf8.count), to: &out)
            out.append(contentsOf: s.utf8)
        case let .array(elements):
            out.append(7)
            Self.appendVarint(UInt64(elements.count), to: &out)
            for e in elements { try e.write(to: &out, depth: depth + 1) }
        case let .keyed(entries):
            out.append(8)
            Self.appendVarint(UInt64(entries.count), to: &out)
            for (key, value) in entries.sorted(by: { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }) {
                Self.appendVarint(UInt64(key.utf8.count), to: &out)
                out.append(contentsOf: key.utf8)
                try value.write(to: &out, depth: depth + 1)
            }
        }
    }

    static func appendVarint(_ value: UInt64, to out: inout [UInt8]) {
        var v = value
        while v >= 0x80 {
            out.append(UInt8(truncatingIfNeeded: v) | 0x80)
            v >>= 7
        }
        out.append(UInt8(truncatingIfNeeded: v))
    }

    // MARK: reading

    /// Parses `bytes`, which must hold exactly one value; throws `CodecFailure` for anything
    /// that is not one written by ``write(to:)`` (unknown tags, lengths past the end, keys out
    /// of order or repeated, nesting past ``maxDepth``).
    static func parse(_ bytes: UnsafeRawBufferPointer) throws -> CompactValue {
        guard !bytes.isEmpty else { throw CodecFailure("a Codable value ends early") }
        // The object codec's own primitives (varints, lengths checked against the end).
        var reader = ObjectReader(payload: bytes)
        let value = try parse(&reader, depth: 0)
        guard reader.isAtEnd else { throw CodecFailure("bytes after a Codable value") }
        return value
    }

    private static func parse(_ reader: inout ObjectReader, depth: Int) throws -> CompactValue {
        guard depth < maxDepth else { throw CodecFailure("a Codable value nested more than \(maxDepth) deep") }
        let tag = try reader.readByte()
        switch tag {
        case 0: return .null
        case 1: return .bool(false)
        case 2: return .bool(true)
        case 3:
            let z = try reader.readVarint()
            return .int(Int64(bitPattern: (z >> 1) ^ (0 &- (z & 1))))
        case 4: return .uint(try reader.readVarint())
        case 5: return .double(Double(bitPattern: try reader.readFixed64()))
        case 6: return .string(try string(&reader))
        case 7:
            let n = try count(&reader)
            var elements: [CompactValue] = []
            // Not `n`: each nested level could claim every byte left (64 levels of a 1 MiB
            // value reserved 1.5 GB); the array grows as its elements really parse.
            elements.reserveCapacity(min(n, Self.reservedElements))
            for _ in 0..<n { elements.append(try parse(&reader, depth: depth + 1)) }
            return .array(elements)
        case 8:
            let n = try count(&reader)
            var entries: [(key: String, value: CompactValue)] = []
            entries.reserveCapacity(min(n, Self.reservedElements))
            for _ in 0..<n {
                let key = try string(&reader)
                if let last = entries.last, !last.key.utf8.lexicographicallyPrecedes(key.utf8) {
                    throw CodecFailure("Codable keys out of order or repeated")
                }
                entries.append((key, try parse(&reader, depth: depth + 1)))
            }
            return .keyed(entries)
        default:
            throw CodecFailure("unknown Codable value tag \(tag)")
        }
    }

    /// An element count, at most the bytes left (every element takes at least one).
    private static func count(_ reader: inout ObjectReader) throws -> Int {
        let n = try reader.readVarint()
        guard n <= UInt64(reader.end - reader.position) else { throw CodecFailure("a Codable count of \(n) past the end") }
        return Int(n)
    }

    private static func string(_ reader: inout ObjectReader) throws -> String {
        guard let s = String(validating: try reader.readLengthDelimited(), as: UTF8.self) else {
            throw CodecFailure("a Codable string that is not UTF-8")
        }
        return s
    }
}
