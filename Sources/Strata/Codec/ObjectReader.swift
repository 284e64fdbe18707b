/// Decodes one object's fields straight from stored bytes (often a block in the engine's
/// cache), without copying them. Generated `_strataDecode` methods loop over `nextField()` and
/// `read(_:)` each property they know; fields of removed properties are skipped here.
public struct ObjectReader {
    @usableFromInline let base: UnsafeRawPointer
    @usableFromInline let end: Int
    @usableFromInline var position: Int
    /// Stored property id → declared position, or -1 for a property the type no longer has.
    @usableFromInline let fieldMap: UnsafeBufferPointer<Int32>
    /// Wire type of the field `nextField()` returned last.
    @usableFromInline var wire = WireType.null
    /// The store relations read from lazily, the owner's binding and id; nil store for a raw
    /// parse. Plain fields rather than a context object: no allocation per decoded object.
    let store: Store?
    let binding: EntityBinding?
    let ownerId: Id

    /// Starts reading; throws when the codec version byte is missing or unknown.
    init(bytes: UnsafeRawBufferPointer, fieldMap: UnsafeBufferPointer<Int32>, store: Store? = nil,
         binding: EntityBinding? = nil, ownerId: Id = 0) throws {
        guard let base = bytes.baseAddress, bytes.count >= 1 else { throw CodecFailure("empty object") }
        guard bytes[0] == ObjectFormat.codecVersion else {
            throw CodecFailure("unknown object codec version \(bytes[0])")
        }
        self.base = base
        end = bytes.count
        position = 1
        self.fieldMap = fieldMap
        self.store = store
        self.binding = binding
        self.ownerId = ownerId
    }

    /// Reads `bytes` with the codec's primitives: a field's payload (a Codable value), not an
    /// object (no codec version byte, no fields). `bytes` must not be empty.
    init(payload bytes: UnsafeRawBufferPointer) {
        base = bytes.baseAddress!
        end = bytes.count
        position = 0
        fieldMap = UnsafeBufferPointer(start: nil, count: 0)
        store = nil
        binding = nil
        ownerId = 0
    }

    /// Reads the current field into a to-one relation (the target's id; the target loads lazily).
    public mutating func read<T: Entity>(_ relation: ToOne<T>) throws {
        var id: Id = 0
        if wire != .null {
            try expect(.varint)
            id = try readVarint()
        }
        // The object's own (empty) ToOne from init() is reused: no allocation per relation.
        relation.loaded(storedTargetId: id, store: store)
    }

    /// Connects a standalone to-many to its owner, so that it loads lazily.
    public func attach<T: Entity>(_ relation: ToMany<T>, field: Int) {
        // The store and binding are passed as borrowed, not bound with `guard let`: each binding
        // copied an optional class reference through a generic outlined copy (a hundred
        // instructions a decoded object with a backlink).
        guard store != nil, binding != nil else { return }
        relation.attachStandalone(store: store!, entityId: binding!.entityId, propertyId: binding!.propertyIds[field], ownerId: ownerId)
    }

    /// Connects a backlink to its owner, so that it loads lazily.
    public func attach<T: Entity>(_ relation: ToMany<T>, backlink: Int) {
        guard store != nil, binding != nil else { return }
        relation.attachBacklink(store: store!, owner: binding!, index: backlink, ownerId: ownerId)
    }

    /// The declared position of the next field this type knows, or nil at the end.
    /// Always inlined into the generated decoders: called once per field of every object read,
    /// its call and the varint read's cost more than the loop itself (callgrind: about 60
    /// instructions a field as calls).
    @inlinable @inline(__always)
    public mutating func nextField() throws -> Int? {
        while position < end {
            let tag = try readVarint()
            guard let w = WireType(rawValue: UInt8(tag & 7)) else { throw CodecFailure("unknown wire type \(tag & 7)") }
            let id = tag >> 3
            if id < UInt64(fieldMap.count) {
                let field = fieldMap[Int(id)]
                if field >= 0 {
                    wire = w
                    return Int(field)
                }
            }
            try skip(w)
        }
        return nil
    }

    /// Reads the current field as the value of a stored property.
    @inlinable
    public mutating func read<V: PersistableValue>() throws -> V {
        try V._strataRead(from: &self)
    }

    /// Reads the current field as a `Codable` property's value (SPEC.md §11.3). Disfavored: the
    /// scalars and enums, Codable too, keep their own encodings.
    @_disfavoredOverload
    public mutating func read<V: Decodable>() throws -> V {
        let value: CompactValue
        if wire == .null {
            value = .null
        } else {
            try expect(.lengthDelimited)
            value = try CompactValue.parse(try readLengthDelimited())
        }
        do {
            return try CompactValueDecoder.decode(V.self, from: value)
        } catch let error as DecodingError {
            throw CodecFailure("a \(V.self) value does not decode: \(Self.describe(error))")
        }
    }

    /// A type Strata cannot store: the compile-time error of the macro's generated code.
    @available(*, unavailable, message: "Strata cannot store this property\'s type: make it Codable, or mark the property @Transient")
    @_disfavoredOverload
    public mutating func read<V>() throws -> V {
        throw CodecFailure("\(V.self) cannot be stored")
    }

    static func describe(_ error: DecodingError) -> String {
        switch error {
        case let .typeMismatch(_, c), let .valueNotFound(_, c), let .keyNotFound(_, c), let .dataCorrupted(c):
            let path = c.codingPath.map(\.stringValue).joined(separator: ".")
            return (path.isEmpty ? "" : "at \(path): ") + c.debugDescription
        @unknown default:
            return "\(error)"
        }
    }

    /// Reads the current field as the value of an enum property.
    @inlinable
    public mutating func read<V: RawRepresentable>() throws -> V where V.RawValue: PersistableValue {
        let raw = try V.RawValue._strataRead(from: &self)
        guard let v = V(rawValue: raw) else { throw CodecFailure("stored value \(raw) is no case of \(V.self)") }
        return v
    }

    /// Reads the current field as the value of an optional enum property.
    @inlinable
    public mutating func read<V: RawRepresentable>() throws -> V? where V.RawValue: PersistableValue {
        if wire == .null { return nil }
        let raw = try V.RawValue._strataRead(from: &self)
        guard let v = V(rawValue: raw) else { throw CodecFailure("stored value \(raw) is no case of \(V.self)") }
        return v
    }

    // MARK: primitives for the value conformances

    @inlinable
    mutating func expect(_ expected: WireType) throws {
        guard wire == expected else {
            throw CodecFailure(wire == .null ? "nil stored for a non-optional property" : "wire type \(wire) where \(expected) was expected")
        }
    }

    @inlinable @inline(__always)
    mutating func readVarint() throws -> UInt64 {
        // Field keys, lengths and small values fit in one byte: that path is inlined, the
        // loop for longer ones is not.
        if position < end {
            let first = base.load(fromByteOffset: position, as: UInt8.self)
            if first < 0x80 {
                position += 1
                return UInt64(first)
            }
        }
        return try readLongVarint()
    }

    @usableFromInline @inline(never)
    mutating func readLongVarint() throws -> UInt64 {
        if end - position >= 8 {
            // Up to 8 bytes (values below 2^56: amounts, dates, ids) from one word: the first
            // byte without its high bit ends the varint; the 7-bit groups of the bytes up to it
            // are then packed together by three shift-and-mask steps, with no loop.
            let word = UInt64(littleEndian: base.loadUnaligned(fromByteOffset: position, as: UInt64.self))
            let ends = ~word & 0x8080_8080_8080_8080
            if ends != 0 {
                let bytes = (ends.trailingZeroBitCount + 1) / 8
                var x = bytes == 8 ? word : word & ((1 << UInt64(8 * bytes)) - 1)
                x = (x & 0x007F_007F_007F_007F) | ((x & 0x7F00_7F00_7F00_7F00) >> 1)
                x = (x & 0x0000_3FFF_0000_3FFF) | ((x & 0x3FFF_0000_3FFF_0000) >> 2)
                x = (x & 0x0000_0000_0FFF_FFFF) | ((x & 0x0FFF_FFFF_0000_0000) >> 4)
                position += bytes
                return x
            }
        }
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while position < end {
            let byte = base.load(fromByteOffset: position, as: UInt8.self)
            position += 1
            if shift == 63 && byte > 1 { throw CodecFailure("varint overflows 64 bits") }
            result |= UInt64(byte & 0x7F) << shift
            if byte < 0x80 { return result }
            shift += 7
        }
        throw CodecFailure("object ends inside a varint")
    }

    /// One byte (a tag inside a Codable value).
    mutating func readByte() throws -> UInt8 {
        guard position < end else { throw CodecFailure("a value ends early") }
        position += 1
        return base.load(fromByteOffset: position - 1, as: UInt8.self)
    }

    /// Whether every byte was read.
    var isAtEnd: Bool { position == end }

    @inlinable
    mutating func readFixed32() throws -> UInt32 {
        guard end - position >= 4 else { throw CodecFailure("object ends inside a 4-byte field") }
        let v = base.loadUnaligned(fromByteOffset: position, as: UInt32.self)
        position += 4
        return UInt32(littleEndian: v)
    }

    @inlinable
    mutating func readFixed64() throws -> UInt64 {
        guard end - position >= 8 else { throw CodecFailure("object ends inside an 8-byte field") }
        let v = base.loadUnaligned(fromByteOffset: position, as: UInt64.self)
        position += 8
        return UInt64(littleEndian: v)
    }

    /// The bytes of a length-delimited field; valid as long as the stored bytes are.
    @inlinable
    mutating func readLengthDelimited() throws -> UnsafeRawBufferPointer {
        let length = try readVarint()
        guard length <= UInt64(end - position) else { throw CodecFailure("field length \(length) runs past the object's end") }
        let r = UnsafeRawBufferPointer(start: base + position, count: Int(length))
        position += Int(length)
        return r
    }

    @inlinable
    mutating func skip(_ w: WireType) throws {
        switch w {
        case .varint: _ = try readVarint()
        case .fixed64: _ = try readFixed64()
        case .fixed32: _ = try readFixed32()
        case .lengthDelimited: _ = try readLengthDelimited()
        case .null: break
        }
    }
}
