#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#endif

/// A value a query compares with, in the form stored values decode to, so that a condition
/// compares bytes from the store without building objects. Strings and byte arrays compare
/// bytewise (UTF-8 order, which is Unicode scalar order); nil sorts before every value.
enum QueryValue: Sendable, Hashable, Comparable {
    case null
    case int(Int64)
    case uint(UInt64)
    case double(Double)
    case bytes([UInt8])

    /// The value as the codec stores it: encoded, then decoded as stored fields are.
    static func of<V: PersistableValue>(_ value: V) -> QueryValue {
        // Strings, the usual lookup parameter, skip the round trip (a third of re-running a
        // lookup with a new value). A metatype test, not `as?`: a dynamic cast costs as much.
        if V.self == String.self { return .bytes(Array(unsafeBitCast(value, to: String.self).utf8)) }
        var buffer: [UInt8] = []
        let ids: [UInt32] = [1]
        return ids.withUnsafeBufferPointer { ids in
            var writer = ObjectWriter(taking: &buffer, propertyIds: ids)
            value._strataWrite(to: &writer, id: 1)
            let bytes = writer.bytes
            let map: [Int32] = [-1, 0]
            return bytes.withUnsafeBytes { raw in
                map.withUnsafeBufferPointer { map in
                    // The bytes were just written by the codec: they always decode.
                    guard var reader = try? ObjectReader(bytes: raw, fieldMap: map), (try? reader.nextField()) != nil,
                          let view = try? FieldView.read(V._strataPropertyType, from: &reader) else { return .null }
                    return view.owned
                }
            }
        }
    }

    static func < (a: QueryValue, b: QueryValue) -> Bool {
        switch (a, b) {
        case let (.int(x), .int(y)): return x < y
        case let (.uint(x), .uint(y)): return x < y
        case let (.double(x), .double(y)): return x < y
        case let (.bytes(x), .bytes(y)): return x.lexicographicallyPrecedes(y)
        default: return a.rank < b.rank
        }
    }

    private var rank: Int {
        switch self {
        case .null: 0
        case .int: 1
        case .uint: 2
        case .double: 3
        case .bytes: 4
        }
    }
}

/// A stored field's value read in place: strings and bytes point into the stored object.
enum FieldView {
    case null
    case int(Int64)
    case uint(UInt64)
    case double(Double)
    case bytes(UnsafeRawBufferPointer)

    /// Reads the reader's current field, stored as `type`.
    static func read(_ type: PropertyType, from reader: inout ObjectReader) throws -> FieldView {
        if reader.wire == .null { return .null }
        switch type {
        case .bool, .uint8, .uint16, .uint32, .uint64:
            try reader.expect(.varint)
            return .uint(try reader.readVarint())
        case .toOne:
            // Id 0 is "no target" wherever it is read (the Swift type's `ToOne` reads it so), and
            // the writer stores null instead: a crafted 0 is nil to queries and indexes alike.
            try reader.expect(.varint)
            let id = try reader.readVarint()
            return id == 0 ? .null : .uint(id)
        case .int8, .int16, .int32, .int64:
            try reader.expect(.varint)
            let z = try reader.readVarint()
            return .int(Int64(bitPattern: (z >> 1) ^ (0 &- (z & 1))))
        case .float:
            try reader.expect(.fixed32)
            return .double(Double(Float(bitPattern: try reader.readFixed32())))
        case .double, .date:
            try reader.expect(.fixed64)
            return .double(Double(bitPattern: try reader.readFixed64()))
        case .string, .bytes, .url, .decimal, .codable:
            try reader.expect(.lengthDelimited)
            return .bytes(try reader.readLengthDelimited())
        case .uuid:
            try reader.expect(.lengthDelimited)
            let raw = try reader.readLengthDelimited()
            guard raw.count == 16 else { throw CodecFailure("a UUID of \(raw.count) bytes") }
            return .bytes(raw)
        case .toMany:
            throw CodecFailure("a to-many has no value in the object")
        }
    }

    var owned: QueryValue {
        switch self {
        case .null: .null
        case let .int(v): .int(v)
        case let .uint(v): .uint(v)
        case let .double(v): .double(v)
        case let .bytes(b): .bytes(Array(b))
        }
    }

    var isNull: Bool { if case .null = self { true } else { false } }

    /// Negative, zero or positive as this value sorts before, with or after `value`.
    func compare(to value: QueryValue) -> Int {
        switch (self, value) {
        case let (.int(x), .int(y)): return x < y ? -1 : (x == y ? 0 : 1)
        case let (.uint(x), .uint(y)): return x < y ? -1 : (x == y ? 0 : 1)
        case let (.double(x), .double(y)): return x < y ? -1 : (x == y ? 0 : 1)
        case let (.bytes(x), .bytes(y)):
            return y.withUnsafeBytes { y in
                let n = Swift.min(x.count, y.count)
                if n > 0 {
                    let r = memcmp(x.baseAddress!, y.baseAddress!, n)
                    if r != 0 { return r < 0 ? -1 : 1 }
                }
                return x.count < y.count ? -1 : (x.count == y.count ? 0 : 1)
            }
        case (.null, .null): return 0
        case (.null, _): return -1
        case (_, .null): return 1
        default: return 0
        }
    }
}
