/// Encodes one object's stored properties as tagged fields (SPEC.md §Object codec). Generated
/// `_strataEncode` methods call `write(_:field:)` once per property; `field` is the property's
/// position in the declaration, mapped here to the id the store assigned it.
///
/// The buffer is reused from object to object, so encoding allocates nothing once it has grown.
public struct ObjectWriter {
    @usableFromInline var bytes: [UInt8]
    @usableFromInline let propertyIds: UnsafeBufferPointer<UInt32>
    /// Why a `Codable` property's own `encode(to:)` failed, if it did: the put reports it.
    var failure: String?

    /// Takes `buffer`'s storage (leaving it empty) so that appends never copy.
    init(taking buffer: inout [UInt8], propertyIds: UnsafeBufferPointer<UInt32>) {
        bytes = []
        swap(&bytes, &buffer)
        bytes.removeAll(keepingCapacity: true)
        bytes.append(ObjectFormat.codecVersion)
        self.propertyIds = propertyIds
    }

    /// Writes a stored property's value.
    @inlinable
    public mutating func write<V: PersistableValue>(_ value: V, field: Int) {
        value._strataWrite(to: &self, id: propertyIds[field])
    }

    /// Writes an enum property as its raw value.
    @inlinable
    public mutating func write<V: RawRepresentable>(_ value: V, field: Int) where V.RawValue: PersistableValue {
        value.rawValue._strataWrite(to: &self, id: propertyIds[field])
    }

    /// Writes an optional enum property as its raw value, or nil.
    @inlinable
    public mutating func write<V: RawRepresentable>(_ value: V?, field: Int) where V.RawValue: PersistableValue {
        value.map(\.rawValue)._strataWrite(to: &self, id: propertyIds[field])
    }

    /// Writes any other `Codable` property as its ``CompactValue`` (SPEC.md §11.3). Disfavored:
    /// the scalars and enums, Codable too, keep their own encodings.
    @_disfavoredOverload
    public mutating func write<V: Encodable>(_ value: V, field: Int) {
        let id = propertyIds[field]
        do {
            let encoded = try CompactValueEncoder.encode(value).encoded()
            appendTag(id: id, wire: .lengthDelimited)
            encoded.withUnsafeBytes { appendLengthDelimited($0) }
        } catch {
            failure = failure ?? "\(error)"
            appendTag(id: id, wire: .null)
        }
    }

    /// Writes an optional `Codable` property, nil as null.
    @_disfavoredOverload
    public mutating func write<V: Encodable>(_ value: V?, field: Int) {
        guard let value else { return appendTag(id: propertyIds[field], wire: .null) }
        write(value, field: field)
    }

    /// A type Strata cannot store: the compile-time error of the macro's generated code.
    @available(*, unavailable, message: "Strata cannot store this property\'s type: make it Codable, or mark the property @Transient")
    @_disfavoredOverload
    public mutating func write<V>(_ value: V, field: Int) {}

    /// Writes a to-one relation as its target's id, or null.
    public mutating func write<T: Entity>(_ relation: ToOne<T>, field: Int) {
        let id = relation.idToStore
        if id == 0 {
            appendTag(id: propertyIds[field], wire: .null)
        } else {
            appendTag(id: propertyIds[field], wire: .varint)
            appendVarint(id)
        }
    }

    // MARK: primitives for the value conformances

    @inlinable
    mutating func appendVarint(_ value: UInt64) {
        var v = value
        while v >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: v) | 0x80)
            v >>= 7
        }
        bytes.append(UInt8(truncatingIfNeeded: v))
    }

    @inlinable
    public mutating func appendTag(id: UInt32, wire: WireType) {
        appendVarint(UInt64(id) << 3 | UInt64(wire.rawValue))
    }

    @inlinable
    mutating func appendFixed32(_ value: UInt32) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    @inlinable
    mutating func appendFixed64(_ value: UInt64) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    @inlinable
    mutating func appendLengthDelimited(_ raw: UnsafeRawBufferPointer) {
        appendVarint(UInt64(raw.count))
        bytes.append(contentsOf: raw)
    }
}
