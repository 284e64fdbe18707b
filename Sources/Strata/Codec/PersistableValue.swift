#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A type whose values `@Entity` can store: Bool, the integer types, Float, Double, String,
/// Date, Data, `[UInt8]`, UUID, URL, Decimal, and optionals of them. `RawRepresentable` enums over these are stored
/// through their raw values without conforming. Strata provides every conformance; the
/// requirements are the codec's and not meant to be implemented elsewhere.
public protocol PersistableValue: SendableMetatype {
    static var _strataPropertyType: PropertyType { get }
    static var _strataIsOptional: Bool { get }
    func _strataWrite(to writer: inout ObjectWriter, id: UInt32)
    static func _strataRead(from reader: inout ObjectReader) throws -> Self
}

extension PersistableValue {
    @inlinable public static var _strataIsOptional: Bool { false }
}

extension Optional: PersistableValue where Wrapped: PersistableValue {
    @inlinable public static var _strataPropertyType: PropertyType { Wrapped._strataPropertyType }
    @inlinable public static var _strataIsOptional: Bool { true }

    @inlinable
    public func _strataWrite(to writer: inout ObjectWriter, id: UInt32) {
        switch self {
        case let .some(v): v._strataWrite(to: &writer, id: id)
        case .none: writer.appendTag(id: id, wire: .null)
        }
    }

    @inlinable
    public static func _strataRead(from reader: inout ObjectReader) throws -> Wrapped? {
        if reader.wire == .null { return nil }
        return try Wrapped._strataRead(from: &reader)
    }
}

extension Bool: PersistableValue {
    @inlinable public static var _strataPropertyType: PropertyType { .bool }

    @inlinable
    public func _strataWrite(to writer: inout ObjectWriter, id: UInt32) {
        writer.appendTag(id: id, wire: .varint)
        writer.appendVarint(self ? 1 : 0)
    }

    @inlinable
    public static func _strataRead(from reader: inout ObjectReader) throws -> Bool {
        try reader.expect(.varint)
        switch try reader.readVarint() {
        case 0: return false
        case 1: return true
        case let v: throw CodecFailure("stored Bool has value \(v)")
        }
    }
}

/// Signed integers: zigzag varints, so small negative numbers stay short.
public protocol _StrataSignedInteger: PersistableValue, FixedWidthInteger, SignedInteger {}

extension _StrataSignedInteger {
    @inlinable
    public func _strataWrite(to writer: inout ObjectWriter, id: UInt32) {
        let v = Int64(self)
        writer.appendTag(id: id, wire: .varint)
        writer.appendVarint(UInt64(bitPattern: (v << 1) ^ (v >> 63)))
    }

    @inlinable
    public static func _strataRead(from reader: inout ObjectReader) throws -> Self {
        try reader.expect(.varint)
        let z = try reader.readVarint()
        let v = Int64(bitPattern: (z >> 1) ^ (0 &- (z & 1)))
        guard let r = Self(exactly: v) else { throw CodecFailure("stored value \(v) does not fit \(Self.self)") }
        return r
    }
}

/// Unsigned integers: plain varints.
public protocol _StrataUnsignedInteger: PersistableValue, FixedWidthInteger, UnsignedInteger {}

extension _StrataUnsignedInteger {
    @inlinable
    public func _strataWrite(to writer: inout ObjectWriter, id: UInt32) {
        writer.appendTag(id: id, wire: .varint)
        writer.appendVarint(UInt64(self))
    }

    @inlinable
    public static func _strataRead(from reader: inout ObjectReader) throws -> Self {
        try reader.expect(.varint)
        let v = try reader.readVarint()
        guard let r = Self(exactly: v) else { throw CodecFailure("stored value \(v) does not fit \(Self.self)") }
        return r
    }
}

extension Int: _StrataSignedInteger { @inlinable public static var _strataPropertyType: PropertyType { .int64 } }
extension Int8: _StrataSignedInteger { @inlinable public static var _strataPropertyType: PropertyType { .int8 } }
extension Int16: _StrataSignedInteger { @inlinable public static var _strataPropertyType: PropertyType { .int16 } }
extension Int32: _StrataSignedInteger { @inlinable public static var _strataPropertyType: PropertyType { .int32 } }
extension Int64: _StrataSignedInteger { @inlinable public static var _strataPropertyType: PropertyType { .int64 } }
extension UInt: _StrataUnsignedInteger { @inlinable public static var _strataPropertyType: PropertyType { .uint64 } }
extension UInt8: _StrataUnsignedInteger { @inlinable public static var _strataPropertyType: PropertyType { .uint8 } }
extension UInt16: _StrataUnsignedInteger { @inlinable public static var _strataPropertyType: PropertyType { .uint16 } }
extension UInt32: _StrataUnsignedInteger { @inlinable public static var _strataPropertyType: PropertyType { .uint32 } }
extension UInt64: _StrataUnsignedInteger { @inlinable public static var _strataPropertyType: PropertyType { .uint64 } }

extension Float: PersistableValue {
    @inlinable public static var _strataPropertyType: PropertyType { .float }

    @inlinable
    public func _strataWrite(to writer: inout ObjectWriter, id: UInt32) {
        writer.appendTag(id: id, wire: .fixed32)
        writer.appendFixed32(bitPattern)
    }

    @inlinable
    public static func _strataRead(from reader: inout ObjectReader) throws -> Float {
        try reader.expect(.fixed32)
        return Float(bitPattern: try reader.readFixed32())
    }
}

extension Double: PersistableValue {
    @inlinable public static var _strataPropertyType: PropertyType { .double }

    @inlinable
    public func _strataWrite(to writer: inout ObjectWriter, id: UInt32) {
        writer.appendTag(id: id, wire: .fixed64)
        writer.appendFixed64(bitPattern)
    }

    @inlinable
    public static func _strataRead(from reader: inout ObjectReader) throws -> Double {
        try reader.expect(.fixed64)
        return Double(bitPattern: try reader.readFixed64())
    }
}

/// Stored as seconds since 2001-01-01 00:00:00 UTC (a Double), which is `Date`'s own
/// representation, so every value round-trips exactly.
extension Date: PersistableValue {
    @inlinable public static var _strataPropertyType: PropertyType { .date }

    @inlinable
    public func _strataWrite(to writer: inout ObjectWriter, id: UInt32) {
        writer.appendTag(id: id, wire: .fixed64)
        writer.appendFixed64(timeIntervalSinceReferenceDate.bitPattern)
    }

    @inlinable
    public static func _strataRead(from reader: inout ObjectReader) throws -> Date {
        try reader.expect(.fixed64)
        return Date(timeIntervalSinceReferenceDate: Double(bitPattern: try reader.readFixed64()))
    }
}

extension String: PersistableValue {
    @inlinable public static var _strataPropertyType: PropertyType { .string }

    @inlinable
    public func _strataWrite(to writer: inout ObjectWriter, id: UInt32) {
        writer.appendTag(id: id, wire: .lengthDelimited)
        var s = self
        s.withUTF8 { writer.appendLengthDelimited(UnsafeRawBufferPointer($0)) }
    }

    @inlinable
    public static func _strataRead(from reader: inout ObjectReader) throws -> String {
        try reader.expect(.lengthDelimited)
        let raw = try reader.readLengthDelimited()
        return String(decoding: raw, as: UTF8.self)
    }
}

extension Data: PersistableValue {
    @inlinable public static var _strataPropertyType: PropertyType { .bytes }

    @inlinable
    public func _strataWrite(to writer: inout ObjectWriter, id: UInt32) {
        writer.appendTag(id: id, wire: .lengthDelimited)
        withUnsafeBytes { writer.appendLengthDelimited($0) }
    }

    @inlinable
    public static func _strataRead(from reader: inout ObjectReader) throws -> Data {
        try reader.expect(.lengthDelimited)
        return Data(try reader.readLengthDelimited())
    }
}

extension Array: PersistableValue where Element == UInt8 {
    @inlinable public static var _strataPropertyType: PropertyType { .bytes }

    @inlinable
    public func _strataWrite(to writer: inout ObjectWriter, id: UInt32) {
        writer.appendTag(id: id, wire: .lengthDelimited)
        withUnsafeBytes { writer.appendLengthDelimited($0) }
    }

    @inlinable
    public static func _strataRead(from reader: inout ObjectReader) throws -> [UInt8] {
        try reader.expect(.lengthDelimited)
        return Array(try reader.readLengthDelimited())
    }
}

/// Stored as its 16 bytes, in the order `uuid` gives them (RFC 4122's): equal identifiers have
/// equal bytes, and orderings and indexes order them bytewise.
extension UUID: PersistableValue {
    @inlinable public static var _strataPropertyType: PropertyType { .uuid }

    @inlinable
    public func _strataWrite(to writer: inout ObjectWriter, id: UInt32) {
        writer.appendTag(id: id, wire: .lengthDelimited)
        withUnsafeBytes(of: uuid) { writer.appendLengthDelimited($0) }
    }

    @inlinable
    public static func _strataRead(from reader: inout ObjectReader) throws -> UUID {
        try reader.expect(.lengthDelimited)
        return try fromStored(try reader.readLengthDelimited())
    }

    /// The UUID stored as `raw` (every reader of stored UUIDs decodes them here).
    @usableFromInline
    static func fromStored(_ raw: UnsafeRawBufferPointer) throws -> UUID {
        guard raw.count == 16 else { throw CodecFailure("a UUID of \(raw.count) bytes") }
        var value: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &value) { $0.copyMemory(from: raw) }
        return UUID(uuid: value)
    }
}

/// Stored as its absolute string, UTF-8 (a relative URL keeps its base only through it).
extension URL: PersistableValue {
    @inlinable public static var _strataPropertyType: PropertyType { .url }

    @inlinable
    public func _strataWrite(to writer: inout ObjectWriter, id: UInt32) {
        absoluteString._strataWrite(to: &writer, id: id)
    }

    @inlinable
    public static func _strataRead(from reader: inout ObjectReader) throws -> URL {
        try reader.expect(.lengthDelimited)
        return try fromStored(try reader.readLengthDelimited())
    }

    /// The URL stored as `raw`: valid UTF-8 that parses (every reader of stored URLs decodes
    /// them here).
    @usableFromInline
    static func fromStored(_ raw: UnsafeRawBufferPointer) throws -> URL {
        guard let s = String(validating: raw, as: UTF8.self), let url = URL(string: s) else {
            throw CodecFailure("stored URL bytes are no URL")
        }
        return url
    }
}

/// Stored exactly, in an encoding whose bytes order as the numbers do (`OrderedDecimal`).
extension Decimal: PersistableValue {
    @inlinable public static var _strataPropertyType: PropertyType { .decimal }

    public func _strataWrite(to writer: inout ObjectWriter, id: UInt32) {
        writer.appendTag(id: id, wire: .lengthDelimited)
        OrderedDecimal.encode(self).withUnsafeBytes { writer.appendLengthDelimited($0) }
    }

    public static func _strataRead(from reader: inout ObjectReader) throws -> Decimal {
        try reader.expect(.lengthDelimited)
        return try OrderedDecimal.decode(try reader.readLengthDelimited())
    }
}
